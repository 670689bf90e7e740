"""A pydantic-ai agent under test, runnable offline from the CLI:

    tether eval c4 --agent examples/agents/pydantic_ai_agent.py:build
    TETHER_EXAMPLE_POLICY=stubborn tether eval c4 --agent examples/agents/pydantic_ai_agent.py:build --guards on

The agent is an ordinary ``pydantic_ai.Agent``. Its model is pydantic-ai's own
``FunctionModel``, deciding with one of tether's calibration policies so the
run is offline and deterministic (``steady`` by default; ``stubborn`` repeats a
failing call, so ``--guards on`` stops it inside pydantic-ai's loop). Swap in
any real model (``Agent("openai:gpt-4.1-mini")``) and nothing else changes.
"""

from __future__ import annotations

import os

from pydantic_ai import Agent

from tether.adapters import PydanticAIAgent, tether_function_model
from tether.models import resolve_model


def build(policy: str | None = None) -> PydanticAIAgent:
    policy = policy or os.environ.get("TETHER_EXAMPLE_POLICY", "steady")
    model = tether_function_model(resolve_model(f"policy:{policy}"), name=f"function:{policy}")
    return PydanticAIAgent(Agent(model), name=f"pydantic-ai:{policy}")
