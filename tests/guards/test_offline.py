"""guard-check's engine: a recorded run fed through a guard stack asks the guards
through the same GuardChain as a live run, with the requests as recorded."""

from __future__ import annotations

import json

from tether.evals import load_suite
from tether.evals.runner import run_trial
from tether.events import ModelDecisionEvent, Trajectory
from tether.guards import BaseGuard
from tether.guards.offline import check_trace
from tether.guards.stacks import guard_stack
from tether.models import resolve_model

CASES = {c.id: c for c in load_suite("c4")}


def live_trips(t: Trajectory) -> list[tuple]:
    return [(e.step, e.guard, e.rule, e.verdict) for e in t.guard_trips()]


def offline_trips(trips) -> list[tuple]:
    return [(t.step, t.guard, t.verdict.rule, t.verdict.action) for t in trips if not t.after_stop]


async def test_offline_trips_are_the_live_trips_for_the_same_stack():
    """A run guarded live and the same run (recorded) checked offline trip the same guards, rules and steps."""
    for case, model in (("C4-LD-01", "policy:stubborn"), ("C4-PA-01", "policy:steady"), ("C4-LD-03", "policy:stubborn")):
        _, result = await run_trial(CASES[case], resolve_model(model), guards=guard_stack("on")(), guards_label="on")
        live = live_trips(result.trajectory)
        assert live, case
        replayed = await check_trace(result.trajectory, guard_stack("on")())
        assert offline_trips(replayed) == live, case


async def test_before_model_sees_the_recorded_messages_and_tools():
    seen = []

    class Recorder(BaseGuard):
        name = "recorder"

        def before_model(self, ctx, request):
            seen.append((ctx.step, len(request.messages), [t.name for t in request.tools], request.messages[-1].role))

        def after_model(self, ctx, response):
            seen.append(("after", response.decision.kind, response.usage.input_tokens))

    _, result = await run_trial(CASES["C4-PA-01"], resolve_model("policy:steady"))
    t = result.trajectory
    await check_trace(t, [Recorder()])
    requests = t.requests()
    before = [s for s in seen if s[0] != "after"]
    assert before == [(e.step, e.message_count, e.tools, msgs[-1].role) for e, msgs in requests]
    assert all(n > 0 for _, n, _, _ in before) and all(tools for _, _, tools, _ in before)
    after = [s for s in seen if s[0] == "after"]
    assert after == [("after", d.kind, d.usage.input_tokens) for d in t.of_type(ModelDecisionEvent)]


async def test_a_version_1_trace_still_goes_through_the_guards(tmp_path):
    v1 = [
        {"type": "run_started", "version": 1, "run_id": "old", "model": "legacy", "case_id": "X", "tools": ["search"],
         "guards": "off", "seq": 0, "at_ms": 0.0},
        {"type": "user_message", "content": "找一下", "source": "input", "seq": 1, "at_ms": 0.1},
    ]
    for step in range(1, 5):
        v1 += [
            {"type": "model_request", "step": step, "message_count": 2 * step, "tools": ["search"],
             "request_hash": "h", "seq": 0, "at_ms": step},
            {"type": "model_decision", "step": step, "kind": "tool_calls", "text": "",
             "tool_calls": [{"id": f"c{step}", "name": "search", "arguments": {"q": "鞋"}}],
             "usage": {"input_tokens": 10, "output_tokens": 2, "cost": 0.0}, "seq": 0, "at_ms": step},
            {"type": "tool_call", "step": step, "call_id": f"c{step}", "tool": "search", "arguments": {"q": "鞋"},
             "seq": 0, "at_ms": step},
            {"type": "tool_result", "step": step, "call_id": f"c{step}", "tool": "search", "ok": True,
             "data": {"items": []}, "seq": 0, "at_ms": step},
        ]
    v1.append({"type": "run_finished", "status": "step_limit", "reply": "", "steps": 4, "seq": 0, "at_ms": 9.0})
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in v1)
    t = Trajectory.from_jsonl(text)
    assert t.started.version == 1 and t.requests()[0][1] == []        # loads; no messages were recorded
    trips = await check_trace(t, guard_stack("loop")())
    assert [(x.step, x.verdict.rule, x.verdict.action) for x in trips][:2] == [(3, "identical", "hint"),
                                                                               (4, "identical", "stop")]
