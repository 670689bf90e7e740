"""Acme's order-support agent, written with pydantic-ai, guarded by tether in one line.

The agent is ordinary pydantic-ai: its own instructions, its own tools (the
order service is down today, so ``order_status`` always fails), and the
official ``openai`` client, which reads ``OPENAI_BASE_URL`` and
``OPENAI_API_KEY`` from the environment. The one tether line is the
``TetherGuard()`` capability: every model request and tool call goes through
tether's guards and gates, and each run is recorded in ``$TETHER_STORE``
(default ``.tether/tether.db``)::

    python examples/production/pydantic_ai_guarded.py "Where is my order A100?"
    tether runs list
    tether eval c4 --agent examples/production/pydantic_ai_guarded.py
"""

from __future__ import annotations

import os
import sys

from openai import AsyncOpenAI
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from tether.adapters import TetherGuard

INSTRUCTIONS = ("You are Acme's order-support agent. Look orders up with order_status before you answer, "
                "quote the refund policy when asked, and never promise what the tools did not confirm.")


def order_status(order_id: str) -> str:
    """The status of an order (shipped, delivered, ...)."""
    raise ModelRetry(f"order_status failed for {order_id}: the orders database rejected the query")


def refund_policy() -> str:
    """Acme's refund policy."""
    return "Refunds within 30 days of delivery, to the original payment method."


model = OpenAIChatModel(os.environ.get("SUPPORT_MODEL", "gpt-4.1-mini"),
                        provider=OpenAIProvider(openai_client=AsyncOpenAI()))
agent = Agent(
    model,
    instructions=INSTRUCTIONS,
    tools=[order_status, refund_policy],
    retries=20,                      # let the model try again when a tool asks it to
    capabilities=[TetherGuard()],    # tether
)

if __name__ == "__main__":
    print(agent.run_sync(" ".join(sys.argv[1:]) or "Where is my order A100?").output)
