from typing import Any

import pytest

from tether import Decision, ScriptedModel, Tool, ToolResult, UsageError, run_agent_sync
from tether.replay import ToolArgumentsMismatch, ToolCallCountMismatch
from tether.tools.doubles import Call, Fake, RecordingMock, RefundFake, Responses, Stub, args_match, fake_tool
from tether.tools.faults import FaultLayer, ResponseLost, Timeout


# -- Stub -------------------------------------------------------------------------
async def test_stub_answers_values_results_faults_and_callables():
    stub = Stub({
        "get_order": {"order_id": "A100", "status": "paid"},
        "check_refund": ToolResult.failure("nope", "rejected"),
        "slow": Timeout(seconds=2),
        "echo": lambda text: {"echo": text},
    })
    ts = stub.toolset()
    assert (await ts.call("get_order", {"order_id": "A100"})).data == {"order_id": "A100", "status": "paid"}
    assert (await ts.call("check_refund", {})).error_type == "rejected"
    assert (await ts.call("slow", {})).error == "slow timed out after 2s"
    assert (await ts.call("echo", {"text": "hi"})).data == {"echo": "hi"}
    assert stub.calls[0] == ("get_order", {"order_id": "A100"})
    stub.assert_exhausted()   # single answers are reusable; nothing to account for


async def test_stub_sequence_is_strict():
    stub = Stub({"check_refund": Responses(Timeout(), {"eligible": True})})
    ts = stub.toolset()
    assert (await ts.call("check_refund", {"order_id": "A100"})).error_type == "timeout"
    with pytest.raises(ToolCallCountMismatch, match="1 response\\(s\\) never used"):
        stub.assert_exhausted()
    assert (await ts.call("check_refund", {"order_id": "A100"})).data == {"eligible": True}
    stub.assert_exhausted()
    extra = await ts.call("check_refund", {"order_id": "A100"})
    assert (extra.ok, extra.error_type) == (False, "stub_exhausted")
    assert "call 3 to check_refund but only 2 response(s)" in extra.error
    with pytest.raises(ToolCallCountMismatch) as exc:
        stub.assert_exhausted()
    assert (exc.value.expected, exc.value.actual) == (2, 3)


async def test_stub_repeat_last_is_explicit():
    ts = Stub({"poll": Responses({"s": "running"}, {"s": "done"}, repeat_last=True)}).toolset()
    got = [(await ts.call("poll", {})).data["s"] for _ in range(4)]
    assert got == ["running", "done", "done", "done"]


async def test_stub_keeps_real_tool_schemas():
    real = Tool("create_refund", "退款", {"type": "object", "properties": {"amount": {"type": "integer"}},
                                         "required": ["amount"]}, side_effect=True)
    ts = Stub({"create_refund": {"refund_id": "R1"}}, tools=[real]).toolset()
    assert ts.specs()[0].side_effect and ts.specs()[0].description == "退款"
    bad = await ts.call("create_refund", {"amount": "lots"})
    assert bad.error_type == "invalid_arguments"
    with pytest.raises(UsageError, match="no canned response for tool\\(s\\) create_refund"):
        Stub({}, tools=[real])


# -- Fakes -----------------------------------------------------------------------------
async def test_refund_fake_same_key_same_refund_new_key_new_refund():
    fake = RefundFake()
    ts = fake.toolset()
    assert ts.names() == ["get_order", "check_refund", "create_refund"]
    assert ts.tools["create_refund"].side_effect
    args = {"order_id": "A100", "amount": 19900, "idempotency_key": "K1"}
    first = await ts.call("create_refund", args)
    again = await ts.call("create_refund", args)
    assert first.data == again.data and first.data["refund_id"] == "R900"
    assert len(fake.refunds) == 1
    other = await ts.call("create_refund", {**args, "idempotency_key": "K2"})
    assert other.data["refund_id"] == "R901" and len(fake.refunds) == 2
    conflict = await ts.call("create_refund", {**args, "amount": 1})
    assert conflict.error_type == "idempotency_conflict"
    assert len(fake.calls) == 4 and fake.calls[0] == ("create_refund", args)


async def test_refund_fake_orders_and_eligibility():
    fake = RefundFake(ineligible={"A100": "past_refund_window"})
    ts = fake.toolset()
    assert (await ts.call("get_order", {"order_id": "NOPE"})).data == {"found": False}
    assert (await ts.call("get_order", {"order_id": "A100"})).data["total_amount"] == 19900
    check = await ts.call("check_refund", {"order_id": "A100"})
    assert check.data == {"order_id": "A100", "eligible": False, "reason": "past_refund_window"}
    fake2 = RefundFake()
    ts2 = fake2.toolset()
    await ts2.call("create_refund", {"order_id": "A100", "amount": 100})
    assert (await ts2.call("check_refund", {"order_id": "A100"})).data["reason"] == "already_refunded"
    assert (await ts2.call("create_refund", {"order_id": "A100", "amount": 0})).error_type == "invalid_amount"
    assert fake2.find_refund("k", {"order_id": "A100", "amount": 100}).data["refund_id"] == "R900"
    assert fake2.find_refund("k", {"order_id": "A100", "amount": 5}) is None


class Counter(Fake):
    """A fake of your own: state on self, tools marked with fake_tool."""

    def __init__(self) -> None:
        super().__init__()
        self.value = 0

    @fake_tool("add to the counter", side_effect=True)
    def add(self, n: int) -> dict[str, Any]:
        self.value += n
        return {"value": self.value}

    def helper(self) -> None:   # not a tool
        pass


async def test_write_your_own_fake():
    c = Counter()
    ts = c.toolset()
    assert ts.names() == ["add"]
    assert ts.specs()[0].parameters["required"] == ["n"]
    await ts.call("add", {"n": 2})
    await ts.call("add", {"n": 3})
    assert c.value == 5 and c.calls == [("add", {"n": 2}), ("add", {"n": 3})]


# -- RecordingMock ------------------------------------------------------------------------
async def test_recording_mock_sees_what_the_agent_saw_even_faulted_calls():
    fake = RefundFake()
    mock = RecordingMock(fake.toolset().with_layer(FaultLayer({"check_refund": Timeout()})))
    ts = mock.toolset()
    await ts.call("check_refund", {"order_id": "A100"})
    await ts.call("get_order", {"order_id": "A100"})
    assert mock.calls == [Call("check_refund", {"order_id": "A100"}), Call("get_order", {"order_id": "A100"})]
    assert mock.results[0].error_type == "timeout"
    assert fake.calls == [("get_order", {"order_id": "A100"})]   # the timed-out call never reached the fake


async def test_recording_mock_assertions():
    mock = RecordingMock({"create_refund": {"refund_id": "R900"}, "get_order": {"found": True}})
    ts = mock.toolset()
    await ts.call("create_refund", {"order_id": "A100", "amount": 199})
    mock.assert_called("create_refund")
    mock.assert_called("create_refund", times=1, with_args={"order_id": "A100"}, mode="superset")
    mock.assert_not_called("get_order")
    assert mock.calls_to("create_refund") == [{"order_id": "A100", "amount": 199}]

    with pytest.raises(ToolArgumentsMismatch) as exc:
        mock.assert_called("create_refund", with_args={"order_id": "A100", "amount": 19900})
    assert exc.value.expected["amount"] == 19900 and exc.value.actual["amount"] == 199
    assert "amount: expected 19900, actual 199" in str(exc.value)
    with pytest.raises(ToolCallCountMismatch, match="get_order was never called"):
        mock.assert_called("get_order")
    with pytest.raises(ToolCallCountMismatch) as exc:
        mock.assert_called("create_refund", times=2)
    assert (exc.value.expected, exc.value.actual) == (2, 1)
    with pytest.raises(ToolCallCountMismatch, match="must not be called"):
        mock.assert_not_called("create_refund")


def test_args_match_modes_follow_agentevals():
    actual = {"order_id": "A100", "amount": 199}
    assert args_match(actual, {"order_id": "A100", "amount": 199}, "exact")
    assert args_match(actual, {"order_id": "A100"}, "superset")          # at least these
    assert not args_match(actual, {"order_id": "A100"}, "subset")        # amount is not in expected
    assert args_match({"order_id": "A100"}, actual, "subset")            # only expected keys
    assert args_match(actual, {"x": 1}, "ignore")
    with pytest.raises(UsageError, match="unknown argument match mode"):
        args_match(actual, {}, "fuzzy")  # type: ignore[arg-type]


def test_response_lost_then_same_key_through_the_run_loop_makes_one_refund():
    """The loop's side-effect ledger asks RefundFake.find_refund after the lost
    response: the refund is found, the agent gets it, nothing is sent twice."""
    fake = RefundFake()
    refund = {"order_id": "A100", "amount": 19900, "idempotency_key": "K1"}
    model = ScriptedModel([Decision.call("create_refund", refund), Decision.call("create_refund", refund),
                           Decision.final("退款已提交")])
    tools = fake.toolset().with_layer(FaultLayer({"create_refund": ResponseLost()}))
    result = run_agent_sync(model, tools, message="退款")
    lost, answered = result.trajectory.tool_results("create_refund")
    assert lost.error_type == "timeout" and answered.ok and answered.data["refund_id"] == "R900"
    assert len(fake.refunds) == 1
