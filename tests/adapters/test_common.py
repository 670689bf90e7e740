"""What the adapters share: the install hint, where a session put pinned text and hints, concurrency."""

from __future__ import annotations

import asyncio

import pytest

from tether.adapters._common import require, split_added
from tether.errors import UsageError
from tether.messages import Message

from .conftest import reference_run


def test_a_missing_framework_names_the_extra_to_install():
    with pytest.raises(UsageError, match=r"pip install 'tether\[pydantic-ai\]'"):
        require("surely_not_installed_framework_xyz", "pydantic-ai")


def test_split_added_finds_pinned_text_and_hints_around_the_original():
    original = [Message(role="system", content="be brief"), Message(role="user", content="hi")]
    sent = [Message(role="system", content="PINNED"), *original, Message(role="system", content="HINT")]
    assert split_added(original, sent) == (["PINNED"], ["HINT"])
    assert split_added(original, original) == ([], [])


async def test_one_agent_object_serves_concurrent_trials(c4_cases, c4_run):
    """The eval harness runs trials of one agent concurrently: per-run state must not leak."""
    pytest.importorskip("pydantic_ai")
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from pydantic_ai import Agent

    from tether.adapters.langchain import LangChainAgent, TetherChatModel
    from tether.adapters.pydantic_ai import PydanticAIAgent, tether_function_model
    from tether.models import resolve_model

    policy = resolve_model("policy:stubborn")
    chat = TetherChatModel(model=policy)
    agents = [PydanticAIAgent(Agent(tether_function_model(policy)), name="pai"),
              LangChainAgent(lambda tools, mw: create_agent(chat, tools=tools, middleware=mw), name="lc")]
    for agent in agents:      # concurrent trials end as each case does alone in tether's own loop
        together = await asyncio.gather(*(c4_run(agent, case, guards="on") for case in c4_cases.values()))
        for case, (score, result) in zip(c4_cases.values(), together):
            status, verdict, reply, _ = await reference_run(case, "stubborn", "on")
            assert (str(result.status), result.reply, score.auto_verdict) == (status, reply, verdict), \
                (agent.name, case.id)
