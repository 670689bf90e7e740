import re

import pytest

from tether import TerminalStatus, UsageError
from tether.replay import (
    SemanticOutputMismatch,
    TerminalStateMismatch,
    ToolArgumentsMismatch,
    ToolCallCountMismatch,
    ToolNameMismatch,
    ToolResultMismatch,
)
from tether.testing import (
    TrajectoryBuilder,
    assert_args,
    assert_call_count,
    assert_called_before,
    assert_precondition,
    assert_reply,
    assert_retry_safe,
    assert_side_effects,
    assert_status,
    assert_tool_sequence,
    efficiency,
    redundant_calls,
)

ORDER = {"order_id": "A100"}
REFUND = {"order_id": "A100", "amount": 19900}


def refund_run(amount: int = 19900, reply: str = "退款已提交，退款单号为 R900。"):
    return (TrajectoryBuilder()
            .call("get_order", ORDER, data={"found": True, "total_amount": 19900})
            .call("check_refund", ORDER, data={"eligible": True})
            .call("create_refund", {"order_id": "A100", "amount": amount}, data={"refund_id": "R900"})
            .final(reply))


EXPECTED = [("get_order", ORDER), ("check_refund", ORDER), ("create_refund", REFUND)]


# -- sequence modes ------------------------------------------------------------------
def test_strict_sequence_passes_and_names_the_step_of_each_kind_of_departure():
    assert_tool_sequence(refund_run(), EXPECTED)
    assert_tool_sequence(refund_run(), ["get_order", "check_refund", "create_refund"])   # names only

    with pytest.raises(ToolArgumentsMismatch) as exc:
        assert_tool_sequence(refund_run(amount=199), EXPECTED)
    assert (exc.value.step, exc.value.expected, exc.value.actual) == (3, REFUND, {"order_id": "A100", "amount": 199})
    assert exc.value.rule == "exact"

    with pytest.raises(ToolNameMismatch) as exc:
        assert_tool_sequence(refund_run(), [("get_order", ORDER), ("create_refund", REFUND)])
    assert (exc.value.step, exc.value.expected, exc.value.actual) == (2, "create_refund", "check_refund")

    with pytest.raises(ToolCallCountMismatch) as exc:
        assert_tool_sequence(refund_run(), EXPECTED[:2])
    assert (exc.value.step, exc.value.expected, exc.value.actual) == (3, 2, 3)
    assert "unexpected call create_refund" in str(exc.value)

    with pytest.raises(ToolCallCountMismatch) as exc:
        assert_tool_sequence(refund_run(), EXPECTED + [("get_order", ORDER)])
    assert (exc.value.step, exc.value.expected, exc.value.actual) == (4, 4, 3)
    assert "expected call 4 (get_order) was never made" in str(exc.value)


def test_argument_modes_and_per_tool_overrides():
    t = (TrajectoryBuilder()
         .call("get_order", {"order_id": "A100", "request_id": "r-123"})
         .call("create_refund", {"order_id": "A100", "amount": 19900, "reason": "customer asked"})
         .final("ok"))
    with pytest.raises(ToolArgumentsMismatch):
        assert_tool_sequence(t, [("get_order", ORDER), ("create_refund", REFUND)])
    assert_tool_sequence(t, [("get_order", {}), ("create_refund", REFUND)], args="superset")
    assert_tool_sequence(t, [("get_order", {"x": 1}), ("create_refund", REFUND)],
                         args={"get_order": "ignore", "create_refund": "superset"})
    assert_tool_sequence(t, [("get_order", {}), ("create_refund", {"amount": 19900})],
                         args={"get_order": "ignore", "*": ["amount"]})           # compare these keys only
    assert_tool_sequence(t, [("get_order", ORDER), ("create_refund", REFUND)],
                         args={"*": lambda actual, expected: actual["order_id"] == expected["order_id"]})
    with pytest.raises(ToolArgumentsMismatch) as exc:   # subset: the call may hold only expected arguments
        assert_tool_sequence(t, [("get_order", {"order_id": "A100", "request_id": "r-123", "extra": 1}),
                                 ("create_refund", REFUND)], args="subset")
    assert exc.value.step == 2 and exc.value.rule == "subset"


def test_unordered_subset_superset():
    t = refund_run()
    shuffled = [EXPECTED[2], EXPECTED[0], EXPECTED[1]]
    assert_tool_sequence(t, shuffled, mode="unordered")
    assert_tool_sequence(t, [("create_refund", REFUND)], mode="superset")
    assert_tool_sequence(t, EXPECTED + [("escalate", {})], mode="subset")

    with pytest.raises(ToolArgumentsMismatch) as exc:
        assert_tool_sequence(refund_run(amount=199), shuffled, mode="unordered")
    assert exc.value.step == 3 and exc.value.actual["amount"] == 199
    with pytest.raises(ToolCallCountMismatch, match="expected call escalate"):
        assert_tool_sequence(t, EXPECTED + [("escalate", {})], mode="superset")
    with pytest.raises(ToolNameMismatch) as exc:
        assert_tool_sequence(t, EXPECTED[:2], mode="subset")
    assert (exc.value.step, exc.value.actual) == (3, "create_refund")
    twice = (TrajectoryBuilder().call("create_refund", REFUND).call("create_refund", REFUND).final("x"))
    with pytest.raises(ToolCallCountMismatch) as exc:
        assert_tool_sequence(twice, [("create_refund", REFUND)], mode="unordered")
    assert (exc.value.step, exc.value.expected, exc.value.actual) == (2, 1, 2)
    with pytest.raises(UsageError, match="unknown sequence mode"):
        assert_tool_sequence(t, [], mode="fuzzy")  # type: ignore[arg-type]


def test_unordered_finds_a_matching_when_greedy_would_not():
    t = (TrajectoryBuilder().call("search", {"q": "a", "page": 1}).call("search", {"q": "a"}).final("x"))
    # the first expected item fits both calls, the second only the first call
    assert_tool_sequence(t, [("search", {"q": "a"}), ("search", {"q": "a", "page": 1})],
                         mode="unordered", args="superset")


# -- order, preconditions, arguments, counts ---------------------------------------------------
def test_called_before_and_preconditions():
    assert_called_before(refund_run(), "check_refund", "create_refund")
    reckless = (TrajectoryBuilder().call("create_refund", REFUND).call("check_refund", ORDER).final("x"))
    with pytest.raises(ToolNameMismatch) as exc:
        assert_called_before(reckless, "check_refund", "create_refund")
    assert exc.value.step == 1 and "create_refund at step 1 came before any check_refund" in str(exc.value)
    with pytest.raises(ToolCallCountMismatch, match="check_refund was never called"):
        assert_called_before(TrajectoryBuilder().call("create_refund", REFUND).final("x"), "check_refund", "create_refund")

    assert_precondition(refund_run(), "create_refund", requires="check_refund", same=("order_id",),
                        check=lambda r: r.data["eligible"])
    wrong_order = (TrajectoryBuilder().call("check_refund", {"order_id": "B200"}, data={"eligible": True})
                   .call("create_refund", REFUND).final("x"))
    with pytest.raises(ToolNameMismatch) as exc:
        assert_precondition(wrong_order, "create_refund", requires="check_refund", same=("order_id",))
    assert exc.value.step == 2 and "for {'order_id': 'A100'}" in str(exc.value)
    failed_check = (TrajectoryBuilder().call("check_refund", ORDER, error="timeout").call("create_refund", REFUND)
                    .final("x"))
    with pytest.raises(ToolNameMismatch):
        assert_precondition(failed_check, "create_refund", requires="check_refund")
    assert_precondition(TrajectoryBuilder().final("nothing done"), "create_refund", requires="check_refund")


def test_assert_args_and_call_count():
    t = refund_run(amount=199)
    assert_args(t, "get_order", ORDER)
    assert_args(t, "create_refund", {"amount": 199}, mode="superset")
    assert_args(t, "create_refund", lambda a: a["amount"] > 0)
    with pytest.raises(ToolArgumentsMismatch) as exc:
        assert_args(t, "create_refund", REFUND, call=1)
    assert (exc.value.step, exc.value.expected["amount"], exc.value.actual["amount"]) == (3, 19900, 199)

    def amount_in_cents(a):
        return a["amount"] >= 1000

    with pytest.raises(ToolArgumentsMismatch, match="fail amount_in_cents"):
        assert_args(t, "create_refund", amount_in_cents)
    with pytest.raises(ToolCallCountMismatch):
        assert_args(t, "escalate", {})

    assert_call_count(t, "create_refund", 1)
    assert_call_count(t, "get_order", range(1, 3))
    assert_call_count(t, "escalate", 0)
    loop = TrajectoryBuilder().repeat(4, "check_refund", ORDER, data={"eligible": True}).final("x")
    with pytest.raises(ToolCallCountMismatch) as exc:
        assert_call_count(loop, "check_refund", (1, 2))
    assert (exc.value.step, exc.value.expected, exc.value.actual) == (3, "1..2", 4)


def test_retry_safe_idempotency_keys():
    same = (TrajectoryBuilder()
            .call("create_refund", {**REFUND, "idempotency_key": "K1"}, error="timed out", error_type="timeout")
            .call("create_refund", {**REFUND, "idempotency_key": "K1"}, data={"refund_id": "R900"})
            .final("ok"))
    assert_retry_safe(same, "create_refund")
    fresh = (TrajectoryBuilder()
             .call("create_refund", {**REFUND, "idempotency_key": "K1"}, error="timed out", error_type="timeout")
             .call("create_refund", {**REFUND, "idempotency_key": "K2"}, data={"refund_id": "R901"})
             .final("ok"))
    with pytest.raises(ToolArgumentsMismatch) as exc:
        assert_retry_safe(fresh, "create_refund")
    assert (exc.value.step, exc.value.expected, exc.value.actual) == (2, {"idempotency_key": "K1"},
                                                                     {"idempotency_key": "K2"})
    # a second, separate refund after a success is not a retry
    two = (TrajectoryBuilder().call("create_refund", {**REFUND, "idempotency_key": "K1"}, data={"refund_id": "R900"})
           .call("create_refund", {**REFUND, "idempotency_key": "K2"}, data={"refund_id": "R901"}).final("ok"))
    assert_retry_safe(two, "create_refund")


# -- side effects, status, reply -------------------------------------------------------------------
def test_side_effects_status_and_reply():
    refunds = [{"refund_id": "R900", "order_id": "A100", "amount": 19900, "status": "submitted"}]
    assert_side_effects(refunds, 1)
    assert_side_effects(refunds, [{"amount": 19900, "status": "submitted"}], what="refunds")
    with pytest.raises(ToolCallCountMismatch, match="refunds: expected 1, found 2"):
        assert_side_effects(refunds * 2, 1, what="refunds")
    with pytest.raises(ToolResultMismatch) as exc:
        assert_side_effects(refunds, [{"status": "succeeded"}], what="refunds")
    assert exc.value.actual == {"status": "submitted"} and "refunds[0] differs" in str(exc.value)

    t = refund_run()
    assert_status(t, "completed")
    assert_status(t, {TerminalStatus.COMPLETED, TerminalStatus.SUBMITTED})
    with pytest.raises(TerminalStateMismatch) as exc:
        assert_status(TrajectoryBuilder().end(TerminalStatus.STEP_LIMIT), "submitted")
    assert (exc.value.expected, exc.value.actual) == ("submitted", "step_limit")

    assert_reply(t, contains=["R900"], not_contains=["已完成"], matches=r"R\d{3}")
    assert_reply(t, matches=re.compile("退款"), equals="退款已提交，退款单号为 R900。")
    with pytest.raises(SemanticOutputMismatch) as exc:
        assert_reply(refund_run(reply="退款已完成"), contains=["R900"])
    assert exc.value.step == 4 and exc.value.actual == "退款已完成"
    with pytest.raises(SemanticOutputMismatch, match="reply contains '成功'"):
        assert_reply(refund_run(reply="退款成功"), not_contains=["成功"])

    def says_submitted(text):
        return "已提交" in text

    with pytest.raises(SemanticOutputMismatch, match="fails says_submitted"):
        assert_reply(refund_run(reply="退款已完成"), matches=says_submitted)


# -- efficiency ------------------------------------------------------------------------------------
def test_efficiency_counts_identical_repeats_of_a_success():
    assert efficiency(refund_run()) == 1.0
    assert efficiency(TrajectoryBuilder().final("no tools")) == 1.0
    t = TrajectoryBuilder().repeat(3, "get_order", ORDER, data={"found": True}).call("check_refund", ORDER,
                                                                                      data={"eligible": True}).final("x")
    assert [c.step for c in redundant_calls(t)] == [2, 3]
    assert efficiency(t) == pytest.approx(0.5)


def test_retries_after_errors_timeouts_and_empty_results_are_not_redundant():
    t = (TrajectoryBuilder()
         .call("check_refund", ORDER, error="timed out", error_type="timeout")
         .call("check_refund", ORDER, data={"eligible": True})
         .call("search", {"q": "x"}, data=[])
         .call("search", {"q": "x"}, data=[{"hit": 1}])
         .final("x"))
    assert redundant_calls(t) == [] and efficiency(t) == 1.0


def test_same_call_with_a_new_result_is_progress():
    t = (TrajectoryBuilder()
         .call("poll_job", {"id": 1}, data={"status": "running"})
         .call("poll_job", {"id": 1}, data={"status": "done"})
         .call("poll_job", {"id": 1}, data={"status": "done"})    # nothing new: redundant
         .final("x"))
    assert [c.step for c in redundant_calls(t)] == [3]
    assert efficiency(t) == pytest.approx(2 / 3)
