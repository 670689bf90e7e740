"""A run that can be killed anywhere: used by test_crash.py in a subprocess.

    python _crash_agent.py start|resume STORE EXTERNAL RUN_ID     (env KILL_AT=<point>)

The external system is a SQLite file: refunds and e-mails are written by
idempotency key (INSERT OR IGNORE, as payment APIs do), tickets by business
fields, found again by the ticket tool's status query. Kill points are places
where this process SIGKILLs itself: inside the model before a decision
(model:N), inside a tool before or after its external write (TOOL:before /
TOOL:after), after a tool returned but before the run loop recorded it
(layer:TOOL), and right after the batch holding the Nth event was persisted (event:N).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys

from tether.messages import Decision
from tether.models import FunctionModel
from tether.runtime import RunConfig, run_agent
from tether.runtime.durable import resume_agent
from tether.store import open_store
from tether.tools import Tool, ToolResult, ToolSet, tool

KILL_AT = os.environ.get("KILL_AT", "")


def maybe_die(point: str) -> None:
    if point == KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)


def external(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.executescript("""
        CREATE TABLE IF NOT EXISTS refunds (key TEXT PRIMARY KEY, order_id TEXT, amount INTEGER);
        CREATE TABLE IF NOT EXISTS emails (key TEXT PRIMARY KEY, recipient TEXT, subject TEXT);
        CREATE TABLE IF NOT EXISTS tickets (id INTEGER PRIMARY KEY, order_id TEXT, title TEXT);
    """)
    return db


def build_tools(ext_path: str) -> ToolSet:
    db = external(ext_path)

    @tool(description="查询订单")
    def get_order(order_id: str):
        maybe_die("get_order:before")
        return {"order_id": order_id, "status": "paid", "total_amount": 19900}

    @tool(description="检查退款资格")
    def check_refund(order_id: str):
        result = {"order_id": order_id, "eligible": True}
        maybe_die("check_refund:after")
        return result

    @tool(description="发起退款", side_effect=True, idempotency_param="idempotency_key")
    def create_refund(order_id: str, amount: int, idempotency_key: str):
        maybe_die("create_refund:before")
        db.execute("INSERT OR IGNORE INTO refunds VALUES (?,?,?)", (idempotency_key, order_id, amount))
        maybe_die("create_refund:after")
        return {"refund_id": "R-" + idempotency_key[-6:], "status": "submitted"}

    @tool(description="发送邮件", side_effect=True, idempotency_param="idempotency_key")
    def send_email(recipient: str, subject: str, idempotency_key: str):
        maybe_die("send_email:before")
        db.execute("INSERT OR IGNORE INTO emails VALUES (?,?,?)", (idempotency_key, recipient, subject))
        maybe_die("send_email:after")
        return {"sent": True}

    def ticket_status(key: str, args: dict):
        row = db.execute("SELECT id FROM tickets WHERE order_id=? AND title=?", (args["order_id"], args["title"])).fetchone()
        return ToolResult.success({"ticket_id": row[0]}) if row else None

    def create_ticket(order_id: str, title: str):
        maybe_die("create_ticket:before")
        cur = db.execute("INSERT INTO tickets (order_id, title) VALUES (?,?)", (order_id, title))
        maybe_die("create_ticket:after")
        return {"ticket_id": cur.lastrowid}

    ticket = Tool("create_ticket", "创建工单", {"type": "object", "properties": {"order_id": {"type": "string"},
                  "title": {"type": "string"}}, "required": ["order_id", "title"]}, create_ticket,
                  side_effect=True, status_query=ticket_status)
    return ToolSet([get_order, check_refund, create_refund, send_email, ticket], layers=[KillAfterReturn()])


class KillAfterReturn:
    async def __call__(self, name, arguments, call_next):
        result = await call_next(name, arguments)
        maybe_die(f"layer:{name}")
        return result


PLAN = [
    ("get_order", {"order_id": "A100"}),
    ("check_refund", {"order_id": "A100"}),
    ("create_refund", {"order_id": "A100", "amount": 19900}),
    ("send_email", {"recipient": "user-001@example.com", "subject": "退款已提交"}),
    ("create_ticket", {"order_id": "A100", "title": "退款跟进"}),
]


def decide(request):
    done = sum(1 for m in request.messages if m.role == "tool")
    maybe_die(f"model:{request.step}")
    if done < len(PLAN):
        name, args = PLAN[done]
        return Decision.call(name, args)
    return Decision.final("退款已提交，已通知用户并创建工单。")


class KillingStore:
    """Any store (a SQLite file or a postgresql:// URL) that dies right after the batch
    holding event N was persisted (events are written with each checkpoint, and at the
    end of the run)."""

    def __init__(self, where):
        self._inner = open_store(where)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def append_events(self, run_id, events):
        self._inner.append_events(run_id, events)
        for seq, _ in events:
            maybe_die(f"event:{seq}")

    def save_checkpoint(self, run_id, step, phase, event_count, state, events=()):
        n = self._inner.save_checkpoint(run_id, step, phase, event_count, state, events)
        for seq, _ in events:
            maybe_die(f"event:{seq}")
        return n


async def main(mode: str, store_path: str, ext_path: str, run_id: str) -> int:
    store = KillingStore(store_path)
    tools = build_tools(ext_path)
    model = FunctionModel(decide, name="crash-script")
    config = RunConfig(store=store, max_steps=20)
    if mode == "start":
        result = await run_agent(model, tools, message="请帮我退掉订单 A100", config=config, run_id=run_id)
    else:
        result = await resume_agent(run_id, model, tools, store=store, config=config)
    print(result.status)
    return 0 if result.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:5])))
