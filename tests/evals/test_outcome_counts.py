"""One run with executed, mocked, intercepted, blocked and ledger-answered
tool calls: the live session, `tether guard-check`, the results document and
the report count every outcome the same (issue 18: one vocabulary, the
Outcome on the event)."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from tether.cli import app
from tether.events import EVENT_ADAPTER, Trajectory
from tether.store import SQLiteStore

TOOLS = '''\
from tether.tools import ToolResult, ToolSet, tool


@tool(description="订单查询 Look up an order.")
def lookup_order(order_id: str) -> dict:
    return {"order_id": order_id, "status": "已签收"}


@tool(description="退款 Refund an order.", side_effect=True)
def create_refund(order_id: str, amount: int):
    return ToolResult.failure("the bank refused the refund", "refund_refused")


@tool(description="物流查询 Track a parcel.")
def track_parcel(order_id: str) -> dict:
    return {"order_id": order_id, "where": "上海"}


@tool(description="库存查询 Check stock.")
def check_stock(sku: str) -> dict:
    return {"sku": sku, "stock": 3}


def toolset():
    return ToolSet([lookup_order, create_refund, track_parcel, check_stock])
'''

MODEL = '''\
from tether import Decision, ScriptedModel


def make():
    return ScriptedModel([
        Decision.call("lookup_order", {"order_id": "A1001"}, id="a"),
        Decision.call("check_stock", {"sku": "S-1"}, id="b"),
        Decision.call("create_refund", {"order_id": "A1001", "amount": 100}, id="c"),
        Decision.call("create_refund", {"order_id": "A1001", "amount": 100}, id="d"),   # the ledger answers
    ] + [Decision.call("track_parcel", {"order_id": "A1001"}, id=f"t{i}") for i in range(6)]
      + [Decision.final("查好了")] * 3, name="outcome-script")
'''

CASE = """\
id: OUT-01
title: every outcome once
dimension: ORDERS
input:
  message: 查一下订单 A1001，退款 100 元，再查物流
toolset: "shop_outcomes:toolset"
tools: [lookup_order, create_refund, track_parcel, check_stock]
max_steps: 20
tool_config:
- type: tool_intercept
  intercept_tool: track_parcel
  inject_tool_result: {is_error: true, content: "timeout", error_type: timeout}
- type: tool_mock
  mocked_calls:
  - tool: check_stock
    inject_result: {is_error: false, content: '{"sku": "S-1", "stock": 0}'}
criteria:
- id: looked
  check: tool_called
  tools: [lookup_order]
"""


def test_session_guard_check_results_and_report_agree_on_every_outcome(tmp_path, monkeypatch):
    (tmp_path / "shop_outcomes.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "outcome_model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "out-01.yaml").write_text(CASE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    store = tmp_path / "s.db"
    runner = CliRunner()
    out = runner.invoke(app, ["eval", "out-01.yaml", "--model", "outcome_model.py:make", "--guards", "on",
                              "--store", str(store), "--json", "r.json", "-q"], catch_exceptions=False)
    assert out.exit_code in (0, 3), out.output
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    trial = doc["runs"][0]["cases"][0]["trials"][0]

    # the session: the stored record, and its own counter of executed calls
    t = Trajectory(EVENT_ADAPTER.validate_python(e) for e in SQLiteStore(store).events(trial["run_id"]))
    session = {k: n for k, n in t.outcome_counts().items() if n}
    assert {"executed", "mocked", "intercepted", "blocked", "ledger"} <= set(session), session
    executed = sum(n for k, n in session.items() if k in ("executed", "failed", "mocked", "intercepted", "injected"))

    # the results document
    assert trial["counters"]["outcomes"] == session
    assert trial["counters"]["tool_calls"] == executed

    # guard-check
    gc = runner.invoke(app, ["guard-check", trial["run_id"], "--store", str(store), "--json"], catch_exceptions=False)
    gdoc = json.loads(gc.output)
    assert gdoc["outcomes"] == session and gdoc["tool_calls"] == executed

    # the report (HTML), from the results document
    rep = runner.invoke(app, ["report", "r.json", "--html", "report.html", "--store", str(store)],
                        catch_exceptions=False)
    assert rep.exit_code == 0, rep.output
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    span = re.search(r'<span class="outcomes">(.*?)</span>', html).group(1)
    shown = {label: int(n) for label, n in re.findall(r"([a-z ]+?) (\d+)(?: · |$)", span)}
    labels = {"ledger": "answered from the ledger"}
    assert shown == {labels.get(k, k): n for k, n in session.items()}
    assert f"{executed} calls executed" in html
