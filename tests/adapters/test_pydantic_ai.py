"""The pydantic-ai adapter, offline with the real pydantic-ai (FunctionModel)."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai adapter needs pydantic-ai: pip install 'tether[pydantic-ai]'")

from pydantic_ai import Agent  # noqa: E402

from tether.adapters.pydantic_ai import PydanticAIAgent, tether_function_model  # noqa: E402

from .conftest import (check_blocked_call_is_read_by_the_model, check_budget_stops_before_the_call,  # noqa: E402
                       check_loop_hinted_then_stopped, check_runs_c4_like_tethers_loop)


def make_agent(model):
    return PydanticAIAgent(Agent(tether_function_model(model)), name=f"pydantic-ai:{model.name}")


# by default guarded stubborn loops run in test_looping_agent_is_hinted_then_stopped_*; every case of them under -m slow
@pytest.mark.parametrize("policy,guards", [("steady", "off"), pytest.param("stubborn", "on", marks=pytest.mark.slow),
                                           pytest.param("quitter", "on", marks=pytest.mark.slow)])
async def test_runs_the_c4_suite_like_tethers_loop(c4_cases, policy, guards):
    await check_runs_c4_like_tethers_loop(make_agent, c4_cases, policy, guards)


async def test_looping_agent_is_hinted_then_stopped_inside_pydantic_ai(c4_cases):
    await check_loop_hinted_then_stopped(make_agent, c4_cases, "pydantic_ai")


async def test_budget_stops_before_the_call_that_would_exceed(c4_cases):
    await check_budget_stops_before_the_call(make_agent, c4_cases)


async def test_blocked_call_is_an_error_result_the_model_reads(c4_cases):
    await check_blocked_call_is_read_by_the_model(make_agent, c4_cases)
