"""Seed 004 sections 9 and 10, rewritten with tether's doubles and assertions.

The same test is walked through in docs/testing.md.
"""

import pytest

from tether import Decision, ScriptedModel, ScriptExhausted, ScriptLeftover, run_agent_sync
from tether.replay import ToolArgumentsMismatch
from tether.testing import (
    assert_call_count,
    assert_precondition,
    assert_reply,
    assert_retry_safe,
    assert_side_effects,
    assert_status,
    assert_tool_sequence,
    efficiency,
)
from tether.tools.doubles import RecordingMock, RefundFake
from tether.tools.faults import FailFirst, FaultLayer, OnCalls, ResponseLost, Timeout

ORDER = {"order_id": "A100"}
REFUND = {"order_id": "A100", "amount": 19900, "idempotency_key": "K1"}
REPLY = "退款已提交，退款单号为 R900。"


def refund_script(amount: int = 19900) -> list[Decision]:
    return [
        Decision.call("get_order", ORDER),
        Decision.call("check_refund", ORDER),
        Decision.call("create_refund", {**REFUND, "amount": amount}),
        Decision.final(REPLY),
    ]


EXPECTED = [("get_order", ORDER), ("check_refund", ORDER), ("create_refund", REFUND)]


# -- section 9: the full offline test ---------------------------------------------------
def test_refund_success():
    model = ScriptedModel(refund_script())
    fake = RefundFake()

    result = run_agent_sync(model, fake.toolset(), message="请帮我退掉订单 A100")

    assert_status(result, "completed")                         # terminal state
    assert result.reply == REPLY                                # the reply under this double
    assert_tool_sequence(result, EXPECTED, args="exact")        # steps, tools and arguments
    assert fake.calls == [("get_order", ORDER), ("check_refund", ORDER), ("create_refund", REFUND)]
    assert_side_effects(fake.refunds, [{"order_id": "A100", "amount": 19900, "status": "submitted"}],
                        what="refunds")                         # state and side effects
    assert_precondition(result, "create_refund", requires="check_refund", same=("order_id",),
                        check=lambda r: r.data["eligible"])
    assert efficiency(result) == 1.0
    model.assert_exhausted()                                    # every scripted decision was used


def test_amount_199_fails_on_the_arguments_at_step_3_even_though_the_reply_is_the_same():
    model = ScriptedModel(refund_script(amount=199))
    fake = RefundFake()
    result = run_agent_sync(model, fake.toolset(), message="请帮我退掉订单 A100")

    assert_status(result, "completed")
    assert result.reply == REPLY            # the final text alone would not notice
    with pytest.raises(ToolArgumentsMismatch) as exc:
        assert_tool_sequence(result, EXPECTED, args="exact")
    err = exc.value
    assert err.step == 3
    assert err.expected == {"order_id": "A100", "amount": 19900, "idempotency_key": "K1"}
    assert err.actual == {"order_id": "A100", "amount": 199, "idempotency_key": "K1"}
    assert str(err) == ("ReplayMismatch.ToolArguments at step 3: create_refund arguments differ\n"
                        "  amount: expected 19900, actual 199\n"
                        "  (compared under: exact)")
    assert err.to_dict()["type"] == "ReplayMismatch.ToolArguments"


def test_one_decision_too_few_fails_naming_the_step():
    model = ScriptedModel(refund_script()[:3], name="refund-script")   # the final answer is missing
    with pytest.raises(ScriptExhausted) as exc:
        run_agent_sync(model, RefundFake().toolset(), message="请帮我退掉订单 A100")
    assert exc.value.step == 4
    assert "request at step 4 but only 3 decision(s) were scripted" in str(exc.value)


def test_a_decision_left_over_fails_at_teardown_naming_the_step():
    model = ScriptedModel([*refund_script(), Decision.final("never asked for")], name="refund-script")
    run_agent_sync(model, RefundFake().toolset(), message="请帮我退掉订单 A100")
    with pytest.raises(ScriptLeftover) as exc:
        model.assert_exhausted()
    assert "1 scripted decision(s) left unused" in str(exc.value)
    assert "first unused: step 5" in str(exc.value)


# -- section 10.1: a read that times out may be retried ----------------------------------------
def test_check_refund_times_out_once_then_the_retry_succeeds():
    fake = RefundFake()
    faults = FaultLayer({"check_refund": FailFirst(1, Timeout())})
    model = ScriptedModel([
        Decision.call("get_order", ORDER),
        Decision.call("check_refund", ORDER),     # times out
        Decision.call("check_refund", ORDER),     # the retry
        Decision.call("create_refund", REFUND),
        Decision.final(REPLY),
    ])
    result = run_agent_sync(model, fake.toolset().with_layer(faults), message="请帮我退掉订单 A100")

    assert_call_count(result, "check_refund", 2)
    assert_call_count(result, "create_refund", 1)
    assert_precondition(result, "create_refund", requires="check_refund")   # after the *successful* check
    assert fake.refunds[0]["status"] == "submitted"
    assert efficiency(result) == 1.0          # a retry after a timeout is not redundant
    # the timed-out check never reached the system
    assert fake.calls == [("get_order", ORDER), ("check_refund", ORDER), ("create_refund", REFUND)]
    model.assert_exhausted()


def test_check_refund_keeps_timing_out_so_no_refund_is_created():
    mock = RecordingMock(RefundFake().toolset().with_layer(FaultLayer({"check_refund": Timeout()})))
    model = ScriptedModel([
        Decision.call("get_order", ORDER),
        Decision.call("check_refund", ORDER),
        Decision.call("check_refund", ORDER),
        Decision.final("暂时无法确认能否退款，请稍后再试，我们没有发起退款。"),
    ])
    result = run_agent_sync(model, mock.toolset(), message="请帮我退掉订单 A100")
    mock.assert_called("check_refund", times=2)
    mock.assert_not_called("create_refund")
    assert_reply(result, contains=["稍后"], not_contains=["退款已提交"])


# -- section 10.2: a write whose response is lost ----------------------------------------------
def lost_refund_then(*retry: Decision) -> tuple[RefundFake, object]:
    fake = RefundFake()
    faults = FaultLayer({"create_refund": OnCalls([1], ResponseLost())})   # committed, answer lost
    model = ScriptedModel([
        Decision.call("get_order", ORDER),
        Decision.call("check_refund", ORDER),
        Decision.call("create_refund", REFUND),
        *retry,
    ])
    result = run_agent_sync(model, fake.toolset().with_layer(faults), message="请帮我退掉订单 A100")
    model.assert_exhausted()
    return fake, result


def test_response_lost_retry_with_the_same_key_makes_exactly_one_refund():
    fake, result = lost_refund_then(Decision.call("create_refund", REFUND), Decision.final(REPLY))
    first, retry = result.trajectory.tool_results("create_refund")
    assert first.error_type == "timeout"                   # the agent could not know it had worked
    assert retry.ok and retry.data["refund_id"] == "R900"  # same key => same business result
    assert_side_effects(fake.refunds, 1, what="refunds")
    assert_retry_safe(result, "create_refund")


def test_response_lost_retry_with_a_new_key_makes_a_second_refund():
    fake, result = lost_refund_then(Decision.call("create_refund", {**REFUND, "idempotency_key": "K2"}),
                                    Decision.final("退款已提交，退款单号为 R901。"))
    assert [r["refund_id"] for r in fake.refunds] == ["R900", "R901"]   # the customer is refunded twice
    with pytest.raises(ToolArgumentsMismatch) as exc:
        assert_retry_safe(result, "create_refund")
    assert (exc.value.step, exc.value.expected, exc.value.actual) == (
        4, {"idempotency_key": "K1"}, {"idempotency_key": "K2"})


def test_response_lost_then_checking_the_original_operation():
    fake, result = lost_refund_then(Decision.call("check_refund", ORDER),
                                    Decision.final("退款此前已提交（R900），无需重复操作。"))
    assert result.trajectory.tool_results("check_refund")[-1].data["reason"] == "already_refunded"
    assert_side_effects(fake.refunds, 1, what="refunds")
    assert_call_count(result, "create_refund", 1)
