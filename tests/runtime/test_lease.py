"""Issue 19 finding 10: a slow tool that outlives the lease.

Before the fix, a tool running longer than the lease's time to live let a
second process take the run over; the first then crashed with "events
overlap" and wrote the side effect's outcome into a run it no longer drove.
Now the lease is renewed while a tool runs, and a process that lost its lease
anyway stops cleanly (LeaseLost) without touching the ledger or the run."""

from __future__ import annotations

import time

import pytest

from tether import Decision, RunConfig, ScriptedModel, Tool, ToolSet, run_agent_sync
from tether.errors import LeaseLost, RunBusy
from tether.runtime import session as session_mod
from tether.runtime.session import take_lease
from tether.store import SQLiteStore

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "integer"}},
          "required": ["order_id", "amount"]}


def slow_refund_tools(body):
    return ToolSet([Tool("create_refund", "发起退款", SCHEMA, body, side_effect=True)])


def refund_model():
    return ScriptedModel([Decision.call("create_refund", {"order_id": "A100", "amount": 100}),
                          Decision.final("退款已提交")])


@pytest.fixture
def short_lease(monkeypatch):
    monkeypatch.setattr(session_mod, "LEASE_TTL_S", 0.4)


def test_a_slow_tool_keeps_the_lease_while_it_runs(tmp_path, short_lease):
    store = SQLiteStore(tmp_path / "t.db")
    other = SQLiteStore(tmp_path / "t.db")        # another process's connection
    seen: dict = {}

    def create_refund(order_id: str, amount: int):
        time.sleep(1.2)                            # three times the lease's time to live, blocking the loop
        try:
            take_lease(other, "r1", "999@elsewhere/x")
            seen["taken"] = True
        except RunBusy as exc:
            seen["busy"] = str(exc)
        return {"refund_id": "R1", "status": "submitted"}

    result = run_agent_sync(refund_model(), slow_refund_tools(create_refund), message="退款", run_id="r1",
                            config=RunConfig(store=store))
    assert "taken" not in seen and "busy" in seen
    assert result.status == "completed"
    assert [e["status"] for e in store.effects("r1")] == ["done"]
    assert store.get_run("r1")["status"] == "completed"


def test_a_process_that_lost_its_lease_stops_without_touching_the_ledger(tmp_path, short_lease):
    store = SQLiteStore(tmp_path / "t.db")
    other = SQLiteStore(tmp_path / "t.db")

    def create_refund(order_id: str, amount: int):
        # another process took the run over meanwhile (the heartbeat cannot renew a lease it lost)
        other._change("UPDATE leases SET holder=?, pid=? WHERE run_id=?", ("999@elsewhere/x", 999999, "r1"))
        time.sleep(0.3)
        return {"refund_id": "R1", "status": "submitted"}

    with pytest.raises(LeaseLost):
        run_agent_sync(refund_model(), slow_refund_tools(create_refund), message="退款", run_id="r1",
                       config=RunConfig(store=store))
    assert [e["status"] for e in store.effects("r1")] == ["intent"]    # the new holder resolves it, not us
    assert store.get_run("r1")["status"] == "running"
    types = [e["type"] for e in store.events("r1")]
    assert "tool_result" not in types and "run_finished" not in types
    assert store.lease("r1")["holder"] == "999@elsewhere/x"
