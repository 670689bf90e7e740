from tether import Decision, RunConfig, ScriptedModel, ToolResult, ToolSet, run_agent_sync, tool
from tether.guards.goal import Acceptance, GoalGuard, GoalSpec
from tether.guards.result import ResultGuard


@tool(description="创建订单", side_effect=True)
def create_order(sku: str):
    return ToolResult.failure("库存不足", "rejected")


@tool(description="查询订单")
def query_order(order_id: str):
    return {"order_id": order_id, "status": None}


def run(decisions, tools, guards):
    return run_agent_sync(ScriptedModel(decisions), ToolSet(tools), message="下单", config=RunConfig(guards=guards))


def test_claimed_success_after_a_failed_action_is_flagged():
    r = run([Decision.call("create_order", {"sku": "A1"}), Decision.final("订单已创建，订单号 10088")],
            [create_order], [ResultGuard()])
    assert r.status == "invented_completion"
    trip = r.trajectory.guard_trips()[-1]
    assert trip.rule == "result.invented_completion" and "库存不足" in trip.message


def test_claimed_success_without_any_call_is_flagged():
    r = run([Decision.final("已提交，请放心")], [create_order], [ResultGuard()])
    assert r.status == "invented_completion" and "none of create_order was called" in r.trajectory.guard_trips()[-1].message


def test_honest_failure_report_is_not_flagged():
    r = run([Decision.call("create_order", {"sku": "A1"}), Decision.final("库存不足，订单未能创建。")],
            [create_order], [ResultGuard()])
    assert r.status == "completed"


def test_invented_identifier_is_flagged():
    r = run([Decision.call("query_order", {"order_id": "A100"}), Decision.final("查到了，退款单号 R7781")],
            [query_order], [ResultGuard()])
    assert r.status == "invented_completion" and "R7781" in r.trajectory.guard_trips()[-1].message


def test_required_fields_hint_and_ledger():
    g = ResultGuard(required_fields={"query_order": ["status"]})
    r = run([Decision.call("query_order", {"order_id": "A100"}), Decision.final("订单状态未知")], [query_order], [g])
    assert [t.rule for t in r.trajectory.guard_trips()] == ["result.check"]
    ledger = g.ledger(r.trajectory)
    assert ledger.done == [] and "lacks status" in ledger.not_done[0]


def test_goal_is_pinned_and_missing_evidence_is_partial():
    goal = GoalSpec(task="为订单 A100 退款", constraints=["只退一次"],
                    acceptance=[Acceptance(id="refund", tool="create_refund", field="refund_id")])
    model = ScriptedModel([Decision.call("query_order", {"order_id": "A100"}), Decision.final("退款完成")])
    r = run_agent_sync(model, ToolSet([query_order]), message="退款", config=RunConfig(guards=[GoalGuard(goal)]))
    assert r.status == "partial"
    assert "no evidence for refund" in r.trajectory.guard_trips()[-1].message
    first = model.requests[0].messages[0]
    assert first.role == "system" and "【目标】为订单 A100 退款" in first.content
    assert all("【目标】" in req.messages[0].content for req in model.requests)


def test_drift_check_hints_then_escalates():
    judge = ScriptedModel([Decision.final("DRIFT: 在改日志格式"), Decision.final("DRIFT: 在升级依赖")], name="judge")
    goal = GoalSpec(task="给登录接口加限流")
    decisions = [Decision.call("query_order", {"order_id": str(i)}) for i in range(6)]
    r = run_agent_sync(ScriptedModel(decisions, name="agent"), ToolSet([query_order]), message="go",
                       config=RunConfig(guards=[GoalGuard(goal, judge=judge, check_every=2)]))
    assert [t.verdict for t in r.trajectory.guard_trips()] == ["hint", "escalate"]
    assert r.status == "needs_human"
    judge.assert_exhausted()
