"""A plan-mode run and a pydantic-ai agent run that can be killed anywhere
(test_crash_resume.py runs them in a subprocess and continues them with
`tether resume RUN --agent this_file:factory --tools this_file:tools`).

    python _crash_durable.py plan|pydantic STORE RUN_ID     (env WORLD_DB, KILL_AT=<point>)

The external system is _crash_agent.py's SQLite file: refunds and e-mails by
idempotency key, tickets by business fields (found again by a status query).
Both runs make two intended, identical refunds of A100 plus one e-mail and
one ticket. Kill points: ``model:N`` (before the N-th model answer),
``TOOL#K:before|after`` (inside the K-th call of a side-effecting tool, around
its external write), ``layer:TOOL#K`` (returned, not yet recorded),
``get_order:before``, ``check_refund:after``, ``event:N`` (right after the
batch holding event N was persisted).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _crash_agent import KillingStore, external, maybe_die  # noqa: E402

from tether.guards.goal import Acceptance, GoalSpec  # noqa: E402
from tether.messages import Decision  # noqa: E402
from tether.models import FunctionModel  # noqa: E402
from tether.runtime import AgentTask, PlanExecuteReview, RunConfig, run_task  # noqa: E402
from tether.tools import Tool, ToolResult, ToolSet  # noqa: E402

WORLD = os.environ.get("WORLD_DB", "world.db")
CALLS: Counter = Counter()

PLAN = [
    ("get_order", {"order_id": "A100"}),
    ("check_refund", {"order_id": "A100"}),
    ("create_refund", {"order_id": "A100", "amount": 100}),
    ("create_refund", {"order_id": "A100", "amount": 100}),      # the second, intended refund
    ("send_email", {"recipient": "user-001@example.com", "subject": "退款已提交"}),
    ("create_ticket", {"order_id": "A100", "title": "退款跟进"}),
]


def _schema(**props: str) -> dict:
    return {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}


def tools() -> ToolSet:
    db = external(WORLD)

    def counted(name: str) -> str:
        CALLS[name] += 1
        return f"{name}#{CALLS[name]}"

    def get_order(order_id: str):
        maybe_die("get_order:before")
        return {"order_id": order_id, "status": "paid", "total_amount": 200}

    def check_refund(order_id: str):
        result = {"order_id": order_id, "eligible": True}
        maybe_die("check_refund:after")
        return result

    def create_refund(order_id: str, amount: int, idempotency_key: str):
        me = counted("create_refund")
        maybe_die(f"{me}:before")
        db.execute("INSERT OR IGNORE INTO refunds VALUES (?,?,?)", (idempotency_key, order_id, amount))
        maybe_die(f"{me}:after")
        return {"refund_id": "R-" + idempotency_key[-6:], "status": "submitted"}

    def send_email(recipient: str, subject: str, idempotency_key: str):
        me = counted("send_email")
        maybe_die(f"{me}:before")
        db.execute("INSERT OR IGNORE INTO emails VALUES (?,?,?)", (idempotency_key, recipient, subject))
        maybe_die(f"{me}:after")
        return {"sent": True}

    def ticket_status(key: str, args: dict):
        row = db.execute("SELECT id FROM tickets WHERE order_id=? AND title=?", (args["order_id"], args["title"])).fetchone()
        return ToolResult.success({"ticket_id": row[0]}) if row else None

    def create_ticket(order_id: str, title: str):
        me = counted("create_ticket")
        maybe_die(f"{me}:before")
        cur = db.execute("INSERT INTO tickets (order_id, title) VALUES (?,?)", (order_id, title))
        maybe_die(f"{me}:after")
        return {"ticket_id": cur.lastrowid}

    return ToolSet([
        Tool("get_order", "查询订单", _schema(order_id="string"), get_order),
        Tool("check_refund", "检查退款资格", _schema(order_id="string"), check_refund),
        Tool("create_refund", "发起退款", _schema(order_id="string", amount="integer"), create_refund,
             side_effect=True, idempotency_param="idempotency_key"),
        Tool("send_email", "发送邮件", _schema(recipient="string", subject="string"), send_email,
             side_effect=True, idempotency_param="idempotency_key"),
        Tool("create_ticket", "创建工单", _schema(order_id="string", title="string"), create_ticket,
             side_effect=True, status_query=ticket_status),
    ], layers=[KillAfterReturn()])


class KillAfterReturn:
    async def __call__(self, name, arguments, call_next):
        result = await call_next(name, arguments)
        maybe_die(f"layer:{name}#{CALLS[name]}" if name in CALLS else f"layer:{name}")
        return result


def _planner(request):
    maybe_die(f"model:{request.step}")
    import json
    return Decision.final(json.dumps([{"step": i, "action": name, "tool": name, "arguments": args}
                                      for i, (name, args) in enumerate(PLAN, 1)], ensure_ascii=False))


def plan_agent() -> PlanExecuteReview:
    goal = GoalSpec(task="退掉订单 A100 的两笔 100 元", acceptance=[
        Acceptance(id="refunded", tool="create_refund"),
        Acceptance(id="emailed", tool="send_email"),
        Acceptance(id="ticket", tool="create_ticket")])
    return PlanExecuteReview(FunctionModel(_planner, name="crash-planner"), goal)


def _decide(request):
    done = sum(1 for m in request.messages if m.role == "tool")
    maybe_die(f"model:{done + 1}")
    if done < len(PLAN):
        name, args = PLAN[done]
        return Decision.call(name, args, id=f"c{done}")
    return Decision.final("退款已提交两笔，已通知用户并创建工单。")


def pydantic_agent():
    from pydantic_ai import Agent

    from tether.adapters.pydantic_ai import PydanticAIAgent, tether_function_model

    return PydanticAIAgent(Agent(tether_function_model(FunctionModel(_decide, name="crash-script"))),
                           name="pydantic-ai:crash-script", ask_user=False)


async def main(kind: str, store_path: str, run_id: str) -> int:
    store = KillingStore(store_path)
    agent = plan_agent() if kind == "plan" else pydantic_agent()
    meta = {"mode": "plan_execute_review"} if kind == "plan" else {}
    result = await run_task(agent, AgentTask(message="请帮我退掉订单 A100 的两笔 100 元", tools=tools()),
                            config=RunConfig(store=store, meta=meta), run_id=run_id)
    print(result.status)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:4])))


__all__ = ["tools", "plan_agent", "pydantic_agent", "signal", "sqlite3"]
