import asyncio

import pytest

from tether import Decision, FunctionModel, RunConfig, ScriptedModel, TerminalStatus, ToolSet, Turn, run_agent, run_agent_sync, tool
from tether.errors import UsageError
from tether.guards import BaseGuard, Intervention
from tether.messages import ToolCallRequest


@tool(description="search flights")
def search_flights(date: str):
    return {"total": 0, "flights": []}


class ListUser:
    def __init__(self, replies):
        self.replies = list(replies)

    async def reply(self, question, trajectory):
        return self.replies.pop(0) if self.replies else None


def test_multi_turn_history_and_simulated_user():
    model = ScriptedModel([Decision.ask("请问日期？"), Decision.call("search_flights", {"date": "2026-04-10"}),
                           Decision.final("没有航班")])
    history = [Turn("user", "帮我订机票"), Turn("agent", "请问出发地？", question=True), Turn("user", "北京")]
    result = run_agent_sync(model, ToolSet([search_flights]), message="去上海", history=history,
                            user=ListUser(["4 月 10 日"]))
    t = result.trajectory
    assert result.status == TerminalStatus.COMPLETED
    assert [q.source for q in t.questions_to_user()] == ["history", "model"]
    assert [m.source for m in t.user_messages()] == ["history", "history", "input", "simulator"]
    # the model saw the whole history on its first request
    assert [m.role for m in model.requests[0].messages] == ["user", "assistant", "user", "user"]


def test_question_without_user_ends_awaiting_user():
    result = run_agent_sync(ScriptedModel([Decision.ask("哪天出发？")]), ToolSet(), message="订票")
    assert result.status == TerminalStatus.AWAITING_USER and result.reply == "哪天出发？"


def test_step_cap():
    model = FunctionModel(lambda req: Decision.call("search_flights", {"date": "x"}))
    result = run_agent_sync(model, ToolSet([search_flights]), message="go", config=RunConfig(max_steps=5))
    assert result.status == TerminalStatus.STEP_LIMIT
    assert len(result.trajectory.tool_calls()) == 5
    assert result.trajectory.finished.steps == 5


def test_model_error_is_recorded_not_raised():
    def broken(req):
        raise ConnectionError("provider down")

    result = run_agent_sync(FunctionModel(broken), ToolSet(), message="go")
    assert result.status == TerminalStatus.ERROR
    assert "provider down" in result.error and "step 1" in result.error
    assert result.trajectory.finished.status == TerminalStatus.ERROR


def test_several_tool_calls_in_one_decision_and_bad_calls_continue():
    model = ScriptedModel([
        Decision.calls(("search_flights", {"date": "a"}), ("nope", {}), ("search_flights", {"when": 1})),
        Decision(kind="tool_calls", tool_calls=[ToolCallRequest(id="c9", name="search_flights", raw_arguments="{oops")]),
        Decision.final("done"),
    ])
    result = run_agent_sync(model, ToolSet([search_flights]), message="go")
    types = [r.error_type for r in result.trajectory.tool_results()]
    assert types == [None, "unknown_tool", "invalid_arguments", "invalid_arguments"]
    assert result.status == TerminalStatus.COMPLETED


class CountingGuard(BaseGuard):
    """A minimal guard exercising hint, block and stop through the loop's hooks."""

    name = "test"

    def before_tool(self, ctx, call):
        n = len(ctx.trajectory.tool_calls(call.name))
        if n == 2:
            return Intervention("hint", "repeat", "you repeated search_flights", {"count": n})
        if n == 3:
            return Intervention("block", "repeat", "third identical call blocked", {"count": n})
        if n >= 4:
            return Intervention("stop", "repeat", "4th call; limit 3", {"count": n, "limit": 3})
        return None


def test_guard_verdicts_flow_through_the_loop():
    model = FunctionModel(lambda req: Decision.call("search_flights", {"date": "x"}))
    result = run_agent_sync(model, ToolSet([search_flights]), message="go",
                            config=RunConfig(guards=[CountingGuard()], guards_label="test"))
    t = result.trajectory
    assert result.status == TerminalStatus.LOOP_ABORTED
    assert [g.verdict for g in t.guard_trips()] == ["hint", "block", "stop"]
    assert [r.error_type for r in t.tool_results()] == [None, None, "guard_blocked", "guard_stopped"]
    # the hint reached the model on its next request, appended to the last tool
    # result (no extra system message), and only on that request
    sent = model.requests[2].messages
    assert [m.role for m in sent].count("system") == 0
    assert sent[-1].role == "tool" and sent[-1].content.endswith("\n\n[tether] you repeated search_flights")
    assert not any("you repeated" in m.content for m in model.requests[3].messages)


def test_sync_wrapper_refuses_to_nest():
    async def inner():
        run_agent_sync(ScriptedModel([Decision.final("x")]), ToolSet(), message="x")

    with pytest.raises(UsageError, match="inside a running event loop"):
        asyncio.run(inner())


async def test_async_api():
    result = await run_agent(ScriptedModel([Decision.final("好")]), ToolSet(), message="嗨")
    assert result.reply == "好"


class StopWithFinishUp(BaseGuard):
    """Stops the run at the second call and asks the model for a last answer."""

    name = "test"

    def before_tool(self, ctx, call):
        if len(ctx.trajectory.tool_calls(call.name)) >= 2:
            return Intervention("stop", "repeat", "second call", {"count": 2}, finish_up=True)
        return None


def test_the_finish_up_request_is_appended_timed_and_counted():
    """The guard's finish-up request adds no system message (servers that render the
    tool list per system message would send it again) and offers no tools; its
    answer is timed and counted like any agent request."""
    def answer(req):
        return Decision.final("已停止：查不到。") if not req.tools else Decision.call("search_flights", {"date": "x"})

    model = FunctionModel(answer)
    result = run_agent_sync(model, ToolSet([search_flights]), message="go",
                            config=RunConfig(system_prompt="sys", guards=[StopWithFinishUp()], guards_label="test"))
    assert result.status == TerminalStatus.LOOP_ABORTED and result.reply == "已停止：查不到。"
    last = model.requests[-1]
    assert last.tools == [] and [m.role for m in last.messages].count("system") == 1
    assert last.messages[-1].role == "tool" and "\n\n[tether] " in last.messages[-1].content
    assert "second call" in last.messages[-1].content
    t = result.trajectory
    decisions = [e for e in t if e.type == "model_decision"]
    requests = [e for e in t if e.type == "model_request"]
    assert len(decisions) == len(requests) == 3 and result.trajectory.finished.steps == 3
    assert decisions[-1].latency_ms > 0
