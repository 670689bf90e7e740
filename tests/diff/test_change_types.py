"""Change types over trajectory diffs: what each change type allows and forbids."""

import pytest

from tether.diff import CHANGE_TYPES, Rule, SideEffects, check_change_type, diff_trajectories, get_change_type
from tether.errors import UsageError
from tether.status import TerminalStatus
from tether.testing import TrajectoryBuilder

ORDER = {"order_id": "A1"}


def run(*calls, reply="已退款。", status=TerminalStatus.COMPLETED):
    b = TrajectoryBuilder()
    for tool, args, *rest in calls:
        b.call(tool, args, **(rest[0] if rest else {"data": {"ok": 1}}))
    return b.final(reply, status)


def rules(base, new, change_type, **kw):
    return [v.rule for v in check_change_type(diff_trajectories(base, new), change_type, **kw)]


def test_every_change_type_of_the_seed_table_is_there():
    assert set(CHANGE_TYPES) == {"prompt", "tool_schema", "model", "memory", "orchestration", "performance"}
    assert CHANGE_TYPES["prompt"].label == "文案 Prompt" and CHANGE_TYPES["performance"].label == "性能优化"
    assert get_change_type("tool-schema") is CHANGE_TYPES["tool_schema"]
    with pytest.raises(UsageError, match="unknown change type 'wording'"):
        get_change_type("wording")


def test_prompt_allows_wording_forbids_args_and_terminal():
    base = run(("create_refund", {"amount": 19900}))
    assert rules(base, run(("create_refund", {"amount": 19900}), reply="退款已提交。"), "prompt") == []
    found = check_change_type(diff_trajectories(base, run(("create_refund", {"amount": 199}))), "prompt")
    assert [(v.rule, v.message) for v in found] == [(Rule.ARGS, "call #1 create_refund.amount: 19900 -> 199")]
    assert rules(base, run(("create_refund", {"amount": 19900}), status=TerminalStatus.AWAITING_USER),
                 "prompt") == [Rule.TERMINAL]


def test_prompt_allows_extra_lookups_but_not_extra_side_effects():
    base = run(("get_order", ORDER), ("create_refund", ORDER))
    assert rules(base, run(("get_order", ORDER), ("get_order", ORDER), ("create_refund", ORDER)), "prompt") == []
    found = check_change_type(diff_trajectories(base, run(("get_order", ORDER), ("create_refund", ORDER),
                                                     ("create_refund", ORDER))), "prompt")
    assert [v.rule for v in found] == [Rule.SIDE_EFFECTS]
    assert "duplicated side effect: create_refund with the same arguments x2 (base x1)" in found[0].message


def test_tool_schema_allows_field_migration_forbids_unplanned_side_effects():
    base = run(("create_refund", {"amount": 19900}))
    migrated = run(("create_refund", {"amount_cents": 19900}))
    assert rules(base, migrated, "tool_schema") == []
    extra = run(("create_refund", {"amount_cents": 19900}), ("send_sms", {"to": "u1"}))
    found = check_change_type(diff_trajectories(base, extra), "tool_schema")
    assert [v.message for v in found] == ["extra side effect: send_sms called 1 time(s) (base 0)"]


def test_side_effect_tools_by_name_and_by_prefix():
    se = SideEffects(frozenset({"book_ticket"}))
    assert "book_ticket" in se and "refund_order" in se and "pay_invoice" in se
    assert "search_flights" not in se and "get_refund_status" not in se
    base = run(("search", {}))
    new = run(("search", {}), ("book_ticket", {"id": 1}))
    assert rules(base, new, "tool_schema") == []
    assert rules(base, new, "tool_schema", side_effects=["book_ticket"]) == [Rule.SIDE_EFFECTS]


def test_model_allows_wording_and_steps_forbids_terminal_regression():
    base = run(("search", {"q": 1}))
    assert rules(base, run(("search", {"q": 2}), ("lookup", {}), reply="换个说法"), "model") == []
    assert rules(base, run(("search", {"q": 1}), status=TerminalStatus.STEP_LIMIT), "model") == [
        Rule.TERMINAL_REGRESSION]


def test_memory_forbids_identity_bindings_changing():
    base = run(("get_order", {"user_id": "u1", "order_id": "A1"}))
    new = run(("get_order", {"user_id": "u2", "order_id": "A1"}), reply="另一种格式")
    found = check_change_type(diff_trajectories(base, new), "memory")
    assert [v.message for v in found] == ['call #1 get_order.user_id: "u1" -> "u2"']


def test_orchestration_allows_reorder_forbids_retry_storms_and_duplicate_writes():
    base = run(("a", {}), ("b", {}), ("submit_order", ORDER))
    assert rules(base, run(("b", {}), ("a", {}), ("submit_order", ORDER)), "orchestration") == []
    fail = {"error": "503"}
    storm = run(("a", {}, fail), ("a", {}, fail), ("a", {}, fail), ("b", {}), ("submit_order", ORDER))
    assert set(rules(base, storm, "orchestration")) == {Rule.RECOVERY_REGRESSION}
    dup = run(("a", {}), ("b", {}), ("submit_order", ORDER), ("submit_order", ORDER))
    found = check_change_type(diff_trajectories(base, dup), "orchestration")
    assert [(v.rule, v.message) for v in found] == [
        (Rule.SIDE_EFFECTS, "duplicated side effect: submit_order with the same arguments x2 (base x1)"),
        (Rule.RECOVERY_REGRESSION, "max_identical 1 -> 2 (worse)")]


def test_performance_wants_less_never_more_or_different():
    base = run(("a", {}), ("a", {"page": 2}), ("b", {}))
    assert rules(base, run(("a", {}), ("b", {})), "performance") == []
    slower = run(("a", {}), ("a", {"page": 2}), ("c", {}), ("b", {}))
    assert set(rules(base, slower, "performance")) == {Rule.COST_INCREASE}
    assert Rule.ARGS in rules(base, run(("a", {"fast": True}), ("a", {"page": 2}), ("b", {})), "performance")


def test_an_identical_run_passes_every_change_type():
    t = run(("get_order", ORDER), ("create_refund", {"amount": 19900}), ("send_sms", {"to": "u1"}))
    for name in CHANGE_TYPES:
        assert check_change_type(diff_trajectories(t, t), name, side_effects=["get_order"]) == [], name
