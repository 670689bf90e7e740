"""Loop guard: what it catches, what it must not flag, and its ladder."""

import itertools

from tether import Decision, RunConfig, ScriptedModel, ToolResult, ToolSet, run_agent_sync, tool
from tether.guards.loop import LoopConfig, LoopGuard


def run(decisions, tools, **cfg):
    guard = LoopGuard(LoopConfig(**cfg))
    model = ScriptedModel(decisions)
    result = run_agent_sync(model, ToolSet(tools), message="go", config=RunConfig(guards=[guard], max_steps=40))
    return result, result.trajectory.guard_trips()


@tool(description="search")
def search(keyword: str):
    return {"total": 0, "products": []}


@tool(description="a")
def tool_a(x: int):
    return {"a": "same"}


@tool(description="b")
def tool_b(x: int):
    return {"b": "same"}


def test_identical_calls_hint_then_stop():
    decisions = [Decision.call("search", {"keyword": "羽毛球鞋"})] * 4 + [Decision.final("找不到。")]
    result, trips = run(decisions, [search])
    assert [(t.rule, t.verdict) for t in trips] == [("identical", "hint"), ("identical", "stop")]
    assert trips[0].numbers == {"count": 3, "limit": 2, "tool": "search"}
    assert "3rd identical call to search" in trips[0].message
    assert result.status == "loop_aborted"
    assert len(result.trajectory.tool_calls(executed_only=True)) == 3   # the 4th was stopped, not executed
    assert result.reply == "找不到。"                                    # the finish-up answer, not a log dump


def test_canonical_arguments_whitespace_and_case():
    decisions = [Decision.call("search", {"keyword": k}) for k in ("Model Y", "model  y", " MODEL Y ")] + [Decision.final("x")]
    _, trips = run(decisions, [search])
    assert [t.rule for t in trips] == ["identical"]


def test_abab_cycle_is_caught():
    decisions = [Decision.call("tool_a", {"x": 1}), Decision.call("tool_b", {"x": 1})] * 2 + [Decision.final("x")]
    _, trips = run(decisions, [tool_a, tool_b])
    assert [(t.rule, t.numbers["period"]) for t in trips] == [("cycle", 2)]
    assert trips[0].seq and "tool_a -> tool_b" in trips[0].message


def test_period_three_cycle():
    """A period-3 cycle: the 2nd call of the replayed round already shows work started
    over (two repeats in a row with the same results); the round's end is the cycle."""
    calls = [Decision.call(n, {"x": 1}) for n in ("tool_a", "tool_b", "search")]
    decisions = [calls[0], calls[1], Decision.call("search", {"keyword": "k"})] * 2 + [Decision.final("x")]
    _, trips = run(decisions, [tool_a, tool_b, search])
    assert [(t.rule, t.numbers["period"]) for t in trips] == [("cycle", 0), ("cycle", 3)]
    assert trips[0].numbers["tools"] == "tool_a -> tool_b"


def test_five_reworded_keywords_without_new_results_are_caught():
    words = ["2026款特斯拉Model Y后排遮阳帘原厂配件", "特斯拉Model Y后排遮阳帘原厂配件", "特斯拉Model Y遮阳帘原厂",
             "特斯拉Model Y后排遮阳帘", "Model Y后排遮阳帘原厂"]
    decisions = [Decision.call("search", {"keyword": w}) for w in words] + [Decision.final("没有找到")]
    _, trips = run(decisions, [search])
    # each rewording drops words of the first (it widens the search: a new try, not the same answer again, as
    # C4's steady agent does); the fifth call in a row without progress is the tool's streak
    assert [(t.rule, t.numbers["count"]) for t in trips] == [("near_duplicate", 5)]


def test_polling_with_changing_results_is_progress():
    counter = itertools.count()

    @tool(description="job status")
    def job_status(job_id: str):
        return {"job_id": job_id, "progress": next(counter)}

    decisions = [Decision.call("job_status", {"job_id": "J1"})] * 10 + [Decision.final("done")]
    result, trips = run(decisions, [job_status])
    assert trips == [] and result.status == "completed"


def test_exempted_tool_is_not_flagged():
    decisions = [Decision.call("search", {"keyword": "x"})] * 6 + [Decision.final("x")]
    result, trips = run(decisions, [search], exempt_tools=frozenset({"search"}))
    assert trips == [] and result.status == "completed"


def test_no_progress_different_calls_same_error():
    @tool(description="lookup")
    def lookup(city: str):
        return ToolResult.failure("account suspended: contact billing", "forbidden")

    decisions = [Decision.call("lookup", {"city": c}) for c in ("北京", "上海", "广州", "深圳", "杭州", "成都")]
    _, trips = run(decisions + [Decision.final("x")], [lookup], max_near_duplicates=99)
    assert trips[0].rule == "no_progress"


def test_transient_failures_of_one_tool_count_together_whatever_the_arguments():
    """An attempt counter or a backoff value in the arguments does not make a new call."""
    @tool(description="lookup")
    def lookup(city: str, attempt: int = 0, backoff_ms: int = 0):
        return ToolResult.failure("HTTP 503", "unavailable")

    decisions = [Decision.call("lookup", {"city": "北京", "attempt": n, "backoff_ms": 500 * 2 ** n}) for n in range(6)]
    result, trips = run(decisions + [Decision.final("x")], [lookup])
    assert [(t.rule, t.verdict) for t in trips] == [("retry_budget", "hint"), ("retry_budget", "stop")]
    assert len(result.trajectory.tool_calls(executed_only=True)) == 3      # attempts in quick succession: 2 retries


def test_family_outage_blocks_further_calls():
    def down(**kw):
        return ToolResult.failure("Service temporarily unavailable (HTTP 503)", "unavailable")

    from tether import Tool
    tools = [Tool(n, n, {"type": "object"}, down) for n in ("beike_lookup", "beike_search", "beike_detail")]
    decisions = [Decision.call("beike_lookup", {}), Decision.call("beike_search", {}), Decision.call("beike_detail", {}),
                 Decision.final("贝壳服务故障")]
    result, trips = run(decisions, tools)
    assert [(t.rule, t.verdict) for t in trips] == [("outage", "block")]
    assert result.trajectory.tool_results("beike_detail")[0].error_type == "guard_blocked"
    assert result.status == "completed"


def test_state_is_plain_data_and_round_trips():
    g = LoopGuard()
    run_agent_sync(ScriptedModel([Decision.call("search", {"keyword": "x"})] * 2 + [Decision.final("x")]),
                            ToolSet([search]), message="go", config=RunConfig(guards=[g]))
    import json
    state = json.loads(json.dumps(g.state(), ensure_ascii=False))
    h = LoopGuard()
    h.load_state(state)
    assert h.state() == g.state() and len(h.calls) == 2


def test_escalate_option():
    decisions = [Decision.call("search", {"keyword": "x"})] * 5
    result, trips = run(decisions, [search], on_repeat="escalate")
    assert result.status == "needs_human" and trips[-1].verdict == "escalate"


def test_state_round_trips_with_sends_refusals_and_fresh_ids():
    """What the rules of issue 25 remember (the last send of a tool, calls a person
    refused, small answers kept for fresh ids, progress and re-ask counts) is
    plain data: a checkpoint and a resume give the same guard."""
    import json

    from tether import Tool

    def send_message(channel: str, text: str):
        return {"status": "queued", "message_id": "m1"}

    def Task(description: str):                      # noqa: N802 - a tool named as agents name it
        return {"task_id": "t_01", "status": "started"}

    def edit_file(path: str, new: str):
        return ToolResult.failure("User rejected permission for edit_file", "permission")

    tools = [Tool("send_message", "send", {"type": "object"}, send_message), Tool("Task", "task", {"type": "object"}, Task),
             Tool("edit_file", "edit", {"type": "object"}, edit_file)]
    g = LoopGuard()
    run_agent_sync(ScriptedModel([Decision.call("send_message", {"channel": "#ops", "text": "deploy finished, all green"}),
                                  Decision.call("Task", {"description": "write the tests"}),
                                  Decision.call("edit_file", {"path": "a.py", "new": "x"}),
                                  Decision.final("x")]),
                   ToolSet(tools), message="go", config=RunConfig(guards=[g]))
    state = json.loads(json.dumps(g.state(), ensure_ascii=False))
    assert state["sent"] and state["refusals"] and state["shapes"]
    h = LoopGuard()
    h.load_state(state)
    assert h.state() == g.state()
