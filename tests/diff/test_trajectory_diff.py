"""diff_trajectories on hand-built trajectories: each of the five parts."""

from tether.diff import diff_trajectories
from tether.events import GuardTripped
from tether.status import TerminalStatus
from tether.testing import TrajectoryBuilder

FOUND = {"items": [{"id": 1}]}


def refund(amount, *, reply="已为您退款。", status=TerminalStatus.COMPLETED):
    return (TrajectoryBuilder(case_id="REFUND")
            .user("订单 A1 退款")
            .call("get_order", {"order_id": "A1"}, data={"order_id": "A1", "total": 19900})
            .call("create_refund", {"order_id": "A1", "amount": amount}, data={"refund_id": "R1"})
            .final(reply, status))


def test_identical_runs_have_no_differences():
    d = diff_trajectories(refund(19900), refund(19900))
    assert d.changed_parts == [] and not d.changed
    assert not d.cost.changed


def test_args_the_seed_amount_example():
    d = diff_trajectories(refund(19900), refund(199))
    assert d.changed_parts == ["args"]
    (change,) = d.args.changes
    assert str(change) == "create_refund.amount: 19900 -> 199"
    assert (change.tool, change.path, change.base_pos, change.new_pos) == ("create_refund", "amount", 2, 2)


def test_args_nested_absent_and_list_items():
    base = TrajectoryBuilder().call("book", {"who": {"id": "u1"}, "seats": ["1A", "1B"], "note": "x"}).final("ok")
    new = TrajectoryBuilder().call("book", {"who": {"id": "u2"}, "seats": ["1A", "2C"], "vip": True}).final("ok")
    lines = [c.describe() for c in diff_trajectories(base, new).args.changes]
    assert lines == ['book.note: "x" -> (absent)', 'book.seats[1]: "1B" -> "2C"',
                     'book.vip: (absent) -> true', 'book.who.id: "u1" -> "u2"']


def test_step_added_removed_with_positions_and_counts():
    base = TrajectoryBuilder().repeat(5, "search_flights", {"date": "x"}, error="bad date").final("")
    new = (TrajectoryBuilder().repeat(2, "search_flights", {"date": "x"}, error="bad date")
           .call("web_search", {"q": "flights"}, data=FOUND).final("found"))
    step = diff_trajectories(base, new).step
    assert [c.describe() for c in step.changes] == ["- search_flights x3 at #3-5", "+ web_search at #3"]
    assert [(c.tool, c.base, c.new) for c in step.counts] == [("search_flights", 5, 2), ("web_search", 0, 1)]


def test_step_reorder_is_a_move_not_an_add_and_a_remove():
    base = TrajectoryBuilder().call("a").call("b").call("c").final("ok")
    new = TrajectoryBuilder().call("b").call("a").call("c").final("ok")
    step = diff_trajectories(base, new).step
    assert step.counts == []
    assert [(c.kind, c.tools, c.base_pos, c.new_pos) for c in step.changes] == [("moved", ["b"], 2, 1)]
    assert step.reordered and step.changes[0].describe() == "~ b moved #2 -> #1"


def test_step_ignores_calls_a_guard_blocked():
    base = TrajectoryBuilder().call("a").final("ok")
    new = TrajectoryBuilder().call("a").call("a", error="blocked by loop guard", source="guard").final("ok")
    d = diff_trajectories(base, new)
    assert not d.step.changed
    assert [(c.metric, c.base, c.new, c.assessment) for c in d.recovery.changes] == [("blocked", 0, 1, "worse")]


def test_recovery_retries_strategies_and_guard_trips():
    base = TrajectoryBuilder().repeat(4, "search", {"q": "x"}, error="503").end(TerminalStatus.STEP_LIMIT)
    new = (TrajectoryBuilder().call("search", {"q": "x"}, error="503").call("search", {"q": "x y"}, error="503")
           .call("web_search", {"q": "x"}, data=FOUND))
    new.t.append(GuardTripped(step=3, guard="loop", rule="identical", verdict="hint", message="m"))
    d = diff_trajectories(base, new.final("found via web"))
    got = {c.metric: (c.base, c.new, c.assessment) for c in d.recovery.changes}
    assert got["retries"] == (3, 0, "better")
    assert got["max_identical"] == (4, 1, "better")
    assert got["strategies"] == (["retry"], ["reword", "fallback"], "better")
    assert got["errors"] == (4, 2, "neutral")
    assert got["guard_trips"] == (0, 1, "worse")
    assert d.recovery.regressions[0].metric == "guard_trips"


def test_recovery_regression_is_more_retries_of_a_failing_call():
    good = TrajectoryBuilder().call("s", {"q": 1}, error="e").call("s", {"q": 2}, data=FOUND).final("ok")
    bad = TrajectoryBuilder().repeat(3, "s", {"q": 1}, error="e").call("s", {"q": 2}, data=FOUND).final("ok")
    d = diff_trajectories(good, bad)
    assert [c.describe() for c in d.recovery.regressions] == ["retries 0 -> 2 (worse)", "max_identical 1 -> 3 (worse)"]


def test_recovery_counts_empty_results():
    base = TrajectoryBuilder().call("s", data={"items": []}).final("nothing")
    new = TrajectoryBuilder().call("s", data=FOUND).final("nothing")
    got = {c.metric: (c.base, c.new) for c in diff_trajectories(base, new).recovery.changes}
    assert got["empty"] == (1, 0)


def test_terminal_kinds():
    d = diff_trajectories(refund(1, status=TerminalStatus.COMPLETED), refund(1, status=TerminalStatus.STEP_LIMIT))
    assert (d.terminal.base, d.terminal.new, d.terminal.kind) == ("completed", "step_limit", "regressed")
    d = diff_trajectories(refund(1, status=TerminalStatus.STEP_LIMIT), refund(1, status=TerminalStatus.COMPLETED))
    assert d.terminal.kind == "improved"
    d = diff_trajectories(refund(1), refund(1, status=TerminalStatus.AWAITING_USER))
    assert d.terminal.kind == "changed" and d.changed_parts == ["terminal"]


def test_text_similarity_and_unified_diff():
    d = diff_trajectories(refund(1, reply="已为您退款。\n预计 3 天到账。"), refund(1, reply="已为您退款。\n预计 5 天到账。"))
    assert d.changed_parts == ["text"]
    assert 0.8 < d.text.similarity < 1.0
    assert d.text.diff == ["-预计 3 天到账。", "+预计 5 天到账。"]
