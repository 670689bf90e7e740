"""The OpenAI Agents SDK adapter, offline with the real SDK: its OpenAIChatCompletionsModel's
client points at tether's loopback fake OpenAI server, which answers with a tether Model."""

from __future__ import annotations

import pytest

pytest.importorskip("agents", reason="the Agents SDK adapter needs openai-agents: pip install 'tether[openai-agents]'")

from agents import Agent, OpenAIChatCompletionsModel, RunConfig  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from tether.adapters.openai_agents import OpenAIAgentsAgent, tether_responder  # noqa: E402
from tether.testing.fake_openai import FakeOpenAIServer  # noqa: E402

from .conftest import (check_blocked_call_is_read_by_the_model, check_budget_stops_before_the_call,  # noqa: E402
                       check_loop_hinted_then_stopped, check_runs_c4_like_tethers_loop)


@pytest.fixture
def make_agent():
    servers: list[FakeOpenAIServer] = []

    def make(model):
        server = FakeOpenAIServer(responder=tether_responder(model)).start()
        servers.append(server)
        client = AsyncOpenAI(base_url=server.base_url, api_key="offline", max_retries=0)
        agent = Agent(name="assistant", model=OpenAIChatCompletionsModel(model="fake-model", openai_client=client))
        return OpenAIAgentsAgent(agent, run_config=RunConfig(tracing_disabled=True), name=f"openai-agents:{model.name}")

    yield make
    for s in servers:
        assert not s.errors, s.errors
        s.stop()


# by default guarded stubborn loops run in test_looping_agent_is_hinted_then_stopped_*; every case of them under -m slow
@pytest.mark.parametrize("policy,guards", [("steady", "off"), pytest.param("stubborn", "on", marks=pytest.mark.slow),
                                           pytest.param("quitter", "on", marks=pytest.mark.slow)])
async def test_runs_the_c4_suite_like_tethers_loop(c4_cases, make_agent, policy, guards):
    await check_runs_c4_like_tethers_loop(make_agent, c4_cases, policy, guards)


async def test_looping_agent_is_hinted_then_stopped_inside_the_sdk(c4_cases, make_agent):
    await check_loop_hinted_then_stopped(make_agent, c4_cases, "agents")


async def test_budget_stops_before_the_call_that_would_exceed(c4_cases, make_agent):
    await check_budget_stops_before_the_call(make_agent, c4_cases)


async def test_blocked_call_is_an_error_result_the_model_reads(c4_cases, make_agent):
    await check_blocked_call_is_read_by_the_model(make_agent, c4_cases)

