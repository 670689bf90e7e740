"""Loop guard evidence that does not depend on tool names or field spellings
(issue 25, fourth rules pass): stops that need the loop to go on unchanged
past its hint, nested job states, answers that only reorder what was said,
failures that cannot change, errors that circle, retries that back off,
idempotent writes, information asked for again. Live runs through the public
API, each rule with a look-alike it must leave alone."""

import asyncio
import itertools
import json
import sys
from pathlib import Path

from tether import (
    Decision,
    RunConfig,
    ScriptedModel,
    ToolResult,
    ToolSet,
    run_agent_sync,
    tool,
)
from tether.events import ToolResultEvent
from tether.guards._evidence import (
    asks_for_information,
    content_units,
    cursor_resent,
    offset_end,
    pending_within,
    transient_failure,
)
from tether.guards.loop import LoopConfig, LoopGuard
from tether.guards.offline import check_trace

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from guard_quality import load_item


def run(decisions, tools, user=None, **cfg):
    result = run_agent_sync(ScriptedModel(decisions), ToolSet(tools), message="go", user=user,
                            config=RunConfig(guards=[LoopGuard(LoopConfig(**cfg))], max_steps=60))
    return result, [(t.rule, t.verdict) for t in result.trajectory.guard_trips()]


def fail(error, kind):
    return ToolResultEvent(step=1, call_id="c", tool="t", ok=False, error=error, error_type=kind)


def test_a_status_read_watched_until_it_turns_is_hinted_but_never_stopped():
    states = iter(["major"] * 3 + ["minor"] * 2 + ["none"])

    @tool(description="status page")
    def status_check(url: str):
        return {"indicator": next(states)}

    decisions = [Decision.call("status_check", {"url": "https://status.example/api"})] * 6 + [Decision.final("up")]
    result, trips = run(decisions, [status_check])
    assert ("identical", "hint") in trips and ("identical", "stop") not in trips
    assert result.status == "completed"

    @tool(description="order status")
    def order_status(order_id: str):                   # a status read that fails is not waiting for anything
        return ToolResult.failure("order_status failed: the orders database rejected the query", "tool_error")

    result, trips = run([Decision.call("order_status", {"order_id": "A1"})] * 6 + [Decision.final("x")], [order_status])
    assert trips == [("identical", "hint"), ("identical", "stop")] and result.status == "loop_aborted"


def test_the_same_loop_unchanged_after_its_hint_still_stops():
    @tool(description="search")
    def search(q: str):
        return {"hits": []}

    result, trips = run([Decision.call("search", {"q": "x"})] * 5 + [Decision.final("none")], [search])
    assert trips == [("identical", "hint"), ("identical", "stop")] and result.status == "loop_aborted"


def test_a_job_status_inside_an_envelope_is_a_poll():
    assert pending_within({"status": {"state": "PENDING"}, "statistics": {}})
    assert pending_within({"code": 0, "data": {"id": "c1", "status": "in_progress"}})
    assert not pending_within({"jobs": [{"status": "running"}]})        # a listing of jobs is not a job
    # but a listing holding the one job the call named by its id is that job (a run's history asked by its id)
    assert pending_within({"code": 0, "data": [{"execute_id": "7413", "execute_status": "Running"}]}, frozenset({"7413"}))
    assert not pending_within({"data": [{"execute_id": "7413", "execute_status": "Running"}]}, frozenset({"9999"}))
    polls = iter([{"code": 0, "data": {"status": "in_progress"}}] * 6 + [{"code": 0, "data": {"status": "done"}}])

    @tool(description="chat retrieve")
    def chat_retrieve(chat_id: str):
        return next(polls)

    decisions = [Decision.call("chat_retrieve", {"chat_id": "c1"})] * 7 + [Decision.final("done")]
    _, trips = run(decisions, [chat_retrieve])
    assert trips == []


def test_an_answer_that_only_reorders_what_the_call_said_is_the_same_answer():
    orders = itertools.cycle([[("a", 0.9), ("b", 0.8)], [("b", 0.91), ("a", 0.7)]])

    @tool(description="kb search")
    def kb_search(query: str):
        return {"results": [{"uri": u, "score": s} for u, s in next(orders)], "latency_ms": next(ms)}

    ms = itertools.count(40)
    _, trips = run([Decision.call("kb_search", {"query": "logs"})] * 3 + [Decision.final("x")], [kb_search])
    assert trips[:1] == [("identical", "hint")]
    assert content_units({"out": "b\na\n"}) == content_units({"out": "a\nb"})
    # a list that shrank is progress (errors fixed one by one), so is a changed measurement outside a list
    assert content_units({"errors": ["e1"]}) != content_units({"errors": ["e1", "e2"]})
    assert content_units({"rows": [], "p95_ms": 812}) != content_units({"rows": [], "p95_ms": 1290})


def test_a_call_failing_the_same_way_after_a_detour_that_also_failed_is_hinted_at_once():
    @tool(description="patch")
    def patch(id: str, line: int):
        return ToolResult.failure("SyntaxError: Unexpected token ')' at line 47", "validation")

    @tool(description="render")
    def render(id: str):
        return ToolResult.failure("ReferenceError: rows is not defined", "validation")

    decisions = [Decision.call("patch", {"id": "w", "line": 42}), Decision.call("render", {"id": "w"}),
                 Decision.call("patch", {"id": "w", "line": 42}), Decision.final("stuck")]
    _, trips = run(decisions, [patch, render])
    assert trips == [("identical", "hint")]
    # retried once at once, then another approach: left alone (one immediate retry is what careful agents do)
    decisions = [Decision.call("patch", {"id": "w", "line": 42})] * 2 + [Decision.call("render", {"id": "w"}),
                                                                          Decision.final("x")]
    _, trips = run(decisions, [patch, render])
    assert trips == []


def test_one_error_on_one_target_whatever_the_other_arguments_and_guessed_tool_names():
    @tool(description="edit")
    def edit(path: str, old: str, new: str):
        return ToolResult.failure(f"Could not find {old!r} in the file", "not_found")

    decisions = [Decision.call("edit", {"path": "a.ts", "old": o, "new": "x"}) for o in ("if(a)", "if (a)", "if (a) {")]
    _, trips = run(decisions + [Decision.final("x")], [edit])
    assert trips == [("no_progress", "hint")]

    @tool(description="read")
    def read(path: str):
        return ToolResult.failure(f"ENOENT: no such file, open {path!r}", "not_found")

    decisions = [Decision.call("read", {"path": p}) for p in ("a.yaml", "b.yaml", "c.yaml")]   # a search, each miss
    _, trips = run(decisions + [Decision.final("x")], [read])                                  # rules one out
    assert trips == []

    @tool(description="mcp call")
    def mcp_call(server: str, name: str):
        return ToolResult.failure(f"MCP error -32601: Tool {name} not found", "not_found")

    names = ("cal_create", "calendar_create", "createCal")
    decisions = [Decision.call("mcp_call", {"server": "s", "name": n}) for n in names]
    _, trips = run(decisions + [Decision.final("x")], [mcp_call])
    assert trips == [("no_progress", "hint")]


def test_an_error_that_comes_back_after_other_errors_is_a_circle():
    errors = itertools.cycle(["expected an indented block", "unexpected indent", "unindent does not match"])

    @tool(description="edit lines")
    def edit_lines(start: int, end: int, text: str):
        return ToolResult.failure(f"IndentationError: {next(errors)}", "validation")

    texts = ["a", "  a", "    a", "a2"]
    decisions = [Decision.call("edit_lines", {"start": 59, "end": 59, "text": t}) for t in texts]
    result, trips = run(decisions + [Decision.final("x")], [edit_lines])
    assert trips[-1:] == [("cycle", "hint")]
    assert result.trajectory.guard_trips()[-1].seq > result.trajectory.tool_calls()[3].seq


def offline(tmp_path, actions):
    """An item of the blind corpus's format through the offline path (each model turn takes 2 s, as there)."""
    item = tmp_path / "item.json"
    item.write_text(json.dumps({"id": "x", "label": "ok", "task": "t", "actions": actions}), encoding="utf-8")
    trips = asyncio.run(check_trace(load_item(item).trajectory, [LoopGuard()]))
    return [(t.verdict.rule, t.verdict.action) for t in trips if not t.after_stop]


def test_retries_hint_at_the_third_same_failure_unless_they_back_off(tmp_path):
    def attempt(error, kind="rate_limit", **args):
        return {"tool": "create_issue", "args": {"title": "t", **args},
                "result": {"ok": False, "error": error, "error_type": kind}}

    same = [attempt("529 Overloaded", "overloaded")] * 3
    assert offline(tmp_path, same) == [("retry_budget", "hint")]
    told = [attempt(f"RATE_LIMITED: retry after {s}s") for s in (2, 4, 8, 16)]
    assert offline(tmp_path, told) == []            # the server's wait grows: it is being honoured
    backing = [attempt("429 Too Many Requests", backoff_s=s) for s in (2, 4, 8, 16)]
    assert offline(tmp_path, backing) == []         # the call sets a growing delay itself
    mixed = [attempt("Request timed out", "timeout"), attempt("429 Too Many Requests"),
             attempt("Request timed out", "timeout")]
    assert offline(tmp_path, mixed) == []           # a service moving, not the very same failure


def test_a_failure_typed_as_lasting_is_not_transient_and_a_rate_quota_to_retry_later_is():
    assert not transient_failure(fail("The AskQuestion tool is unavailable in this environment.", "not_found"))
    assert not transient_failure(fail("1 validation error: tools.0.timeout must be > 0", "validation"))
    assert transient_failure(fail("Throttling.RateQuota: rate limit exceeded, please try again later.", "rate_limit"))
    assert not transient_failure(fail("You exceeded your current quota, check your plan and billing", "rate_limit"))


def test_a_write_with_an_idempotency_key_may_be_sent_again():
    @tool(description="book a room", side_effect=True)
    def book(room: str, idempotency_key: str = ""):
        return {"booking_id": "bk_1", "status": "confirmed"}

    again = [Decision.call("book", {"room": "3F", "idempotency_key": "om_1"})] * 2 + [Decision.final("booked")]
    _, trips = run(again, [book])
    assert trips == []
    _, trips = run([Decision.call("book", {"room": "3F"})] * 2 + [Decision.final("x")], [book])
    assert trips == [("duplicate_action", "hint")]


def test_the_same_call_answered_under_a_fresh_id_and_creation_time_made_another_one():
    ids = itertools.count(600)

    @tool(description="invoke a workflow")
    def invoke_async(workflow_id: str):
        n = next(ids)
        return {"id": f"87b8-{n}", "status": "pending", "created_at": f"2026-12-01T13:{n % 60:02d}:05Z"}

    _, trips = run([Decision.call("invoke_async", {"workflow_id": "wf"})] * 3 + [Decision.final("x")], [invoke_async])
    assert trips[:1] == [("duplicate_action", "hint")]


def test_asking_again_for_information_already_given_is_hinted_at_once_an_offer_is_not():
    assert asks_for_information("Which calendar should I use?")
    assert asks_for_information("请问您要预约哪天的门诊？")
    assert not asks_for_information("Two of four replicas are ready. Want me to check again?")
    assert not asks_for_information("需要我稍后再查一次吗？")

    @tool(description="free slots")
    def freebusy(calendar: str):
        return {"busy": []}

    decisions = [Decision.ask("Which calendar should I use for the offsite?"),
                 Decision.call("freebusy", {"calendar": "work"}),
                 Decision.ask("Just to confirm, which calendar should the offsite go on?"), Decision.final("x")]
    class Answers:
        answers = iter(["The Work calendar.", "Work. I already said that."])

        async def reply(self, question, trajectory):
            return next(self.answers)

    _, trips = run(decisions, [freebusy], user=Answers())
    assert trips == [("question_repeat", "hint")]


def test_offset_paging_ends_at_the_total():
    assert offset_end({"startAt": 200, "total": 237, "issues": [{}] * 37}, {"startAt": 200})
    assert offset_end({"total": 237, "issues": []}, {"start_at": 300})
    assert not offset_end({"total": 237, "issues": [{}] * 100}, {"startAt": 100})
    assert not offset_end({"total": 237, "issues": []}, {"page": 3})


def test_a_cursor_sent_inside_query_parameters_and_answered_back_does_not_advance():
    page = {"data": [{"id": "63a0"}], "total_count": 78, "pages": {"next": {"page": 2, "starting_after": "Wy0x"}}}
    assert cursor_resent(page, {"query": {"value": "acme"}, "query_params": {"starting_after": "Wy0x"}})
    assert not cursor_resent(page, {"query": {"value": "acme"}, "query_params": {"starting_after": "Wy0w"}})

    @tool(description="search contacts")
    def search_contacts(query: dict, query_params: dict | None = None):
        return page

    first = Decision.call("search_contacts", {"query": {"value": "acme"}})
    again = Decision.call("search_contacts", {"query": {"value": "acme"}, "query_params": {"starting_after": "Wy0x"}})
    _, trips = run([first, again, again, Decision.final("x")], [search_contacts])
    assert trips[:1] == [("past_end", "hint")]


def test_pages_that_fail_the_same_way_as_the_walk_moves_on_are_its_end(tmp_path):
    def page(start, ok=True):
        result = ({"ok": True, "data": {"startAt": start, "issues": [{"key": f"K-{start}"}]}} if ok else
                  {"ok": False, "error": f"HTTP 500: requests {start + 100:,} results, over the limit of 10,000",
                   "error_type": "server_error"})
        return {"tool": "jira_search", "args": {"jql": "project = P", "startAt": start}, "result": result}

    walk = [page(9800), page(9900), page(10000, ok=False), page(10100, ok=False)]
    assert offline(tmp_path, walk) == [("past_end", "hint")]
    retried = [page(9900), page(10000, ok=False), page(10000, ok=False)]      # the same page again: a retry
    assert offline(tmp_path, retried) == []


def test_the_new_state_is_plain_data_and_survives_a_checkpoint():
    """A guard resumed from its checkpoint decides as the one that ran on (content units, error runs,
    hint marks are JSON)."""
    orders = itertools.cycle([["a", "b"], ["b", "a"]])

    @tool(description="kb search")
    def kb_search(query: str):
        return {"results": next(orders)}

    guard = LoopGuard()
    run_agent_sync(ScriptedModel([Decision.call("kb_search", {"query": "q"})] * 3 + [Decision.final("x")]),
                   ToolSet([kb_search]), message="go", config=RunConfig(guards=[guard]))
    state = json.loads(json.dumps(guard.state(), ensure_ascii=False))
    again = LoopGuard()
    again.load_state(state)
    assert again.state() == guard.state() and again.hint_marks and again.novel == guard.novel


def test_a_bigger_limit_answered_the_very_same_has_no_more():
    @tool(description="list matters")
    def list_matters(client: str, limit: int):
        return {"results": [f"M-{i}" for i in range(min(limit, 120))]}

    calls = [Decision.call("list_matters", {"client": "ACME", "limit": n}) for n in (50, 100, 200, 500)]
    _, trips = run(calls + [Decision.final("x")], [list_matters])
    assert trips[:1] == [("near_duplicate", "hint")]
    grows = [Decision.call("list_matters", {"client": "ACME", "limit": n}) for n in (20, 50, 100)]
    _, trips = run(grows + [Decision.final("x")], [list_matters])
    assert trips == []                                  # each bigger limit brought more
