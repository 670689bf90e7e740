"""Loop guard: legitimate work that looks like a loop, outages across tool
names, question loops, per-rule configs and state."""

import json

from tether import Decision, RunConfig, ScriptedModel, Tool, ToolResult, ToolSet, run_agent_sync, tool
from tether.guards.loop import LoopConfig, LoopGuard


def run(decisions, tools, user=None, guard=None, **cfg):
    guard = guard or LoopGuard(LoopConfig(**cfg))
    result = run_agent_sync(ScriptedModel(decisions), ToolSet(tools), message="go", user=user,
                            config=RunConfig(guards=[guard], max_steps=60))
    return result, result.trajectory.guard_trips()


def test_batch_action_with_constant_ack_is_not_a_loop():
    @tool(description="move a file", side_effect=True)
    def relocate(src: str, dst: str):
        return {"moved": True}

    decisions = [Decision.call("relocate", {"src": f"/in/{n}.pdf", "dst": "/archive/"}) for n in range(20)]
    result, trips = run(decisions + [Decision.final("moved 20")], [relocate])
    assert trips == [] and result.status == "completed"


def test_batch_over_targets_without_a_verb_in_the_name():
    @tool(description="mv")
    def fs_mv(path: str):
        return {"ok": True}

    decisions = [Decision.call("fs_mv", {"path": f"/a/{n}.png"}) for n in range(15)]
    _, trips = run(decisions + [Decision.final("x")], [fs_mv])
    assert trips == []


def test_repeated_identical_action_still_trips():
    @tool(description="send", side_effect=True)
    def send_message(text: str):
        return {"ok": True}

    decisions = [Decision.call("send_message", {"text": "deploy done"})] * 4 + [Decision.final("x")]
    result, trips = run(decisions, [send_message])
    # a side effect that succeeded is not repeated: the 2nd send is hinted, the 3rd stopped
    assert [(t.rule, t.verdict) for t in trips] == [("duplicate_action", "hint"), ("duplicate_action", "stop")]
    assert len(result.trajectory.tool_calls(executed_only=True)) == 2


def test_polling_with_waits_is_not_a_loop_until_max_polls():
    states = iter(["running"] * 8 + ["succeeded"])

    @tool(description="status")
    def job_status(job_id: str):
        return {"job_id": job_id, "status": next(states)}

    @tool(description="sleep")
    def sleep(seconds: int):
        return {"slept": seconds}

    decisions = []
    for _ in range(9):
        decisions += [Decision.call("job_status", {"job_id": "J1"}), Decision.call("sleep", {"seconds": 10})]
    result, trips = run(decisions[:-1] + [Decision.final("done")], [job_status, sleep])
    assert trips == [] and result.status == "completed"


def test_polling_without_waiting_is_left_alone_until_max_polls():
    """No count of unchanged polls with no wait between them separates the blind
    corpus's loops from its legitimate waits (a build polled six times while it
    runs), so only ``max_polls`` speaks."""
    states = iter(["running"] * 8 + ["succeeded"])

    @tool(description="status")
    def job_status(job_id: str):
        return {"job_id": job_id, "status": next(states)}

    decisions = [Decision.call("job_status", {"job_id": "J1"})] * 9 + [Decision.final("done")]
    result, trips = run(decisions, [job_status])
    assert trips == [] and result.status == "completed"


def test_a_poll_that_never_finishes_trips_after_max_polls():
    @tool(description="status")
    def job_status(job_id: str):
        return {"status": "queued"}

    @tool(description="wait")
    def wait(seconds: int):
        return {"waited": seconds}

    decisions = []
    for _ in range(14):
        decisions += [Decision.call("job_status", {"job_id": "J1"}), Decision.call("wait", {"seconds": 30})]
    _, trips = run(decisions + [Decision.final("x")], [job_status, wait])
    assert trips[0].rule == "identical" and trips[0].numbers["count"] == 11 and trips[0].numbers["limit"] == 10


def test_transient_failures_then_success_draw_nothing():
    outcomes = iter([ToolResult.failure("HTTP 503 Service Unavailable", "http_error")] * 2 + [ToolResult.success({"rate": 1.08})])

    @tool(description="rate")
    def get_rate(base: str):
        return next(outcomes)

    decisions = [Decision.call("get_rate", {"base": "EUR"})] * 3 + [Decision.final("1.08")]
    result, trips = run(decisions, [get_rate])
    assert trips == [] and result.status == "completed"


def test_hammering_a_transient_failure_is_hinted_then_stopped_never_blocked():
    @tool(description="rate")
    def get_rate(base: str):
        return ToolResult.failure("Request timed out after 30s", "timeout")

    decisions = [Decision.call("get_rate", {"base": "EUR"})] * 6 + [Decision.final("x")]
    result, trips = run(decisions, [get_rate])
    assert [(t.rule, t.verdict) for t in trips] == [("retry_budget", "hint"), ("retry_budget", "stop")]
    assert trips[0].numbers == {"count": 3, "limit": 2, "tool": "get_rate"}
    assert len(result.trajectory.tool_calls(executed_only=True)) == 3


def test_retries_with_backoff_get_the_full_budget_and_a_fifth_attempt_may_succeed():
    """The issue's case: a retry with backoff whose later attempt succeeds is never blocked."""
    outcomes = iter([ToolResult.failure("429 Too Many Requests", "rate_limit")] * 4 + [ToolResult.success({"rate": 1.08})])

    @tool(description="rate")
    def get_rate(base: str):
        return next(outcomes)

    @tool(description="sleep")
    def sleep(seconds: int):
        return {"slept": seconds}

    decisions = []
    for n in range(4):
        decisions += [Decision.call("get_rate", {"base": "EUR"}), Decision.call("sleep", {"seconds": 2 ** n})]
    decisions += [Decision.call("get_rate", {"base": "EUR"}), Decision.final("1.08")]
    result, trips = run(decisions, [get_rate, sleep])
    assert trips == [] and result.status == "completed"


def test_outage_across_tools_without_a_shared_prefix():
    def down(name):
        def fn(**kw):
            return ToolResult.failure(f"MCP client not connected for tool '{name}'", "RuntimeError")
        return fn

    tools = [Tool(n, n, {"type": "object"}, down(n)) for n in ("list_issues", "search_pages")]
    decisions = [Decision.call("list_issues", {}), Decision.call("search_pages", {}), Decision.call("list_issues", {}),
                 Decision.final("the integration hub is down")]
    result, trips = run(decisions, tools)
    assert [(t.rule, t.verdict) for t in trips] == [("outage", "block")]
    assert trips[0].numbers["failed_tools"] == 2
    assert result.status == "completed"


def test_different_errors_do_not_make_an_outage():
    def fail(msg):
        def fn(**kw):
            return ToolResult.failure(msg, "not_found")
        return fn

    tools = [Tool("get_user", "u", {"type": "object"}, fail("user 7 not found")),
             Tool("get_order", "o", {"type": "object"}, fail("order 9 not found"))]
    decisions = [Decision.call("get_user", {}), Decision.call("get_order", {}), Decision.call("get_user", {"id": 8}),
                 Decision.final("x")]
    _, trips = run(decisions, tools)
    assert [t.rule for t in trips] == []


class Refuser:
    """A simulated user who refuses every question."""

    async def reply(self, question, trajectory):
        return "不想说"


@tool(description="search flights")
def search_flights(origin: str):
    return {"flights": []}


def test_question_repeated_after_refusal_hints_then_stops():
    decisions = [Decision.ask("请问出发地和日期？"), Decision.ask("为了查机票，请告诉我出发地和日期。"),
                 Decision.ask("请问您的出发地、日期是？"), Decision.final("x")]
    result, trips = run(decisions, [search_flights], user=Refuser())
    assert [(t.rule, t.verdict) for t in trips] == [("question_repeat", "hint"), ("question_repeat", "stop")]
    assert "offer a sensible default" in trips[0].message
    assert result.status == "loop_aborted"
    assert len(result.trajectory.questions_to_user()) == 2     # the third question was never asked


def test_a_different_question_after_a_refusal_is_fine():
    decisions = [Decision.ask("Which neighbourhood are you in?"), Decision.ask("Any cuisine you prefer?"),
                 Decision.final("x")]

    class Once:
        answers = iter(["I'd rather not say", "Thai"])

        async def reply(self, question, trajectory):
            return next(self.answers)

    _, trips = run(decisions, [search_flights], user=Once())
    assert trips == []


def test_rules_can_be_switched_off_one_by_one():
    @tool(description="search")
    def search(keyword: str):
        return {"total": 0, "items": []}

    decisions = [Decision.call("search", {"keyword": "x"})] * 4 + [Decision.final("x")]
    _, trips = run(decisions, [search], rules=frozenset({"cycle"}))
    assert trips == []


def test_state_round_trips_through_json_mid_run():
    @tool(description="search")
    def search(keyword: str):
        return {"total": 0, "items": []}

    g = LoopGuard()
    run([Decision.call("search", {"keyword": "x"})] * 2 + [Decision.ask("which city?"), Decision.ask("what budget?"),
                                                           Decision.final("x")], [search], user=Refuser(), guard=g)
    h = LoopGuard()
    h.load_state(json.loads(json.dumps(g.state(), ensure_ascii=False)))
    assert h.state() == g.state() and h.count == 2 and h.asked
