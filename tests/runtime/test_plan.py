import asyncio
import json

import pytest

from tether import Decision, FunctionModel, RunConfig, ScriptedModel, TerminalStatus, ToolResult, ToolSet, tool
from tether.errors import ScriptExhausted, UsageError
from tether.events import ModelRequestEvent
from tether.guards.budget import Budget, BudgetGuard
from tether.guards.goal import Acceptance, GoalSpec
from tether.guards import BaseGuard, Intervention
from tether.guards.loop import LoopConfig, LoopGuard
from tether.runtime import PlanStep, run_plan_execute_review, run_plan_execute_review_sync

GOAL = GoalSpec(
    task="为订单 A100 办理退款",
    constraints=["退款金额必须等于订单实付金额"],
    acceptance=[
        Acceptance(id="order_paid", description="订单已支付", tool="get_order", field="status", equals="paid"),
        Acceptance(id="eligible", description="可退款", tool="check_refund", field="eligible", equals=True),
        Acceptance(id="refund_created", description="退款单已创建", tool="create_refund", field="refund_id"),
    ],
)

STEPS = [
    {"step": 1, "action": "查询订单", "tool": "get_order", "arguments": {"order_id": "A100"},
     "acceptance": "订单已支付", "expect_fields": ["status", "amount"]},
    {"step": 2, "action": "检查退款资格", "tool": "check_refund", "arguments": {"order_id": "A100"},
     "acceptance": "eligible=true", "expect_fields": ["eligible"]},
    {"step": 3, "action": "create refund", "tool": "create_refund", "arguments": {"order_id": "A100", "amount": 19900},
     "acceptance": "返回 refund_id", "expect_fields": ["refund_id"]},
]


def shop(*, refund_error: str | None = None, order: dict | None = None) -> ToolSet:
    """The seed 004 refund flow, with a ledger so a duplicate refund would show."""
    refunds: list[dict] = []

    @tool(description="查询订单")
    def get_order(order_id: str):
        return order if order is not None else {"order_id": order_id, "status": "paid", "amount": 19900}

    @tool(description="检查退款资格")
    def check_refund(order_id: str):
        return {"order_id": order_id, "eligible": True}

    @tool(description="发起退款", side_effect=True)
    def create_refund(order_id: str, amount: int):
        if refund_error:
            return ToolResult.failure(refund_error, "business_error")
        refunds.append({"order_id": order_id, "amount": amount})
        return {"refund_id": "R900", "status": "submitted"}

    return ToolSet([get_order, check_refund, create_refund])


def planner(steps=STEPS) -> ScriptedModel:
    text = "好的，计划如下：\n```json\n" + json.dumps(steps, ensure_ascii=False, indent=2) + "\n```\n按此执行。"
    return ScriptedModel([Decision.final(text)], name="planner")


async def test_refund_flow_succeeds_with_evidence():
    model = planner()
    result = await run_plan_execute_review(model, shop(), GOAL, run_id="r1")
    t = result.trajectory
    model.assert_exhausted()
    assert result.status == TerminalStatus.SUCCEEDED and result.failed_step is None
    assert result.evidence == {"order_paid": "plan_step_1", "eligible": "plan_step_2", "refund_created": "plan_step_3"}
    assert [s.tool for s in result.plan] == ["get_order", "check_refund", "create_refund"]
    assert isinstance(result.plan[0], PlanStep) and result.review is None and result.run_id == "r1"
    assert [e.type for e in t] == ["run_started", "user_message", "model_request", "model_decision",
                                   "tool_call", "tool_result", "tool_call", "tool_result",
                                   # create_refund is side-effecting: the ledger's intent and outcome around it
                                   "tool_call", "side_effect", "side_effect", "tool_result",
                                   "run_finished"]
    assert t.status == TerminalStatus.SUCCEEDED and t.finished.reply == result.reply
    assert "已完成：step 1 查询订单" in result.reply and "未完成：无" in result.reply
    # the plan request offers no tools, asks for JSON, names the tools and carries the rendered goal
    request = model.requests[0]
    assert request.tools == [] and t.of_type(ModelRequestEvent)[0].tools == []
    system = "\n".join(m.content for m in request.messages if m.role == "system")
    assert "JSON" in system and "create_refund" in system
    assert request.messages[-1].content == GOAL.render()


def test_sync_wrapper_and_plan_without_fence():
    model = ScriptedModel([Decision.final("计划：" + json.dumps({"steps": STEPS}, ensure_ascii=False) + " 完毕")])
    result = run_plan_execute_review_sync(model, shop(), GOAL)
    assert result.status == TerminalStatus.SUCCEEDED


def test_sync_wrapper_refuses_to_nest():
    async def inner():
        run_plan_execute_review_sync(planner(), shop(), GOAL)

    with pytest.raises(UsageError, match="inside a running event loop"):
        asyncio.run(inner())


async def test_failing_step_stops_execution_and_is_named():
    result = await run_plan_execute_review(planner(), shop(refund_error="库存不足"), GOAL)
    assert result.status == TerminalStatus.FAILED and result.failed_step == 3
    assert result.reason == "step 3 (create refund) failed: create_refund returned an error: 库存不足"
    assert result.trajectory.finished.reason == result.reason
    assert "已完成：step 1 查询订单（get_order）；step 2 检查退款资格（check_refund）" in result.reply
    assert "step 3 create refund（未通过）" in result.reply and "库存不足" in result.reply
    assert result.evidence["refund_created"] is None


async def test_missing_expected_field_fails_the_step_and_nothing_after_runs():
    result = await run_plan_execute_review(planner(), shop(order={"order_id": "A100", "status": "paid"}), GOAL)
    assert result.status == TerminalStatus.FAILED and result.failed_step == 1
    assert result.reason == "step 1 (查询订单) failed: get_order result lacks amount"
    assert result.trajectory.tool_order() == ["get_order"]
    assert "step 2 检查退款资格（未执行）" in result.reply


@pytest.mark.parametrize("text, reason", [
    ('计划：[{"step": 1, "action": "查询订单", "tool": "get_order", "expect_fields": [], "arguments": {',
     "the plan is not a valid JSON array of steps: Expecting"),
    ("我觉得直接退款就好。", "the plan is not a valid JSON array of steps: no JSON array of steps in the reply"),
    ("[]", "the plan is not a valid JSON array of steps"),
    ('{"steps": []}', "the plan has no steps"),
])
async def test_bad_json_plan_fails_cleanly(text, reason):
    result = await run_plan_execute_review(ScriptedModel([Decision.final(text)]), shop(), GOAL)
    assert result.status == TerminalStatus.FAILED and result.reason.startswith(reason)
    assert result.plan == [] and result.trajectory.tool_calls() == []
    assert result.trajectory.finished.status == TerminalStatus.FAILED


async def test_unknown_tool_and_bad_steps_fail_before_anything_runs():
    unknown = [STEPS[0], {**STEPS[1], "tool": "refund_money"}, STEPS[2]]
    result = await run_plan_execute_review(planner(unknown), shop(), GOAL)
    assert result.status == TerminalStatus.FAILED
    assert result.reason.startswith("plan step 2 (检查退款资格) names unknown tool 'refund_money'")
    assert result.trajectory.tool_calls() == []

    no_tool = [STEPS[0], {k: v for k, v in STEPS[1].items() if k != "tool"}]
    result = await run_plan_execute_review(planner(no_tool), shop(), GOAL)
    assert result.reason == "plan step 2 is invalid: tool: Field required"

    bad_args = [STEPS[0], STEPS[1], {**STEPS[2], "arguments": {"order_id": "A100"}}]
    result = await run_plan_execute_review(planner(bad_args), shop(), GOAL)
    assert result.reason.startswith("plan step 3 (create refund) has invalid arguments for create_refund")
    assert result.trajectory.tool_calls() == []


async def test_missing_evidence_is_partial():
    result = await run_plan_execute_review(planner(STEPS[:2]), shop(), GOAL)
    assert result.status == TerminalStatus.PARTIAL and result.missing == ["refund_created"]
    assert "no evidence for refund_created (2 of 3" in result.reason
    assert "refund_created 缺证据" in result.reply


async def test_reviewer_that_disagrees_is_recorded_but_evidence_wins():
    reviewer = ScriptedModel([Decision.final('```json\n{"passed": true, "missing": [], "notes": "都完成了"}\n```')],
                             name="reviewer")
    result = await run_plan_execute_review(planner(STEPS[:2]), shop(), GOAL, reviewer=reviewer)
    assert result.status == TerminalStatus.PARTIAL
    assert result.review["passed"] is True and result.review["notes"] == "都完成了"
    assert "refund_created" in result.review["disagreement"]
    assert "复核分歧" in result.reply
    prompt = reviewer.requests[0].messages[-1].content
    assert prompt.startswith("对照验收标准逐条核对证据") and "refund_created" in prompt
    decisions = [e for e in result.trajectory if e.type == "model_decision"]
    assert len(decisions) == 2 and '"passed": true' in decisions[1].text


async def test_reviewer_that_agrees_and_one_that_answers_garbage():
    agree = ScriptedModel([Decision.final('{"passed": true, "missing": [], "notes": "ok"}')])
    result = await run_plan_execute_review(planner(), shop(), GOAL, reviewer=agree)
    assert result.status == TerminalStatus.SUCCEEDED and "disagreement" not in result.review

    garbage = ScriptedModel([Decision.final("看起来不错")])
    result = await run_plan_execute_review(planner(), shop(), GOAL, reviewer=garbage)
    assert result.status == TerminalStatus.SUCCEEDED and "not JSON" in result.review["error"]


async def test_loop_guard_stops_a_plan_midway():
    again = [{"step": i, "action": "查询订单", "tool": "get_order", "arguments": {"order_id": "A100"},
              "expect_fields": ["status"]} for i in range(1, 6)]
    model = planner(again)
    result = await run_plan_execute_review(model, shop(), GOAL,
                                           config=RunConfig(guards=[LoopGuard()], guards_label="loop"))
    t = result.trajectory
    assert result.status == TerminalStatus.LOOP_ABORTED and result.failed_step == 4
    assert result.reason.startswith("step 4 (查询订单) stopped by loop: ")
    assert [g.verdict for g in t.guard_trips("loop")] == ["hint", "stop"]
    assert len(t.tool_calls(executed_only=True)) == 3 and len(t.tool_calls()) == 4
    assert "step 5 查询订单（未执行）" in result.reply
    model.assert_exhausted()   # no finish-up request


async def test_loop_guard_that_escalates_ends_needing_a_human():
    again = [{"step": i, "action": "查询订单", "tool": "get_order", "arguments": {"order_id": "A100"}}
             for i in range(1, 5)]
    guard = LoopGuard(LoopConfig(on_repeat="escalate"))
    result = await run_plan_execute_review(planner(again), shop(), GOAL, config=RunConfig(guards=[guard]))
    assert result.status == TerminalStatus.NEEDS_HUMAN and result.failed_step == 4


class NoRefunds(BaseGuard):
    name = "policy"

    def before_tool(self, ctx, call):
        if call.name == "create_refund":
            return Intervention("block", "policy.no_refunds", "refunds need approval")
        return None


async def test_blocked_step_fails_naming_the_step():
    result = await run_plan_execute_review(planner(), shop(), GOAL, config=RunConfig(guards=[NoRefunds()]))
    assert result.status == TerminalStatus.FAILED and result.failed_step == 3
    assert result.reason == ("step 3 (create refund) failed: create_refund returned an error: "
                             "blocked by guard: refunds need approval")
    assert [g.verdict for g in result.trajectory.guard_trips()] == ["block"]


async def test_budget_guard_stops_a_plan_midway():
    guard = BudgetGuard(Budget(max_tool_calls=2))
    result = await run_plan_execute_review(planner(), shop(), GOAL, config=RunConfig(guards=[guard]))
    t = result.trajectory
    assert result.status == TerminalStatus.BUDGET_EXCEEDED and result.failed_step == 3
    assert "stopped by budget" in result.reason and "tool calls budget exhausted" in result.reason
    assert t.tool_order() == ["get_order", "check_refund", "create_refund"]
    assert [c.tool for c in t.tool_calls(executed_only=True)] == ["get_order", "check_refund"]
    assert result.evidence["refund_created"] is None
    assert t.finished.status == TerminalStatus.BUDGET_EXCEEDED


async def test_model_error_ends_as_error_and_misuse_raises_with_trajectory():
    def broken(request):
        raise ConnectionError("provider down")

    result = await run_plan_execute_review(FunctionModel(broken), shop(), GOAL)
    assert result.status == TerminalStatus.ERROR and "provider down" in result.error

    with pytest.raises(ScriptExhausted) as info:
        await run_plan_execute_review(ScriptedModel([]), shop(), GOAL)
    assert info.value.trajectory.finished.reason == "misuse"


async def test_two_plan_runs_against_one_store_each_perform_their_own_side_effect(tmp_path):
    """Each plan run records its ledger under its own run id: the second,
    independent refund is sent, not answered from the first run's ledger."""
    from tether.store import SQLiteStore

    store = SQLiteStore(tmp_path / "t.db")
    refunds: list[str] = []

    @tool(description="发起退款", side_effect=True)
    def create_refund(order_id: str, amount: int):
        refunds.append(order_id)
        return {"refund_id": f"R{len(refunds)}", "status": "submitted"}

    @tool(description="查询订单")
    def get_order(order_id: str):
        return {"order_id": order_id, "status": "paid", "amount": 19900}

    @tool(description="检查退款资格")
    def check_refund(order_id: str):
        return {"order_id": order_id, "eligible": True}

    tools = ToolSet([get_order, check_refund, create_refund])
    results = [await run_plan_execute_review(planner(), tools, GOAL, config=RunConfig(store=store)) for _ in range(2)]
    assert [r.status for r in results] == [TerminalStatus.SUCCEEDED, TerminalStatus.SUCCEEDED]
    assert refunds == ["A100", "A100"]
    ids = [r.run_id for r in results]
    assert ids[0] != ids[1]
    for run_id in ids:
        assert [e["status"] for e in store.effects(run_id)] == ["done"]
        assert store.get_run(run_id)["status"] == "succeeded"
    from tether.events import SideEffectEvent
    statuses = [e.status for r in results for e in r.trajectory.of_type(SideEffectEvent)]
    assert "replayed" not in statuses
