"""Acme's order-support agent, written with the OpenAI Agents SDK, guarded by tether in one line.

The agent is ordinary Agents SDK: its own instructions, its own function tools
(the orders database is broken today, so ``order_status`` always fails) and
the official ``openai`` client (``AsyncOpenAI()`` reads ``OPENAI_BASE_URL`` and
``OPENAI_API_KEY`` from the environment). The one tether line is
``guard_runs()``: every ``Runner.run`` / ``Runner.run_sync`` goes through
tether's guards and gates, and each run is recorded in ``$TETHER_STORE``
(default ``.tether/tether.db``)::

    python examples/production/openai_agents_guarded.py "Where is my order A100?"
    tether runs list
    tether eval c4 --agent examples/production/openai_agents_guarded.py
"""

from __future__ import annotations

import os
import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from tether.adapters import guard_runs

INSTRUCTIONS = ("You are Acme's order-support agent. Look orders up with order_status before you answer, "
                "quote the refund policy when asked, and never promise what the tools did not confirm.")


@function_tool
def order_status(order_id: str) -> str:
    """The status of an order (shipped, delivered, ...)."""
    raise RuntimeError(f"order_status failed for {order_id}: the orders database rejected the query")


@function_tool
def refund_policy() -> str:
    """Acme's refund policy."""
    return "Refunds within 30 days of delivery, to the original payment method."


set_tracing_disabled(True)      # no trace export to the platform
agent = Agent(
    name="acme-support",
    instructions=INSTRUCTIONS,
    tools=[order_status, refund_policy],
    model=OpenAIChatCompletionsModel(model=os.environ.get("SUPPORT_MODEL", "gpt-4.1-mini"), openai_client=AsyncOpenAI()),
)
guard_runs()   # tether

if __name__ == "__main__":
    print(Runner.run_sync(agent, " ".join(sys.argv[1:]) or "Where is my order A100?").final_output)
