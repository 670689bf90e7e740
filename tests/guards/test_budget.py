import pytest

from tether import Decision, FunctionModel, ModelResponse, RunConfig, ToolSet, Usage, run_agent_sync, tool
from tether.guards.budget import Budget, BudgetGuard
from tether.models.tokens import estimate_tokens


@tool(description="search")
def search(keyword: str):
    return {"total": 1, "items": [keyword]}


def looping(req):
    if not req.tools:   # the finish-up request: no tools offered
        return Decision.final("搜索了几次，结果已列出。")
    n = sum(1 for m in req.messages if m.role == "tool")
    return Decision.call("search", {"keyword": f"k{n}"})


def test_tool_call_budget_ends_with_done_not_done_why_and_keeps_history():
    guard = BudgetGuard(Budget(max_tool_calls=3))
    result = run_agent_sync(FunctionModel(looping), ToolSet([search]), message="go", config=RunConfig(guards=[guard]))
    t = result.trajectory
    assert result.status == "budget_exceeded"
    assert len(t.tool_calls(executed_only=True)) == 3 and len(t.tool_calls()) == 4
    assert result.reply.startswith("搜索了几次")                  # the model's finish-up answer...
    assert "Done: search(keyword=k0); search(keyword=k1); search(keyword=k2)" in result.reply   # an English run
    assert "Not done: search(keyword=k3): not executed" in result.reply  # ...and tether's ledger
    assert "Why: tool calls budget exhausted: 4 projected, limit 3" in result.reply
    assert [g.verdict for g in t.guard_trips()] == ["hint", "stop"]   # soft hint at 80%, then the stop
    assert t.finished.status == "budget_exceeded" and t.events[0].type == "run_started"


def test_token_budget_is_checked_before_the_request():
    calls = []

    def expensive(req):
        calls.append(req)
        if not req.tools:
            return ModelResponse(decision=Decision.final("到此为止"), usage=Usage(input_tokens=10, output_tokens=5))
        return ModelResponse(decision=Decision.call("search", {"keyword": "x" * 10}),
                             usage=Usage(input_tokens=400, output_tokens=100))

    guard = BudgetGuard(Budget(max_total_tokens=1000))
    result = run_agent_sync(FunctionModel(expensive), ToolSet([search]), message="go", config=RunConfig(guards=[guard]))
    used = result.trajectory.usage()
    # without the pre-check the third request (500 more) would overshoot to 1500
    assert used.input_tokens + used.output_tokens - 15 <= 1000
    assert result.status == "budget_exceeded"


def test_cost_uses_the_price_table_and_can_be_overridden():
    g = BudgetGuard(Budget(prices={"my-model": (1.0, 2.0)}))
    assert g._cost("openai:my-model", Usage(input_tokens=1_000_000, output_tokens=500_000)) == pytest.approx(2.0)
    assert BudgetGuard()._cost("openai:gpt-4.1-mini-2025-04-14", Usage(input_tokens=1_000_000)) == pytest.approx(0.4)
    assert BudgetGuard()._cost("policy:steady", Usage(input_tokens=10**6)) == 0.0


def test_wall_clock_budget_with_an_injected_clock():
    ticks = iter(range(0, 1000, 10))
    guard = BudgetGuard(Budget(max_seconds=25))
    result = run_agent_sync(FunctionModel(looping), ToolSet([search]), message="go",
                            config=RunConfig(guards=[guard], clock=lambda: float(next(ticks))))
    assert result.status == "budget_exceeded"
    assert "seconds" in result.trajectory.guard_trips()[-1].rule


def test_estimate_tokens_counts_cjk_denser():
    assert estimate_tokens("a" * 400) == 100
    assert estimate_tokens("中" * 150) == 100
