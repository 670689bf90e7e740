"""``run_agent``: one conversation through tether's own loop, every step recorded.

Whatever happens (a tool raising, a model error, a guard stopping the run,
the step cap) the trajectory ends with a ``run_finished`` event carrying a
terminal status and the reply so far (see :func:`tether.runtime.loop.drive`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

from ..errors import UsageError
from ..models import Model
from ..tools import ToolSet
from .loop import AgentTask, LoopAgent, drive
from .session import RunConfig, RunResult, RunSession, SimulatedUser, Turn


async def run_agent(
    model: Model,
    tools: ToolSet,
    *,
    message: str | None = None,
    history: Sequence[Turn] = (),
    user: SimulatedUser | None = None,
    config: RunConfig = RunConfig(),
    run_id: str | None = None,
    case_id: str | None = None,
    trial: int = 0,
) -> RunResult:
    """Run one conversation to a terminal status. Never raises for run
    failures (they end as ``error``); raises :class:`UsageError` for misuse
    (for example a scripted model called once too often) and RunAborted
    signals (replay mismatches), after recording them."""
    agent = LoopAgent(model)
    return await run_task(agent, AgentTask(message=message, history=tuple(history), tools=tools,
                                           system_prompt=config.system_prompt, max_steps=config.max_steps,
                                           case_id=case_id),
                          user=user, config=config, run_id=run_id, trial=trial)


async def run_task(agent: Any, task: AgentTask, *, user: SimulatedUser | None = None, config: RunConfig = RunConfig(),
                   run_id: str | None = None, trial: int = 0) -> RunResult:
    """Run any agent under test (tether's loop, a framework adapter, your own)
    on ``task`` with the harness's tools, guards and gates; one record."""
    session = RunSession.start(model_name=getattr(agent, "name", type(agent).__name__), tools=task.tools,
                               config=config, user=user, run_id=run_id, case_id=task.case_id, trial=trial)
    session.conversation(task.message, task.history)
    return await drive(session, agent, task)


def run_agent_sync(*args: Any, **kwargs: Any) -> RunResult:
    """Synchronous wrapper for scripts and notebooks; refuses to nest in a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_agent(*args, **kwargs))
    raise UsageError("run_agent_sync() called inside a running event loop; use `await run_agent(...)` instead")


__all__ = ["RunConfig", "RunResult", "SimulatedUser", "Turn", "run_agent", "run_agent_sync", "run_task"]
