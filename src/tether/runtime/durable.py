"""Durable runs: resume a stored run from its last checkpoint.

A checkpoint is the session's :class:`~tether.runtime.session.RunState` (the
messages, the step, usage and counters, hints not yet delivered, the calls of
the current decision not yet made) plus every guard's state and the
simulated user's state. The side-effect ledger and approvals live in the
store beside it (see :mod:`tether.runtime.gates`). Events are written with
each checkpoint; on resume, events recorded after the last checkpoint are
dropped (their work is redone, and the ledger keeps side effects from
happening twice).
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..events import EVENT_ADAPTER, RunResumed, Trajectory
from ..models import Model
from ..tools import ToolSet
from .loop import AgentTask, LoopAgent, drive
from .session import RunConfig, RunResult, RunSession, SimulatedUser

# Interrupted (running: the process died), paused for a human, or ended by an error.
RESUMABLE = frozenset({"running", "needs_human", "unknown", "error"})


def reopen(run_id: str, tools: ToolSet, *, store: Any, model_name: str, user: SimulatedUser | None = None,
           config: RunConfig = RunConfig()) -> RunSession:
    """A session continuing a stored run from its last checkpoint."""
    run = store.get_run(run_id)
    if run is None:
        raise UsageError(f"no run {run_id!r} in {store.path}")
    if run["status"] not in RESUMABLE:
        raise UsageError(f"run {run_id!r} already ended as {run['status']}; only an interrupted or paused run "
                         f"({', '.join(sorted(RESUMABLE))}) can be resumed")
    ckpt = store.latest_checkpoint(run_id)
    if ckpt is None:
        raise UsageError(f"run {run_id!r} has no checkpoint to resume from")
    if config.store is not store:
        from dataclasses import replace

        config = replace(config, store=store)
    events = store.events(run_id)
    keep = ckpt["event_count"]
    dropped = max(0, len(events) - keep)
    store.truncate_events(run_id, keep)
    store.mark_running(run_id)
    offset = events[keep - 1]["at_ms"] if keep else 0.0
    trajectory = Trajectory(EVENT_ADAPTER.validate_python(e) for e in events[:keep])
    session = RunSession(run_id=run_id, model_name=model_name, tools=tools, config=config, user=user,
                         trajectory=trajectory, offset_ms=offset)
    session.restore(ckpt["state"])
    session.add(RunResumed(checkpoint=ckpt["n"], step=ckpt["step"], phase=ckpt["phase"], dropped_events=dropped))
    return session


async def resume_agent(run_id: str, model: Model, tools: ToolSet, *, store: Any, user: SimulatedUser | None = None,
                       config: RunConfig = RunConfig()) -> RunResult:
    """Continue a stored run from its last checkpoint with the same model, tools and guards.

    Side effects that completed before the interruption are answered from the
    ledger, never re-run; one whose outcome is unknown is resolved through the
    tool's status query or idempotency key, or ends the run as ``unknown``."""
    agent = LoopAgent(model)
    session = reopen(run_id, tools, store=store, model_name=agent.name, user=user, config=config)
    return await drive(session, agent, AgentTask(tools=tools, system_prompt=config.system_prompt,
                                                 max_steps=config.max_steps))
