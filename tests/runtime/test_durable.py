"""Checkpoints, resume, the side-effect ledger and approval gates, in process."""

import asyncio
import json

import pytest

from tether import Decision, FunctionModel, RunConfig, ScriptedModel, Tool, ToolResult, ToolSet, run_agent_sync, tool
from tether.runtime.approvals import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalRules,
    ApprovalRule,
    CallbackApprover,
    DeferredApprover,
)
from tether.events import ApprovalEvent, SideEffectEvent
from tether.runtime.durable import resume_agent
from tether.store import SQLiteStore


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so the run loop does not catch it."""


def refund_world(*, with_key: bool, with_query: bool, lose_first_response: bool = True):
    """The seed 004 refund system: create_refund commits, then (first time) the response is lost."""
    refunds: list[dict] = []
    state = {"lost": 0}

    def create_refund(order_id: str, amount: int, idempotency_key: str | None = None):
        if with_key and any(r["key"] == idempotency_key for r in refunds):
            return next(r for r in refunds if r["key"] == idempotency_key)
        refund = {"refund_id": f"R{900 + len(refunds)}", "order_id": order_id, "amount": amount, "key": idempotency_key,
                  "status": "submitted"}
        refunds.append(refund)
        if lose_first_response and state["lost"] == 0:
            state["lost"] += 1
            return ToolResult.failure("timeout: the response was lost after the refund was written", "timeout")
        return refund

    def query(key, args):
        found = [r for r in refunds if r["order_id"] == args["order_id"] and r["amount"] == args["amount"]]
        return ToolResult.success(found[0]) if found else None

    schema = {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "integer"}},
              "required": ["order_id", "amount"], "additionalProperties": False}
    t = Tool("create_refund", "发起退款", schema, create_refund, side_effect=True,
             idempotency_param="idempotency_key" if with_key else None, status_query=query if with_query else None)

    @tool(description="查询订单")
    def get_order(order_id: str):
        return {"order_id": order_id, "status": "paid", "total_amount": 19900}

    return ToolSet([get_order, t]), refunds


def retrying_agent(req):
    """Retries create_refund after a timeout, as a naive agent would."""
    results = [json.loads(m.content) for m in req.messages if m.role == "tool"]
    if not results:
        return Decision.call("get_order", {"order_id": "A100"})
    if len(results) == 1 or (not results[-1]["ok"] and len(results) < 4):
        return Decision.call("create_refund", {"order_id": "A100", "amount": 19900})
    return Decision.final("退款已提交。")


@pytest.mark.parametrize("with_key,with_query,status,resolution", [
    (False, True, "completed", "resolved"),     # the status query finds the committed refund
    (True, False, "completed", "resolved"),     # re-sent with the same idempotency key: deduplicated
    (False, False, "unknown", "held"),          # neither: never a blind retry, the run says it does not know
])
def test_lost_response_refund_ends_with_exactly_one_refund(with_key, with_query, status, resolution):
    tools, refunds = refund_world(with_key=with_key, with_query=with_query)
    result = run_agent_sync(FunctionModel(retrying_agent), tools, message="请帮我退掉订单 A100")
    assert len(refunds) == 1
    assert result.status == status
    effects = [(e.status, e.detail) for e in result.trajectory.of_type(SideEffectEvent)]
    assert effects[0][0] == "intent" and effects[1][0] == "unknown"
    assert effects[2][0] == resolution
    if status == "unknown":
        assert "may or may not have happened" in result.reply or "may or may not have happened" in result.trajectory.finished.reason


def test_two_intended_identical_effects_both_execute():
    """The occurrence rule (effects.py): a second identical call after a success is intended, not a retry."""
    tools, refunds = refund_world(with_key=True, with_query=False, lose_first_response=False)
    model = ScriptedModel([Decision.call("create_refund", {"order_id": "A100", "amount": 100})] * 2 + [Decision.final("ok")])
    result = run_agent_sync(model, tools, message="退两次款")
    assert len(refunds) == 2 and refunds[0]["key"] != refunds[1]["key"]
    assert [r.outcome.value for r in result.trajectory.tool_results()] == ["executed", "executed"]
    assert [e.status for e in result.trajectory.of_type(SideEffectEvent)] == ["intent", "done", "intent", "done"]


class OutcomeCrashStore(SQLiteStore):
    """Dies right after the ledger wrote the n-th outcome (before the run recorded the result)."""

    crash_at = 0

    def record_outcome(self, key, status, result):
        super().record_outcome(key, status, result)
        if sum(1 for e in self.effects_all() if e["status"] == "done") == self.crash_at:
            raise Crash()

    def effects_all(self):
        return [dict(r) for r in self._rows("SELECT status FROM effects")]


@pytest.mark.parametrize("where", ["inside_tool", "after_ledger"])
@pytest.mark.parametrize("crash_after", [1, 2])
def test_a_crash_retry_of_identical_effects_executes_each_once(tmp_path, crash_after, where):
    """Two intended refunds; the process dies right after the n-th was made (inside the tool, or
    after the ledger wrote its outcome), before the run recorded it. The resumed run retries that one
    with the same key (the refund system dedupes it) or answers it from the ledger, then makes the
    rest: two refunds, never three."""
    store = OutcomeCrashStore(tmp_path / "t.db")
    tools, refunds = refund_world(with_key=True, with_query=False, lose_first_response=False)
    inner = tools.tools["create_refund"].fn
    state = {"resumed": False}

    def dying_refund(**kwargs):
        out = inner(**kwargs)
        if where == "inside_tool" and len(refunds) == crash_after and not state["resumed"]:
            raise Crash()
        return out

    tools.tools["create_refund"].fn = dying_refund
    store.crash_at = crash_after if where == "after_ledger" else -1

    def agent(req):
        done = sum(1 for m in req.messages if m.role == "tool")
        return Decision.call("create_refund", {"order_id": "A100", "amount": 100}) if done < 2 else Decision.final("ok")

    with pytest.raises(Crash):
        run_agent_sync(FunctionModel(agent), tools, message="退两次款", run_id="r1", config=RunConfig(store=store))
    state["resumed"] = True
    store.crash_at = -1
    result = asyncio.run(resume_agent("r1", FunctionModel(agent), tools, store=store))
    assert result.status == "completed"
    assert len(refunds) == 2 and len({r["key"] for r in refunds}) == 2
    outcomes = [r.outcome.value for r in result.trajectory.tool_results()]
    retried = "ledger" if where == "after_ledger" else "executed"
    assert outcomes == ["executed"] * (crash_after - 1) + [retried] + ["executed"] * (2 - crash_after)
    statuses = [e.status for e in result.trajectory.of_type(SideEffectEvent)]
    assert ("replayed" if where == "after_ledger" else "resolved") in statuses
    assert [e["status"] for e in store.effects("r1")] == ["done", "done"]
    # runs show: each ledger row says how the run's calls on it ended, truthfully
    from typer.testing import CliRunner

    from tether.cli import app

    shown = CliRunner().invoke(app, ["runs", "show", "r1", "--store", str(tmp_path / "t.db")],
                               env={"COLUMNS": "250"}, catch_exceptions=False).output
    ledger_rows = [ln for ln in shown.splitlines() if ln.split()[1:3] == ["create_refund", "done"]]
    assert len(ledger_rows) == 2
    assert ("answered from the ledger 1" in ledger_rows[crash_after - 1]) == (where == "after_ledger")
    assert "executed 1" in ledger_rows[2 - crash_after]


def gate(fn, timeout=5.0, rules=None):
    approval_rules = ApprovalRules(rules or (ApprovalRule(("create_refund",), "涉及资金"),))
    return ApprovalGate(approval_rules, CallbackApprover(fn), timeout_s=timeout)


def refund_twice_agent():
    return ScriptedModel([Decision.call("create_refund", {"order_id": "A100", "amount": 19900}),
                          Decision.call("create_refund", {"order_id": "A100", "amount": 19900}),
                          Decision.final("done")])


def test_approval_timeout_is_a_recorded_rejection():
    async def slow(req):
        await asyncio.sleep(5)
        return ApprovalDecision("approve")

    tools, refunds = refund_world(with_key=True, with_query=False, lose_first_response=False)
    model = ScriptedModel([Decision.call("create_refund", {"order_id": "A100", "amount": 19900}), Decision.final("未退款")])
    result = run_agent_sync(model, tools, message="退款", config=RunConfig(approvals=gate(slow, timeout=0.05)))
    assert refunds == []
    actions = [(e.action, e.by) for e in result.trajectory.of_type(ApprovalEvent)]
    assert actions == [("requested", ""), ("expired", "timeout"), ("rejected", "timeout")]
    assert result.trajectory.tool_results()[0].error_type == "rejected"


def test_approval_is_bound_to_arguments_and_consumed_once(tmp_path):
    store = SQLiteStore(tmp_path / "a.db")
    asked = []

    def decide(req):
        asked.append(req.arguments)
        return ApprovalDecision("approve", by="alice")

    tools, refunds = refund_world(with_key=True, with_query=False, lose_first_response=False)
    model = ScriptedModel([Decision.call("create_refund", {"order_id": "A100", "amount": 19900}),
                           Decision.call("create_refund", {"order_id": "A100", "amount": 50000}),
                           Decision.final("done")])
    run_agent_sync(model, tools, message="退款", run_id="r2", config=RunConfig(store=store, approvals=gate(decide)))
    assert [a["amount"] for a in asked] == [19900, 50000]              # other arguments: asked again
    approvals = store.approvals("r2")
    assert [a["status"] for a in approvals] == ["consumed", "consumed"]
    assert not store.consume_approval(approvals[0]["id"])               # good once


def test_modify_and_reject():
    tools, refunds = refund_world(with_key=True, with_query=False, lose_first_response=False)
    edit = gate(lambda req: ApprovalDecision("modify", arguments={"order_id": "A100", "amount": 100}, by="bob"))
    run_agent_sync(ScriptedModel([Decision.call("create_refund", {"order_id": "A100", "amount": 19900}),
                                  Decision.final("x")]), tools, message="退款", config=RunConfig(approvals=edit))
    assert [r["amount"] for r in refunds] == [100]
    no = gate(lambda req: ApprovalDecision("reject", by="bob", note="金额不对"))
    r = run_agent_sync(ScriptedModel([Decision.call("create_refund", {"order_id": "A100", "amount": 19900}),
                                      Decision.final("x")]), tools, message="退款", config=RunConfig(approvals=no))
    assert len(refunds) == 1 and "人工拒绝执行" in r.trajectory.tool_results()[0].error


def test_predicate_rule_and_seed_rules():
    rules = ApprovalRules.seed_high_risk()
    assert rules.match("batch_update", {"count": 101}) is not None
    assert rules.match("batch_update", {"count": 100}) is None
    assert rules.match("delete_user", {}) is not None and rules.match("get_order", {}) is None


def test_deferred_approval_pauses_then_continues_after_a_decision(tmp_path):
    store = SQLiteStore(tmp_path / "d.db")
    tools, refunds = refund_world(with_key=True, with_query=False, lose_first_response=False)

    def agent(req):
        done = [m for m in req.messages if m.role == "tool" and json.loads(m.content)["ok"]]
        return Decision.final("退款已提交") if done else Decision.call("create_refund", {"order_id": "A100", "amount": 19900})

    cfg = RunConfig(store=store, approvals=ApprovalGate(ApprovalRules.seed_high_risk(), DeferredApprover()))
    paused = run_agent_sync(FunctionModel(agent), tools, message="退款", run_id="r3", config=cfg)
    assert paused.status == "needs_human" and refunds == []
    [pending] = store.approvals("r3", "pending")
    store.decide_approval(pending["id"], "approved", "carol", "ok")
    result = asyncio.run(resume_agent("r3", FunctionModel(agent), tools, store=store, config=cfg))
    assert result.status == "completed" and len(refunds) == 1
    assert store.approvals("r3")[0]["status"] == "consumed"
