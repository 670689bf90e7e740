import pytest
from pydantic import ValidationError

from tether import Decision, ScriptedModel, ToolResult, ToolSet, run_agent_sync, tool
from tether.tools.doubles import RefundFake
from tether.tools.faults import (
    BaseFault,
    EmptyResult,
    FailFirst,
    FaultLayer,
    FaultRule,
    FaultSequence,
    Latency,
    OnCalls,
    PartialResult,
    PermissionDenied,
    RateLimited,
    ResponseLost,
    Timeout,
    UnknownError,
    parse_fault,
    with_faults,
)

writes: list[dict] = []


@tool(description="search")
def search(q: str):
    return {"hits": [{"title": q, "price": 10}, {"title": q + "2", "price": 20}], "total": 2}


@tool(description="write", side_effect=True)
def write(value: str):
    writes.append({"value": value})
    return {"written": value}


def tools(*layers) -> ToolSet:
    return ToolSet([search, write], layers)


async def test_each_fault_gives_the_documented_envelope():
    cases = [
        (Timeout(seconds=5), dict(ok=False, error_type="timeout", error="search timed out after 5s")),
        (RateLimited(retry_after=2), dict(ok=False, error_type="rate_limited", data={"retry_after": 2.0})),
        (EmptyResult(), dict(ok=True, data={})),
        (EmptyResult(value=[]), dict(ok=True, data=[])),
        (PermissionDenied(), dict(ok=False, error_type="permission_denied")),
        (UnknownError(message="boom"), dict(ok=False, error_type="unknown_error", error="500 search: boom")),
    ]
    for fault, want in cases:
        result = await tools(FaultLayer({"search": fault})).call("search", {"q": "x"})
        got = {k: getattr(result, k) for k in want}
        assert got == want, fault
        assert result.source == "fault"


async def test_partial_result_nulls_fields_in_dicts_and_lists():
    layer = FaultLayer({"search": PartialResult(fields=["total", "hits.price"])})
    result = await tools(layer).call("search", {"q": "x"})
    assert result.ok
    assert result.data == {"hits": [{"title": "x", "price": None}, {"title": "x2", "price": None}], "total": None}


async def test_latency_uses_the_injected_sleeper_and_still_answers():
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    layer = FaultLayer({"*": Latency(seconds=3.5)}, sleep=fake_sleep)
    result = await tools(layer).call("search", {"q": "x"})
    assert result.ok and result.data["total"] == 2
    assert slept == [3.5]


async def test_response_lost_runs_the_tool_but_answers_like_a_timeout():
    writes.clear()
    lost = await tools(FaultLayer({"write": ResponseLost()})).call("write", {"value": "v"})
    timed_out = await tools(FaultLayer({"write": Timeout()})).call("write", {"value": "v"})
    assert writes == [{"value": "v"}]               # the side effect happened once (timeout never ran it)
    assert lost.for_model() == timed_out.for_model()  # the agent cannot tell the two apart


async def test_schedules_count_calls_per_tool():
    layer = FaultLayer({"search": FailFirst(2, Timeout()), "write": OnCalls([2], UnknownError())})
    ts = tools(layer)
    got = [(await ts.call("search", {"q": "x"})).ok for _ in range(3)]
    assert got == [False, False, True]
    got = [(await ts.call("write", {"value": "v"})).ok for _ in range(3)]
    assert got == [True, False, True]
    assert [(i.tool, i.call, i.fault) for i in layer.injected] == [
        ("search", 1, "timeout"), ("search", 2, "timeout"), ("write", 2, "unknown_error")]


async def test_explicit_sequence_then_pass_through():
    layer = FaultLayer({"search": FaultSequence(RateLimited(), None, EmptyResult(value=[]))})
    ts = tools(layer)
    results = [await ts.call("search", {"q": "x"}) for _ in range(4)]
    assert [r.error_type for r in results] == ["rate_limited", None, None, None]
    assert [r.data for r in results][2] == []
    assert results[3].data["total"] == 2


async def test_faults_as_data():
    layer = FaultLayer.from_data([
        {"tool": "search", "fault": "timeout", "first": 1},
        {"tool": "write", "fault": {"type": "rate_limited", "retry_after": 7}, "calls": [1, 3]},
        {"tool": "search", "sequence": [None, {"type": "partial_result", "fields": ["total"]}]},
    ])
    ts = tools(layer)
    s = [await ts.call("search", {"q": "x"}) for _ in range(3)]
    assert [r.error_type for r in s] == ["timeout", None, None]
    assert s[1].data["total"] is None and s[2].data["total"] == 2
    w = [await ts.call("write", {"value": "v"}) for _ in range(3)]
    assert [r.ok for r in w] == [False, True, False]
    assert w[0].data == {"retry_after": 7.0}


def test_fault_data_is_validated():
    with pytest.raises(ValidationError, match="exactly one of 'fault' or 'sequence'"):
        FaultRule.model_validate({"tool": "x"})
    with pytest.raises(ValidationError, match="not both"):
        FaultRule.model_validate({"tool": "x", "fault": "timeout", "calls": [1], "first": 1})
    with pytest.raises(ValidationError):
        FaultRule.model_validate({"tool": "x", "fault": "gremlins"})
    with pytest.raises(ValidationError):
        FaultRule.model_validate({"tool": "x", "fault": "timeout", "calls": [0]})
    assert parse_fault("timeout") == Timeout()
    assert parse_fault({"type": "latency", "seconds": 1}) == Latency(seconds=1)


def test_faults_reach_any_agent_through_the_run_loop():
    fake = RefundFake()
    model = ScriptedModel([
        Decision.call("get_order", {"order_id": "A100"}),
        Decision.call("get_order", {"order_id": "A100"}),
        Decision.final("ok"),
    ])
    result = run_agent_sync(model, with_faults(fake.toolset(), {"get_order": FailFirst(1, RateLimited())}),
                            message="go")
    first, second = result.trajectory.tool_results()
    assert (first.ok, first.error_type, first.source) == (False, "rate_limited", "fault")
    assert second.ok and second.data["found"]
    assert len(fake.calls) == 1   # the rate-limited call never reached the system


class Garbled(BaseFault):
    """A fault of your own: the tool runs, its answer comes back as text."""

    async def apply(self, name, arguments, call_next, *, sleep):
        result = await call_next(name, arguments)
        return ToolResult.success(str(result.data)[:10], source="fault")


async def test_your_own_fault_and_reset():
    layer = FaultLayer({"search": OnCalls([1], Garbled())})
    ts = tools(layer)
    assert (await ts.call("search", {"q": "x"})).data == "{'hits': ["
    assert (await ts.call("search", {"q": "x"})).data["total"] == 2
    assert layer.injected[0].fault == "Garbled"
    layer.reset()
    assert layer.injected == [] and (await ts.call("search", {"q": "x"})).data == "{'hits': ["
