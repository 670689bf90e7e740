"""Run an agent under test on a C4 case the way the eval harness does."""

from __future__ import annotations

from typing import Any

import pytest

from tether.evals import load_suite
from tether.evals.runner import REFERENCE_SYSTEM_PROMPT, case_world
from tether.evals.scoring import score_trajectory
from tether.guards.stacks import guard_stack
from tether.runtime import AgentTask, RunConfig, Turn, run_task


async def run_c4_case(agent: Any, case: Any, *, guards: str = "off", trial: int = 0, store: Any = None,
                      extra_guards: tuple = ()):
    """(score, RunResult) for one trial of ``case`` with ``agent``."""
    tools, user = case_world(case, seed=trial)
    config = RunConfig(max_steps=case.max_steps, system_prompt=REFERENCE_SYSTEM_PROMPT,
                       guards=(*guard_stack(guards)(), *extra_guards), guards_label=guards, store=store,
                       meta={"suite": case.suite})
    task = AgentTask(message=case.input.message, history=tuple(Turn(t.role, t.content, t.question)
                                                               for t in case.input.history),
                     tools=tools, system_prompt=REFERENCE_SYSTEM_PROMPT, max_steps=case.max_steps, case_id=case.id)
    result = await run_task(agent, task, user=user, config=config, trial=trial,
                            run_id=f"{agent.name.replace(':', '_')}-{guards}-{case.id}-t{trial}")
    return score_trajectory(case, result.trajectory), result


@pytest.fixture(scope="session")
def c4_cases():
    return {c.id: c for c in load_suite("c4")}


@pytest.fixture
def c4_run():
    return run_c4_case
