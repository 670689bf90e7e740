"""The seed's refund flow (section 9), recorded and replayed: every mismatch type."""

from __future__ import annotations

import json

import pytest

from tether import Decision, FunctionModel, ModelRequest, RunConfig, ScriptedModel, run_agent
from tether.events import TRACE_VERSION
from tether.replay import (
    Cassette,
    ContainsAll,
    ModelRequestMismatch,
    Replayer,
    SemanticOutputMismatch,
    TerminalStateMismatch,
    ToolArgumentsMismatch,
    ToolCallCountMismatch,
    ToolNameMismatch,
    record_run,
)

MESSAGE = "请帮我退掉订单 A100"


async def recorded(tmp, refund_world, refund_model, **kw) -> Cassette:
    result, cassette = await record_run(refund_model(), refund_world.tools, message=MESSAGE, case_id="refund-A100", **kw)
    assert result.status == "completed"
    return Cassette.load(cassette.save(tmp / "refund.json"))


async def test_strict_replay_of_the_refund_flow_is_offline_and_complete(cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model)
    assert [r.step for r in cassette.recorded_requests()] == [1, 2, 3, 4]
    assert [(c.step, c.tool) for c in cassette.recorded_calls()] == [
        (1, "get_order"), (2, "check_refund"), (3, "create_refund")]
    assert cassette.expected.status == "completed" and cassette.expected.tools == [
        "get_order", "check_refund", "create_refund"]
    calls_before = len(refund_world.calls)

    result = await Replayer(cassette).run()

    assert result.status == "completed" and result.reply == "退款已提交，退款单号为 R900。"
    assert len(refund_world.calls) == calls_before          # no tool ran: answers came from the cassette
    assert [c.arguments for c in result.trajectory.tool_calls()] == [
        {"order_id": "A100"}, {"order_id": "A100"}, {"order_id": "A100", "amount": 19900}]


async def test_amount_199_fails_with_tool_arguments_mismatch_at_step_3(cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model)

    with pytest.raises(ToolArgumentsMismatch) as exc:
        await Replayer(cassette).run(model=refund_model(amount=199))

    m = exc.value
    assert m.step == 3
    assert m.expected == {"order_id": "A100", "amount": 19900}
    assert m.actual == {"order_id": "A100", "amount": 199}
    text = str(m)
    assert text.startswith("ReplayMismatch.ToolArguments at step 3: create_refund")
    assert "amount: expected 19900, actual 199" in text
    assert "order_id" not in text.splitlines()[1]           # only what differs is listed
    assert m.to_dict()["type"] == "ReplayMismatch.ToolArguments"


async def test_the_mismatch_comes_out_of_run_agent_with_the_trajectory(cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model)
    replayer = Replayer(cassette)
    live = replayer.tracked(refund_model(amount=199))
    with pytest.raises(ToolArgumentsMismatch) as exc:
        await run_agent(live, replayer.toolset(refund_world.tools), message=MESSAGE)
    t = exc.value.trajectory  # type: ignore[attr-defined]
    assert t.status == "error" and t.tool_results()[-1].error_type == "replay_mismatch"


async def test_another_tool_is_a_tool_name_mismatch(cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model)
    model = ScriptedModel([Decision.call("get_order", {"order_id": "A100"}),
                           Decision.call("create_refund", {"order_id": "A100", "amount": 19900}),
                           Decision.final("done")])
    with pytest.raises(ToolNameMismatch) as exc:
        await Replayer(cassette).run(model=model)
    assert exc.value.step == 2
    assert (exc.value.expected, exc.value.actual) == ("check_refund", "create_refund")


async def test_an_extra_call_is_a_call_count_mismatch(cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model)
    script = refund_decisions_plus_one()
    with pytest.raises(ToolCallCountMismatch) as exc:
        await Replayer(cassette).run(model=ScriptedModel(script))
    assert exc.value.step == 4 and (exc.value.expected, exc.value.actual) == (3, 4)
    assert "the recording has only 3" in str(exc.value)


def refund_decisions_plus_one() -> list[Decision]:
    return [Decision.call("get_order", {"order_id": "A100"}), Decision.call("check_refund", {"order_id": "A100"}),
            Decision.call("create_refund", {"order_id": "A100", "amount": 19900}),
            Decision.call("get_order", {"order_id": "A100"}), Decision.final("done")]


async def test_a_missing_call_fails_at_assert_complete(cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model)
    model = ScriptedModel([Decision.call("get_order", {"order_id": "A100"}),
                           Decision.call("check_refund", {"order_id": "A100"}),
                           Decision.final("退款已提交，退款单号为 R900。")])
    with pytest.raises(ToolCallCountMismatch) as exc:
        await Replayer(cassette).run(model=model)
    assert exc.value.step == 3
    assert "1 recorded tool call(s) never made: create_refund at step 3" in str(exc.value)


async def test_a_changed_system_prompt_is_a_model_request_mismatch_with_the_first_differing_message(
        cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model,
                              config=RunConfig(system_prompt="你是退款助手。金额单位为分。"))
    with pytest.raises(ModelRequestMismatch) as exc:
        await Replayer(cassette).run(config=RunConfig(system_prompt="你是退款助手。金额单位为元。"))
    m = exc.value
    assert m.step == 1
    assert m.expected["role"] == "system" and m.actual["content"].endswith("元。")
    assert "message 1 (role system) differs" in m.detail
    assert 'first difference at $.messages[0].content at char 12: expected "你是退款助手。金额单位为分。", actual "你是退款助手。金额单位为元。"' in m.detail
    assert "canon 'default'" in m.rule and "no fields dropped" in m.rule


async def test_the_replay_model_fails_loudly_when_the_recording_is_exhausted(cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model)
    replayer = Replayer(cassette)
    for _ in range(4):
        replayer.state.model_used.append(len(replayer.state.model_used))
    with pytest.raises(ModelRequestMismatch) as exc:
        await replayer.model.request(ModelRequest(messages=[], step=5))
    assert exc.value.step == 5 and "beyond the recording (4 recorded)" in str(exc.value)


async def test_a_different_ending_is_a_terminal_state_mismatch(cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model)
    model = ScriptedModel([*refund_decisions_plus_one()[:3], Decision.ask("还需要别的帮助吗？")])
    with pytest.raises(TerminalStateMismatch) as exc:
        await Replayer(cassette).run(model=model)
    assert (exc.value.expected, exc.value.actual) == ("completed", "awaiting_user")
    assert exc.value.step == 4


async def test_semantic_checks_on_the_final_reply(cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model)
    reworded = ScriptedModel([*refund_decisions_plus_one()[:3], Decision.final("已为您提交退款申请。")])
    with pytest.raises(SemanticOutputMismatch) as exc:
        await Replayer(cassette).run(model=reworded, semantic=ContainsAll(["退款", "R900"]))
    assert "lacks 1 of 2 required phrase(s): 'R900'" in str(exc.value)
    assert exc.value.rule == "reply contains all of: '退款', 'R900'"

    ok = ScriptedModel([*refund_decisions_plus_one()[:3], Decision.final("退款单 R900 已提交。")])
    result = await Replayer(cassette).run(model=ok, semantic=lambda reply: "R900" in reply)
    assert result.status == "completed"


async def test_loose_replay_matches_tools_by_name_and_key_arguments_in_any_order(cassette_dir, refund_world,
                                                                                 refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model)

    def agent(request: ModelRequest) -> Decision:   # the same calls, other order, an extra harmless argument
        done = [m for m in request.messages if m.role == "tool"]
        plan = [("check_refund", {"order_id": "A100"}), ("get_order", {"order_id": "A100"}),
                ("create_refund", {"order_id": "A100", "amount": 19900})]
        if len(done) < len(plan):
            return Decision.call(*plan[len(done)])
        return Decision.final("退款已提交，退款单号为 R900。")

    result = await Replayer(cassette, match="loose").run(model=FunctionModel(agent))
    assert result.status == "completed" and result.trajectory.tool_order()[0] == "check_refund"

    def wrong_amount(request: ModelRequest) -> Decision:
        done = sum(1 for m in request.messages if m.role == "tool")
        return Decision.call("create_refund", {"order_id": "A100", "amount": 199}) if done == 0 else Decision.final("x")

    with pytest.raises(ToolArgumentsMismatch) as exc:
        await Replayer(cassette, match="loose", key_args={"create_refund": ["amount"]}).run(
            model=FunctionModel(wrong_amount))
    assert exc.value.expected == {"amount": 19900} and exc.value.actual == {"amount": 199}
    assert "key arguments amount" in exc.value.rule


async def test_the_cassette_is_readable_versioned_json(cassette_dir, refund_world, refund_model):
    cassette = await recorded(cassette_dir, refund_world, refund_model, config=RunConfig(system_prompt="你是退款助手。"))
    text = (cassette_dir / "refund.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    assert doc["format"] == "tether.cassette" and doc["version"] == 2
    assert "请帮我退掉订单 A100" in text and "\\u" not in text          # UTF-8 as is
    assert text.startswith("{\n  \"format\"")                          # indented header
    assert set(doc) == {"format", "version", "recorded_at", "environment", "settings", "versions", "canon",
                        "redaction", "expected", "events"}
    assert cassette.case_id == "refund-A100" and cassette.input.message == MESSAGE
    assert set(doc["environment"]) == {"timezone", "now", "seed"}
    assert doc["settings"] == {"system_prompt": "你是退款助手。", "max_steps": 30, "guards": "off",
                               "simulated_user": False}
    v = doc["versions"]
    assert v["model"] == "refund-agent" and len(v["prompt_hash"]) == 16 and len(v["tool_schema_hash"]) == 16
    assert v["code_version"]
    assert doc["redaction"]["name"] == "tether.default" and doc["redaction"]["version"] == 2
    assert doc["canon"] == {"name": "default", "whitespace": "trim", "drop": []}
    assert doc["expected"]["status"] == "completed" and doc["expected"]["reply"] == "退款已提交，退款单号为 R900。"

    # the events are the run's own record (trace format v2), one per line
    events = doc["events"]
    lines = text.splitlines()
    assert sum(1 for line in lines if line.startswith('    {"seq": ')) == len(events)
    assert events[0]["type"] == "run_started" and events[0]["version"] == TRACE_VERSION and events[0]["kind"] == "cassette"
    assert [s["name"] for s in events[0]["tool_specs"]] == ["get_order", "check_refund", "create_refund"]
    result = next(e for e in events if e["type"] == "tool_result")
    assert {k: result[k] for k in ("step", "tool", "ok", "data", "source")} == {
        "step": 1, "tool": "get_order", "ok": True, "source": "tool",
        "data": {"order_id": "A100", "user_id": "U123", "status": "paid", "total_amount": 19900}}
    requests = [e for e in events if e["type"] == "model_request"]
    assert requests[1]["keep"] == 2 and [m["role"] for m in requests[1]["messages"]] == ["assistant", "tool"]
    assert [len(r.messages) for r in cassette.recorded_requests()] == [2, 4, 6, 8]   # rebuilt from the deltas


async def test_a_version_1_cassette_is_refused_with_a_way_out(cassette_dir):
    old = cassette_dir / "v1.json"
    old.write_text(json.dumps({"format": "tether.cassette", "version": 1, "interactions": [], "events": []}),
                   encoding="utf-8")
    with pytest.raises(Exception, match=r"v1.json \[version\]: cassette version 1 .* re-record it: "
                                        r"pytest --tether-record-mode=all"):
        Cassette.load(old)


async def test_a_replay_is_a_new_run_written_to_the_store(cassette_dir, refund_world, refund_model, tmp_path):
    from tether.store import SQLiteStore
    from tether.store.export import load_run

    store = SQLiteStore(tmp_path / "runs.db")
    result, cassette = await record_run(refund_model(), refund_world.tools, message=MESSAGE,
                                        config=RunConfig(store=store))
    assert [e.model_dump(mode="json") for e in cassette.events] == store.events(result.run_id)
    loaded = Cassette.load(cassette.save(cassette_dir / "stored.json"))

    first = await Replayer(loaded, store=store).run()
    second = await Replayer(loaded, store=store).run()

    ids = {result.run_id, first.run_id, second.run_id}
    assert len(ids) == 3                                           # every replay is a run of its own
    runs = {r["run_id"]: r for r in store.list_runs()}
    assert {runs[i]["kind"] for i in ids} == {"cassette", "replay"}
    assert runs[first.run_id]["kind"] == "replay" and runs[first.run_id]["status"] == "completed"
    replayed = load_run(store, first.run_id)
    assert replayed.started.meta["replay_of"] == result.run_id
    assert replayed.tool_order() == ["get_order", "check_refund", "create_refund"]


async def test_a_departure_is_stored_as_an_aborted_replay(cassette_dir, refund_world, refund_model, tmp_path):
    from tether.store import SQLiteStore

    store = SQLiteStore(tmp_path / "runs.db")
    cassette = await recorded(cassette_dir, refund_world, refund_model)
    with pytest.raises(ToolArgumentsMismatch) as exc:
        await Replayer(cassette, store=store).run(model=refund_model(amount=199))
    run_id = exc.value.trajectory.started.run_id  # type: ignore[attr-defined]
    run = store.get_run(run_id)
    assert (run["kind"], run["status"], run["error_kind"]) == ("replay", "error", "aborted")


async def test_results_that_never_reached_a_tool_are_not_served_from_the_cassette(cassette_dir, refund_world):
    """An unknown tool (the runner refuses it) is answered by the live run loop again in replay;
    only results that reached a tool are served, a second intended refund included (it executed)."""
    model = ScriptedModel([
        Decision.call("get_order", {"order_id": "A100"}),
        Decision.call("cancel_order", {"order_id": "A100"}),                    # no such tool
        Decision.call("create_refund", {"order_id": "A100", "amount": 19900}),
        Decision.call("create_refund", {"order_id": "A100", "amount": 19900}),  # a second, intended refund
        Decision.final("退款已提交，退款单号为 R900。"),
    ], name="refund-agent")
    _, cassette = await record_run(model, refund_world.tools, message=MESSAGE)
    cassette = Cassette.load(cassette.save(cassette_dir / "sources.json"))
    outcomes = [r.outcome.value for r in cassette.trajectory().tool_results()]
    assert outcomes == ["executed", "refused", "executed", "executed"]
    assert [c.tool for c in cassette.recorded_calls()] == ["get_order", "create_refund", "create_refund"]

    result = await Replayer(cassette).run()
    assert [r.outcome.value for r in result.trajectory.tool_results()] == outcomes
    assert len(refund_world.refunds) == 2                                     # only the recording refunded
