import json

import pytest

from tether import Decision, ScriptedModel, TerminalStatus, ToolSet, Trajectory, run_agent_sync, tool
from tether.errors import CaseFileError
from tether.events import EVENT_ADAPTER, TRACE_VERSION, Outcome, RunStarted, ToolCallEvent, ToolResultEvent, UserMessage, events_digest


@tool(description="查询订单")
def get_order(order_id: str):
    return {"order_id": order_id, "status": "已支付"}


def _run():
    model = ScriptedModel([
        Decision.call("get_order", {"order_id": "A100"}),
        Decision.call("get_order", {"order_id": "A100"}),
        Decision.final("订单 A100 已支付"),
    ])
    return run_agent_sync(model, ToolSet([get_order]), message="查一下订单 A100")


def test_trace_round_trips_as_utf8_jsonl(tmp_path):
    result = _run()
    path = result.trajectory.save(tmp_path / "t.jsonl")
    text = path.read_text(encoding="utf-8")
    assert "查一下订单" in text and "\\u" not in text
    first = json.loads(text.splitlines()[0])
    assert first["type"] == "run_started" and first["version"] == TRACE_VERSION
    again = Trajectory.load(path)
    assert [e.model_dump() for e in again] == [e.model_dump() for e in result.trajectory]


def test_trajectory_helpers():
    t = _run().trajectory
    assert t.status == TerminalStatus.COMPLETED
    assert t.final_reply == "订单 A100 已支付"
    assert t.tool_order() == ["get_order", "get_order"]
    assert t.max_identical_calls("get_order") == 2
    assert t.max_identical_calls("other") == 0
    assert [r.ok for r in t.tool_results()] == [True, True]
    assert isinstance(t.started, RunStarted)
    assert [e.seq for e in t] == list(range(len(t)))


def test_identical_calls_ignore_key_order():
    a = ToolCallEvent(step=1, call_id="1", tool="t", arguments={"a": 1, "b": 2})
    b = ToolCallEvent(step=2, call_id="2", tool="t", arguments={"b": 2, "a": 1})
    assert a.signature == b.signature
    assert Trajectory([a, b]).max_identical_calls() == 2


def test_bad_trace_lines_are_reported_with_line_numbers():
    good = json.dumps(UserMessage(content="hi").model_dump(mode="json"))
    text = good + "\n{not json\n" + json.dumps({"type": "nope"}) + "\n"
    with pytest.raises(CaseFileError) as exc:
        Trajectory.from_jsonl(text, path="x.jsonl")
    lines = [loc.line for loc, _ in exc.value.problems]
    assert lines == [2, 3]
    assert "x.jsonl:2" in str(exc.value)


@pytest.mark.parametrize("source,error_type,outcome", [
    ("tool", None, "executed"), ("world", "not_found", "executed"), ("tool", "exception", "failed"),
    ("mock", None, "mocked"), ("intercept", "timeout", "intercepted"), ("fault", "timeout", "injected"),
    ("guard", "guard_blocked", "blocked"), ("approval", "rejected", "held"), ("ledger", None, "ledger"),
    ("ledger", "outcome_unknown", "held"), ("runner", "invalid_arguments", "refused"),
    ("runner", "exception", "failed"), ("replay", "replay_mismatch", "refused"), ("import", None, "executed"),
])
def test_a_format_2_result_gets_its_outcome_from_its_source_and_is_written_back_unchanged(source, error_type, outcome):
    old = {"seq": 3, "at_ms": 1.0, "type": "tool_result", "step": 1, "call_id": "c1", "tool": "t", "ok": error_type is None,
           "data": None, "error": None if error_type is None else "x", "error_type": error_type, "source": source,
           "duration_ms": 0.0}
    event = EVENT_ADAPTER.validate_python(old)
    assert event.outcome == Outcome(outcome)
    assert event.executed == (outcome in ("executed", "failed", "mocked", "intercepted", "injected"))
    assert event.model_dump(mode="json") == old                       # the stored record, byte for byte
    assert events_digest([event.model_dump(mode="json")]) == events_digest([old])


def test_a_format_3_result_carries_its_outcome():
    event = ToolResultEvent(step=1, call_id="c1", tool="t", ok=True, source="ledger", outcome=Outcome.LEDGER)
    dumped = event.model_dump(mode="json")
    assert dumped["outcome"] == "ledger" and Outcome.LEDGER.label == "answered from the ledger"
    assert EVENT_ADAPTER.validate_python(dumped).model_dump(mode="json") == dumped


def test_append_numbers_events_as_an_assignment_would():
    """append stores ``seq`` directly when the field is plain; the event is the same
    as one numbered by assignment (value, fields set, dump), and a subclass that
    validates assignments still gets its validation."""
    import pydantic
    from pydantic import ConfigDict

    from tether.events import ToolCallEvent, ToolResultEvent, Trajectory

    t = Trajectory()
    appended = [t.append(ToolCallEvent(step=0, call_id="c0", tool="search", arguments={"q": "退款"})),
                t.append(ToolResultEvent(step=0, call_id="c0", tool="search", ok=True, data={"n": 1}))]
    assigned = [ToolCallEvent(step=0, call_id="c0", tool="search", arguments={"q": "退款"}),
                ToolResultEvent(step=0, call_id="c0", tool="search", ok=True, data={"n": 1})]
    for i, e in enumerate(assigned):
        e.seq = i
    for a, b in zip(appended, assigned):
        assert a.seq == b.seq
        assert a.model_fields_set == b.model_fields_set and "seq" in a.model_fields_set
        assert a.model_dump(exclude_unset=True) == b.model_dump(exclude_unset=True)
        assert a == b

    class Strict(ToolCallEvent):
        model_config = ConfigDict(validate_assignment=True)

        @pydantic.field_validator("seq")
        @classmethod
        def _odd_only(cls, v: int) -> int:
            if v % 2 == 0:
                raise ValueError("even")
            return v

    t2 = Trajectory([assigned[0]])
    t2.append(Strict(step=1, call_id="c1", tool="search"))   # seq 1: validated, accepted
    with pytest.raises(pydantic.ValidationError):
        t2.append(Strict(step=2, call_id="c2", tool="search"))
