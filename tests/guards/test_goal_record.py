"""The goal guard's drift check is part of the run's record: role "drift"
requests and decisions, their cost kept apart from the agent's."""

from tether import Decision, RunConfig, ScriptedModel, ToolSet, run_agent_sync, tool
from tether.events import ModelDecisionEvent
from tether.guards.goal import GoalGuard, GoalSpec
from tether.store import SQLiteStore
from tether.store.export import load_run


@tool(description="查询订单")
def query_order(order_id: str):
    return {"order_id": order_id, "status": "paid"}


def test_drift_checks_are_recorded_with_role_drift(tmp_path):
    judge = ScriptedModel([Decision.final("OK: 在查订单"), Decision.final("DRIFT: 在查无关订单")], name="judge")
    decisions = [Decision.call("query_order", {"order_id": str(i)}) for i in range(5)] + [Decision.final("好了")]
    store = SQLiteStore(tmp_path / "t.db")
    r = run_agent_sync(ScriptedModel(decisions, name="agent"), ToolSet([query_order]), message="查订单 A100",
                       config=RunConfig(store=store, guards=[GoalGuard(GoalSpec(task="查订单 A100"), judge=judge,
                                                                       check_every=2)]), run_id="drifty")
    t = load_run(store, "drifty")                 # the stored record, not just the in-memory one
    drift = t.requests(role="drift")
    assert len(drift) == 2 and all(e.model == "judge" for e, _ in drift)
    assert "query_order" in drift[0][1][0].content and drift[1][0].keep == 0        # the prompt, recorded whole
    verdicts = [d.text for d in t.of_type(ModelDecisionEvent) if d.role == "drift"]
    assert verdicts == ["OK: 在查订单", "DRIFT: 在查无关订单"]
    assert t.usage("drift").input_tokens > 0
    assert t.usage("agent") == r.trajectory.finished.usage                          # the agent's own only
    assert t.usage(None).input_tokens == t.usage("agent").input_tokens + t.usage("drift").input_tokens
    assert len(t.requests()) == 6                                                    # the agent's requests
