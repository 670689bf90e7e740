"""A LangChain v1 agent under test, runnable offline from the CLI:

    tether eval c4 --agent examples/agents/langchain_agent.py:build
    TETHER_EXAMPLE_POLICY=stubborn tether eval c4 --agent examples/agents/langchain_agent.py:build --guards on

The agent is built with ``langchain.agents.create_agent``; tether's
:class:`~tether.adapters.TetherMiddleware` is added to its middleware
for each run. The chat model is :class:`~tether.adapters.TetherChatModel`
deciding with one of tether's calibration policies (``steady`` by default;
``stubborn`` repeats a failing call, so ``--guards on`` stops it inside
LangChain's loop). Swap in any chat model (``init_chat_model("openai:gpt-4.1-mini")``).
"""

from __future__ import annotations

import os

from langchain.agents import create_agent

from tether.adapters import LangChainAgent, TetherChatModel
from tether.models import resolve_model


def build(policy: str | None = None) -> LangChainAgent:
    policy = policy or os.environ.get("TETHER_EXAMPLE_POLICY", "steady")
    model = TetherChatModel(model=resolve_model(f"policy:{policy}"))
    return LangChainAgent(lambda tools, middleware: create_agent(model, tools=tools, middleware=middleware),
                          name=f"langchain:{policy}")
