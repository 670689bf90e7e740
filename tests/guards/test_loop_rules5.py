"""The fifth rules pass of the loop guard (issue 25): waiting is hinted and never
stopped, pending answers read more widely, a read walking on through a range,
the end of a listing from a short page or a header field, the user saying they
already answered, an answer's own time, a link as a fresh id, a Retry-After
argument as a delay, a tool name with a dot. Live runs through the public API."""

import itertools

from tether import Decision, RunConfig, ScriptedModel, ToolResult, ToolSet, run_agent_sync, tool
from tether.events import ToolResultEvent
from tether.guards._calls import accepted_job, is_action_name, is_pending, no_such_tool, pending_form
from tether.guards._evidence import delay_asked, short_page, walks_on
from tether.guards.loop import LoopConfig, LoopGuard


def run(decisions, tools, user=None, **cfg):
    result = run_agent_sync(ScriptedModel(decisions), ToolSet(tools), message="go", user=user,
                            config=RunConfig(guards=[LoopGuard(LoopConfig(**cfg))], max_steps=60))
    return result, result.trajectory.guard_trips()


def test_a_poll_that_stays_pending_is_hinted_once_and_never_stopped():
    @tool(description="query a video task")
    def video_task_query(task_id: str):
        return {"task_id": task_id, "task_status": "queued"}

    decisions = [Decision.call("video_task_query", {"task_id": "vg_1"})] * 16 + [Decision.final("still queued")]
    result, trips = run(decisions, [video_task_query])
    assert [t.verdict for t in trips] == ["hint"]          # at max_polls; the budget bounds how long to wait
    assert result.status == "completed"


def test_pending_answers_in_other_forms():
    assert pending_form({"task_id": "t", "task_status": "processing", "progress": 8})    # a field named for a status
    assert pending_form({"jobState": "RUNNING"})
    assert is_pending({"status": 202, "headers": {"Retry-After": "30"}})                  # HTTP 202 Accepted
    assert pending_form({"http_status": 202, "job_id": "j1"})
    assert pending_form({".tag": "in_progress"})                                          # a short answer saying so
    assert not is_pending({"status": "sent"}) and not pending_form({"msg": "queued"})    # acknowledgements
    assert not is_pending({"status": 200, "body": {"ok": True}}) and not pending_form({"status": 200})
    assert not is_action_name("dropbox_save_url_check_job_status")   # a read of a state is named for it
    assert is_action_name("update_status") and is_action_name("dropbox_save_url")


def test_the_same_call_failing_again_after_a_wait_is_a_poll_unless_it_hit_a_limit():
    tries = itertools.count(1)

    @tool(description="list PR checks")
    def gh_pr_checks(pr: int):
        if next(tries) < 4:
            return ToolResult.failure("no checks reported on the 'release' branch", "not_found")
        return {"checks": [{"name": "build", "state": "PENDING"}]}

    @tool(description="sleep")
    def sleep(seconds: int):
        return {"slept": seconds}

    waits = [Decision.call("gh_pr_checks", {"pr": 44}), Decision.call("sleep", {"seconds": 10})] * 3
    _, trips = run(waits + [Decision.call("gh_pr_checks", {"pr": 44}), Decision.final("checks registered")],
                   [gh_pr_checks, sleep])
    assert trips == []

    @tool(description="run a crawler")
    def run_actor(actor: str):
        return ToolResult.failure("429: daily usage quota exceeded", "rate_limit")

    quota = [Decision.call("run_actor", {"actor": "crawler"}), Decision.call("sleep", {"seconds": 5})] * 5
    _, trips = run(quota + [Decision.final("x")], [run_actor, sleep])
    assert trips and trips[0].verdict == "hint"            # waiting a little does not lift a daily quota


def test_a_read_walking_on_through_a_range_is_not_a_repeat():
    @tool(description="view a file")
    def view_file(path: str, view_range: list):
        return {"lines_returned": 400, "total_lines": 2217}

    walk = [Decision.call("view_file", {"path": "a.js", "view_range": [k * 400 + 1, (k + 1) * 400]})
            for k in range(6)]
    _, trips = run(walk + [Decision.final("read")], [view_file])
    assert trips == []
    same = [Decision.call("view_file", {"path": "a.js", "view_range": [401, 800]})] * 5
    _, trips = run(same + [Decision.final("x")], [view_file])
    assert trips and trips[0].rule == "identical"
    assert walks_on({"offset": "0", "limit": "400"}, {"offset": "400", "limit": "400"})
    assert walks_on({"start": "1", "end": "200"}, {"start": "201", "end": "400"})
    assert not walks_on({"start": "201", "end": "400"}, {"start": "1", "end": "200"})     # a jump back


def test_a_short_page_ends_a_listing_whatever_has_more_says():
    @tool(description="search the catalog")
    def catalog_search(studio: str, page: int, pageSize: int):
        hits = [{"id": f"t{page}-{k}"} for k in range(30 if page == 1 else 9 if page == 2 else 0)]
        return {"hits": hits, "meta": {"page": page, "hasMore": True}}

    pages = [Decision.call("catalog_search", {"studio": "Pixar", "page": p, "pageSize": 30}) for p in range(1, 7)]
    _, trips = run(pages + [Decision.final("x")], [catalog_search])
    assert [(t.rule, t.verdict) for t in trips][:1] == [("past_end", "hint")]
    assert short_page({"hits": [1, 2]}, {"pageSize": 30}) and not short_page({"hits": [1, 2]}, {"pageSize": 2})
    assert not short_page({"hits": []}, {"pageSize": 30})           # an empty page is another signal


def test_a_header_kept_as_a_field_ends_a_listing():
    @tool(description="list merge requests")
    def list_mrs(page: int, per_page: int):
        items = [{"iid": page * 100 + k} for k in range(20 if page < 3 else 9 if page == 3 else 0)]
        return {"items": items, "x_total": 49, "x_page": page, "x_next_page": page + 1 if page < 3 else None}

    pages = [Decision.call("list_mrs", {"page": p, "per_page": 20}) for p in range(1, 8)]
    _, trips = run(pages + [Decision.final("x")], [list_mrs])
    assert [(t.rule, t.verdict) for t in trips][:1] == [("past_end", "hint")]


class AlreadySaid:
    def __init__(self):
        self.n = 0

    async def reply(self, question, trajectory):
        self.n += 1
        return "Chinese." if self.n == 1 else "I already said: Chinese."


def test_a_question_after_the_user_said_they_already_answered_is_hinted():
    @tool(description="collect commits")
    def collect_commits(since: str):
        return {"count": 57}

    decisions = [Decision.ask("Which language should the report be in?"),
                 Decision.call("collect_commits", {"since": "2026-11-24"}),
                 Decision.ask("Please confirm the language: Chinese or English?"),
                 Decision.call("collect_commits", {"since": "2026-11-17"}),
                 Decision.ask("Shall I add a summary table?"),
                 Decision.final("report")]
    _, trips = run(decisions, [collect_commits], user=AlreadySaid())
    assert [(t.rule, t.verdict) for t in trips][:1] == [("question_repeat", "hint")]


def test_an_answer_that_differs_only_in_its_own_time_is_the_same_answer():
    minutes = itertools.count(50)

    @tool(description="query seats")
    def ticket_query(date: str):
        return {"trains": [{"no": "G1", "seats": "有"}, {"no": "G3", "seats": "有"}],
                "query_time": f"2026-12-01 16:{next(minutes)}"}

    decisions = [Decision.call("ticket_query", {"date": "2026-12-20"})] * 5 + [Decision.final("G1, G3")]
    _, trips = run(decisions, [ticket_query])
    assert trips and trips[0].rule == "identical"


def test_the_same_call_answered_with_a_new_link_made_another_one():
    names = itertools.count()

    @tool(description="draw a column chart")
    def chart_generate_column_chart(title: str):
        return {"url": f"https://charts.example.com/c/{next(names):03x}.png"}

    decisions = [Decision.call("chart_generate_column_chart", {"title": "Q1"})] * 4 + [Decision.final("x")]
    _, trips = run(decisions, [chart_generate_column_chart])
    assert trips and trips[0].rule == "duplicate_action"


def test_an_argument_named_retry_after_is_a_delay_the_call_sets():
    # (a live run here retries within milliseconds, which the retry budget reads as hammering; the corpus
    # measures the backoff case with model turns between: h-dingtalk-notice-fifth-attempt, tuning/h5)
    assert delay_asked({"users": "a,b", "retry_after_s": 4}) == 4
    assert delay_asked({"retryAfter": 2, "backoff_ms": 500}) == 500
    assert delay_asked({"users": "a,b", "retry": 3}) is None         # an attempt counter is not a delay


def test_no_such_tool_reads_a_dot_in_a_tool_name():
    def failed(text):
        return ToolResultEvent(step=1, call_id="c", tool="x", ok=False, error=text, error_type="tool_error")

    assert no_such_tool(failed("Tool cal.create not found"))
    assert no_such_tool(failed("Tool 'fs.read' not found"))
    assert no_such_tool(failed("No tool named fs.read"))
    assert not no_such_tool(failed("The tool ran. File not found"))


def test_a_202_under_a_new_job_id_started_work_and_a_poll_of_that_job_did_not():
    jobs = itertools.count(0x40a1)

    @tool(description="export a report")
    def bi_export_report(report: str, month: str):
        return {"http_status": 202, "job_id": f"job_{next(jobs):x}"}

    decisions = [Decision.call("bi_export_report", {"report": "sales", "month": "2026-11"})] * 3
    _, trips = run(decisions + [Decision.final("x")], [bi_export_report])
    assert trips and trips[0].rule == "duplicate_action"
    assert accepted_job({"http_status": 202, "job_id": "job_40a1"}, {"report": "sales"})
    assert not accepted_job({"status": 202, "job_id": "j1"}, {"url": "/api/jobs/j1"})    # a poll of its own job
    assert not accepted_job({"status": 200, "job_id": "j1"}, {})
