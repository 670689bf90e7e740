"""An OpenAI Agents SDK agent under test, runnable offline from the CLI:

    tether eval c4 --agent examples/agents/openai_agents_agent.py:build
    TETHER_EXAMPLE_POLICY=stubborn tether eval c4 --agent examples/agents/openai_agents_agent.py:build --guards on

The agent is an ordinary ``agents.Agent`` with the SDK's own
``OpenAIChatCompletionsModel``; its ``AsyncOpenAI`` client points at tether's
loopback fake OpenAI server (127.0.0.1, an ephemeral port), which answers each
request with one of tether's calibration policies (``steady`` by default;
``stubborn`` repeats a failing call, so ``--guards on`` stops it inside the
SDK's loop). Point the client at the real API and nothing else changes.
"""

from __future__ import annotations

import atexit
import os

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, set_tracing_disabled
from openai import AsyncOpenAI

from tether.adapters import OpenAIAgentsAgent, tether_responder
from tether.models import resolve_model
from tether.testing import FakeOpenAIServer


def build(policy: str | None = None) -> OpenAIAgentsAgent:
    policy = policy or os.environ.get("TETHER_EXAMPLE_POLICY", "steady")
    server = FakeOpenAIServer(responder=tether_responder(resolve_model(f"policy:{policy}"))).start()
    atexit.register(server.stop)
    set_tracing_disabled(True)      # offline: no trace export
    client = AsyncOpenAI(base_url=server.base_url, api_key="offline-fake-key")
    agent = Agent(name="assistant", model=OpenAIChatCompletionsModel(model="fake-model", openai_client=client))
    return OpenAIAgentsAgent(agent, run_config=RunConfig(tracing_disabled=True), name=f"openai-agents:{policy}")
