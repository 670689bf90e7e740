"""Acme's order-support agent, written with LangChain v1, guarded by tether in one line.

The agent is ordinary LangChain: ``create_agent`` with its own system prompt,
its own tools (the orders database is broken today, so ``order_status``
always fails) and ``ChatOpenAI``, which uses the official ``openai`` client
and reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` from the environment.
The one tether line is the ``TetherMiddleware()`` middleware: every model call
and tool call goes through tether's guards and gates, and each run is
recorded in ``$TETHER_STORE`` (default ``.tether/tether.db``)::

    python examples/production/langchain_guarded.py "Where is my order A100?"
    tether runs list
    tether eval c4 --agent examples/production/langchain_guarded.py
"""

from __future__ import annotations

import os
import sys

from langchain.agents import create_agent
from langchain_core.tools import ToolException, tool
from langchain_openai import ChatOpenAI

from tether.adapters import TetherMiddleware

SYSTEM_PROMPT = ("You are Acme's order-support agent. Look orders up with order_status before you answer, "
                 "quote the refund policy when asked, and never promise what the tools did not confirm.")


@tool
def order_status(order_id: str) -> str:
    """The status of an order (shipped, delivered, ...)."""
    raise ToolException(f"order_status failed for {order_id}: the orders database rejected the query")


order_status.handle_tool_error = True     # the model reads the error and may try again


@tool
def refund_policy() -> str:
    """Acme's refund policy."""
    return "Refunds within 30 days of delivery, to the original payment method."


agent = create_agent(
    ChatOpenAI(model=os.environ.get("SUPPORT_MODEL", "gpt-4.1-mini")),
    tools=[order_status, refund_policy],
    system_prompt=SYSTEM_PROMPT,
    middleware=[TetherMiddleware()],   # tether
)

if __name__ == "__main__":
    question = " ".join(sys.argv[1:]) or "Where is my order A100?"
    state = agent.invoke({"messages": [{"role": "user", "content": question}]})
    print(state["messages"][-1].content)
