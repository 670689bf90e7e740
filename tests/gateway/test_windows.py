"""Guard windows and the gateway stack, in process (no server)."""

from __future__ import annotations

from tether.gateway.windows import RECORD_LIMIT, GuardWindows, result_fields
from tether.guards.budget import Budget, BudgetGuard
from tether.guards.stacks import gateway_stack
from tether.store import SQLiteStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ok(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}]}


def failed(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def test_the_gateway_stack_has_no_cap_unless_a_budget_is_given():
    assert not any(isinstance(g, BudgetGuard) for g in gateway_stack("on")())
    with_budget = gateway_stack("on", Budget(max_tool_calls=3))()
    assert isinstance(with_budget[0], BudgetGuard) and with_budget[0].budget.max_tool_calls == 3
    assert [g.name for g in gateway_stack("loop")()] == ["loop"]
    assert gateway_stack("off")() == ()
    loop = next(g for g in gateway_stack("on", exempt=["git_status"])() if g.name == "loop")
    assert loop.config.exempt_tools == frozenset({"git_status"})


async def test_an_exempt_status_tool_is_never_a_loop(tmp_path):
    windows = GuardWindows(guards=gateway_stack("on", exempt=["git_status"]), guards_label="on",
                           store=SQLiteStore(tmp_path / "runs.db"), idle=60, base_id="x", clock=Clock())

    async def clean() -> dict:
        return ok("nothing to commit, working tree clean")

    outcomes = [await windows.call("git_status", {"repo_path": "/r"}, clean) for _ in range(10)]
    assert all(o.result is not None and not o.hints for o in outcomes)


async def test_a_stop_lasts_until_an_idle_gap_then_a_new_window_starts(tmp_path):
    clock, store = Clock(), SQLiteStore(tmp_path / "runs.db")
    windows = GuardWindows(guards=gateway_stack("on"), guards_label="on", store=store, idle=60, base_id="w",
                           clock=clock)

    async def denied() -> dict:
        return failed("report r-7: access denied")

    outcomes = []
    for _ in range(5):
        clock.now += 1
        outcomes.append(await windows.call("fetch_report", {"report_id": "r-7"}, denied))
    assert outcomes[2].hints and "3rd identical call" in outcomes[2].hints[0]
    assert outcomes[3].result is None and "tether stopped this window" in outcomes[3].error_text
    assert outcomes[4].result is None and "after 60 s without calls" in outcomes[4].error_text
    clock.now += 61
    again = await windows.call("fetch_report", {"report_id": "r-7"}, denied)
    assert again.result is not None and not again.hints
    windows.shutdown("done")
    assert windows.run_ids == ["w-w1", "w-w2"]
    assert store.get_run("w-w1")["status"] == "loop_aborted" and store.get_run("w-w2")["status"] == "ended"
    assert store.get_run("w-w1")["kind"] == "mcp"


async def test_a_budget_caps_a_window_and_reports_what_was_done(tmp_path):
    windows = GuardWindows(guards=gateway_stack("on", Budget(max_tool_calls=2)), guards_label="on+budget",
                           store=SQLiteStore(tmp_path / "runs.db"), idle=60, base_id="b", clock=Clock())
    n = 0

    async def counter() -> dict:
        nonlocal n
        n += 1
        return ok(f"page {n}")

    outcomes = [await windows.call("read_page", {"page": i}, counter) for i in range(3)]
    assert n == 2 and outcomes[2].result is None and "tool calls budget exhausted" in outcomes[2].error_text
    await windows.settle()
    run = windows.store.get_run("b-w1")
    assert run["status"] == "budget_exceeded" and "read_page(page=0)" in run["reply"]


def test_big_results_are_recorded_bounded_with_their_digest():
    ok_, data, error = result_fields({"content": [{"type": "text", "text": "x" * (RECORD_LIMIT * 3)}],
                                      "structuredContent": {"result": "x" * (RECORD_LIMIT * 3)}})
    assert ok_ and error is None and len(data) < RECORD_LIMIT + 200 and "blake2b" in data
    assert result_fields(failed("boom")) == (False, None, "boom")


async def test_calls_are_answered_while_another_connection_holds_the_store_locked(tmp_path):
    """The window's writes wait for the lock on the store thread, not in the call; once it frees
    they land in order, the appends queued meanwhile joined into one chunk."""
    import sqlite3

    path = tmp_path / "runs.db"
    store = SQLiteStore(path)
    windows = GuardWindows(guards=gateway_stack("on"), guards_label="on", store=store, idle=60, base_id="l",
                           clock=Clock())
    n = 0

    async def page() -> dict:
        nonlocal n
        n += 1
        return ok(f"page {n}")

    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        outcomes = [await windows.call("read_page", {"page": i}, page) for i in range(6)]
        assert [o.result for o in outcomes] == [ok(f"page {i}") for i in range(1, 7)]
        assert other.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)     # nothing could be written yet
    finally:
        other.execute("COMMIT")
        other.close()
    windows.shutdown("done")
    events = store.events("l-w1")
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert [e["call_id"] for e in events if e["type"] == "tool_result"] == [f"mcp_{i}" for i in range(1, 7)]
    assert [e["data"] for e in events if e["type"] == "tool_result"] == [f"page {i}" for i in range(1, 7)]
    assert store.get_run("l-w1")["status"] == "ended" and events[-1]["reason"] == "done"
    chunks = store._rows("SELECT COUNT(*) FROM events WHERE run_id='l-w1'")[0][0]
    assert chunks < 6                                 # 6 calls' appends (and the finish), fewer transactions


async def test_a_run_id_prefix_used_before_goes_on_after_its_last_window(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    for n in range(1, 6):
        store.create_run(f"p-w{n}", kind="mcp")
    windows = GuardWindows(guards=gateway_stack("on"), guards_label="on", store=store, idle=60, base_id="p",
                           clock=Clock())

    async def clean() -> dict:
        return ok("fine")

    await windows.call("read_page", {}, clean)
    windows.shutdown("done")
    assert windows.run_ids == ["p-w6"] and store.get_run("p-w6")["status"] == "ended"
    assert store.get_run("p-w5")["status"] == "running"         # never written over
