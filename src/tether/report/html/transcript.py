"""One run as the transcript page shows it: steps in order, each with what the
model was sent (rebuilt with :meth:`Trajectory.requests`), what it decided,
the tool calls with their results, guard trips, approvals and the ledger;
per-step tokens, cost and latency for the timeline."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ...events import (
    AgentMessage,
    ApprovalEvent,
    GuardTripped,
    ModelDecisionEvent,
    ModelRequestEvent,
    RunFinished,
    RunResumed,
    RunStarted,
    SideEffectEvent,
    ToolCallEvent,
    Trajectory,
    UserMessage,
)
from ...messages import Message

FOLD_CHARS = 600          # tool results longer than this are folded
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def language(texts: list[str]) -> str:
    """``zh-CN`` when the run's own words are Chinese, else ``en``."""
    return "zh-CN" if any(CJK.search(t or "") for t in texts) else "en"


def pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    compact = json.dumps(value, ensure_ascii=False, default=str)
    return compact if len(compact) <= 100 else json.dumps(value, ensure_ascii=False, indent=2, default=str)


@dataclass
class Item:
    kind: str                  # user / agent / request / decision / tool / guard / approval / effect / resumed / finished
    step: int
    at_ms: float
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """What search matches."""
        return json.dumps(self.data, ensure_ascii=False, default=str).lower()


@dataclass
class StepRow:
    step: int
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    latency_ms: float = 0.0
    tool_ms: float = 0.0
    start_ms: float | None = None
    end_ms: float = 0.0
    trips: int = 0


@dataclass
class Transcript:
    run_id: str
    model: str
    case_id: str | None
    kind: str
    guards: str
    status: str | None
    reply: str
    lang: str
    items: list[Item]
    steps: list[StepRow]
    totals: dict[str, Any]
    requests: list[dict[str, Any]]      # per request: role, keep, new messages (the page rebuilds each full list)
    spans: list[dict[str, Any]]         # timeline bars: model and tool spans, trips as marks
    error: str | None = None
    error_kind: str | None = None
    reason: str = ""


def _msg(m: Message) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        d["tool_calls"] = [{"name": c.name, "id": c.id, "arguments": pretty(c.arguments)} for c in m.tool_calls]
    if m.tool_call_id:
        d["tool_call_id"] = m.tool_call_id
    if m.name:
        d["name"] = m.name
    return d


def build(t: Trajectory) -> Transcript:
    started = t.started or RunStarted(run_id="?", model="?")
    finished = t.finished
    full = {id(ev): msgs for ev, msgs in t.requests(role=None)}
    results = {id(c): r for c, r in t.calls_with_results()}
    items: list[Item] = []
    steps: dict[int, StepRow] = {}
    spans: list[dict[str, Any]] = []
    requests: list[dict[str, Any]] = []
    open_requests: dict[str, ModelRequestEvent] = {}
    previous_len: dict[str, int] = {}

    def row(step: int) -> StepRow:
        return steps.setdefault(step, StepRow(step))

    for e in t:
        if isinstance(e, UserMessage):
            items.append(Item("user", 0, e.at_ms, {"content": e.content, "source": e.source}))
        elif isinstance(e, AgentMessage):
            items.append(Item("agent", e.step or 0, e.at_ms, {"content": e.content, "kind": e.kind, "source": e.source}))
        elif isinstance(e, ModelRequestEvent):
            msgs = full.get(id(e), list(e.messages))
            dropped = max(0, previous_len.get(e.role, 0) - e.keep)
            previous_len[e.role] = len(msgs)
            index = len(requests)
            requests.append({"role": e.role, "keep": e.keep, "messages": [_msg(m) for m in e.messages]})
            items.append(Item("request", e.step, e.at_ms, {
                "role": e.role, "model": e.model, "count": len(msgs), "new": [_msg(m) for m in e.messages],
                "kept": e.keep, "dropped": dropped, "tools": e.tools, "params": e.params, "index": index}))
            open_requests[e.role] = e
            if e.role == "agent":
                r = row(e.step)
                r.start_ms = e.at_ms if r.start_ms is None else r.start_ms
        elif isinstance(e, ModelDecisionEvent):
            req = open_requests.pop(e.role, None)
            items.append(Item("decision", e.step, e.at_ms, {
                "role": e.role, "kind": str(e.kind), "text": e.text,
                "calls": [{"name": c.name, "arguments": pretty(c.arguments)} for c in e.tool_calls],
                "input_tokens": e.usage.input_tokens, "output_tokens": e.usage.output_tokens,
                "cost": e.usage.cost, "latency_ms": e.latency_ms, "queued_ms": e.queued_ms,
                "truncated": e.truncated, "finish_reason": e.finish_reason}))
            start = req.at_ms if req is not None else max(0.0, e.at_ms - e.latency_ms)
            spans.append({"lane": "model" if e.role == "agent" else e.role, "start": start, "end": e.at_ms,
                          "label": f"step {e.step} · {e.role} · {e.usage.input_tokens}+{e.usage.output_tokens} tok"
                                   f" · {e.latency_ms:.0f} ms"})
            if e.role == "agent":
                r = row(e.step)
                r.input_tokens += e.usage.input_tokens
                r.output_tokens += e.usage.output_tokens
                r.cost += e.usage.cost
                r.latency_ms += e.latency_ms
                r.end_ms = max(r.end_ms, e.at_ms)
        elif isinstance(e, ToolCallEvent):
            res = results.get(id(e))
            data = {"tool": e.tool, "call_id": e.call_id, "arguments": pretty(e.arguments)}
            if res is not None:
                body = pretty(res.data) if res.ok else (res.error or "")
                data.update(ok=res.ok, source=res.source, error_type=res.error_type, result=body,
                            folded=len(body) > FOLD_CHARS, preview=body[:FOLD_CHARS], duration_ms=res.duration_ms)
                spans.append({"lane": "tool", "start": e.at_ms, "end": res.at_ms,
                              "label": f"step {e.step} · {e.tool} · {'ok' if res.ok else 'error'} · "
                                       f"{res.duration_ms:.0f} ms", "ok": res.ok})
                r = row(e.step)
                r.tool_ms += res.duration_ms
                r.end_ms = max(r.end_ms, res.at_ms)
            else:
                data.update(ok=None, result="(no result recorded)", folded=False, preview="(no result recorded)")
            items.append(Item("tool", e.step, e.at_ms, data))
        elif isinstance(e, GuardTripped):
            items.append(Item("guard", e.step, e.at_ms, {"guard": e.guard, "rule": e.rule, "verdict": e.verdict,
                                                         "message": e.message, "numbers": e.numbers}))
            spans.append({"lane": "guard", "start": e.at_ms, "end": e.at_ms, "label": f"{e.name} {e.verdict}",
                          "mark": True})
            row(e.step).trips += 1
        elif isinstance(e, ApprovalEvent):
            items.append(Item("approval", e.step, e.at_ms, {"tool": e.tool, "action": e.action, "by": e.by,
                                                            "reason": e.reason, "id": e.approval_id}))
        elif isinstance(e, SideEffectEvent):
            items.append(Item("effect", e.step, e.at_ms, {"tool": e.tool, "status": e.status, "key": e.key,
                                                          "detail": e.detail}))
        elif isinstance(e, RunResumed):
            items.append(Item("resumed", e.step, e.at_ms, {"checkpoint": e.checkpoint, "phase": e.phase,
                                                           "dropped": e.dropped_events}))
        elif isinstance(e, RunFinished):
            items.append(Item("finished", e.steps, e.at_ms, {"status": str(e.status), "reason": e.reason,
                                                             "error": e.error, "error_kind": e.error_kind}))
    usage = t.usage()
    others = t.usage(role=None)
    texts = [u.content for u in t.user_messages()] + [finished.reply if finished else ""]
    return Transcript(
        run_id=started.run_id, model=started.model, case_id=started.case_id, kind=started.kind, guards=started.guards,
        status=str(finished.status) if finished else None, reply=finished.reply if finished else "",
        lang=language(texts), items=items, steps=[steps[k] for k in sorted(steps)],
        totals={"steps": finished.steps if finished else len(steps), "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens, "cost": usage.cost,
                "other_cost": others.cost - usage.cost, "events": len(t), "trips": len(t.guard_trips()),
                "tool_calls": len(t.tool_calls()), "duration_ms": t.events[-1].at_ms if t.events else 0.0},
        requests=requests, spans=spans, error=finished.error if finished else None,
        error_kind=finished.error_kind if finished else None, reason=finished.reason if finished else "",
    )
