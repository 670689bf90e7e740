"""Durable runs: resume a stored run from its last checkpoint.

The session writes the checkpoints itself, at the boundaries it owns (before
each model request, after a decision with tool calls, before and after each
tool call), so every agent driving a session is durable: tether's loop,
plan-execute-review and the framework adapters. A checkpoint is the
session's :class:`~tether.runtime.session.RunState` (the messages, the step,
usage and counters, hints not yet delivered, the calls of the current
decision not yet made, a strategy's own data such as plan mode's plan) plus
every guard's state and the simulated user's state. The side-effect ledger
and approvals live in the store beside it (see :mod:`tether.runtime.gates`).
Events are written with each checkpoint; on resume, events recorded after
the last checkpoint are dropped (their work is redone, and the ledger keeps
side effects from happening twice).

Two ways to continue (:func:`resume_task` picks by the agent):

* **from the state**: an agent whose whole state is the session's
  (``resumes_from_state``: tether's loop, plan mode) continues from the
  restored checkpoint;
* **by replay**: any other agent (a framework's loop keeps its state inside
  the framework) runs again from the start; the session answers its model
  requests with the recorded responses and its tool calls with the recorded
  results, writing nothing, up to the end of the record; then the run goes
  live (``run_resumed`` marks the spot). See docs/durable.md.
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..events import EVENT_ADAPTER, AgentMessage, RunResumed, RunStarted, Trajectory, UserMessage
from ..models import Model
from ..tools import ToolSet
from .loop import AgentTask, LoopAgent, drive
from .session import _DRIVING, RunConfig, RunResult, RunSession, SimulatedUser, Turn, new_holder, take_lease

# Interrupted (running: the process died), paused for a human, or ended by an error.
RESUMABLE = frozenset({"running", "needs_human", "unknown", "error"})


def reopen(run_id: str, tools: ToolSet, *, store: Any, model_name: str, user: SimulatedUser | None = None,
           config: RunConfig = RunConfig(), replay: bool = False) -> RunSession:
    """A session continuing a stored run from its last checkpoint (``replay``:
    re-reaching it by replay, see the module docstring). The run's lease is
    taken first: a second process resuming the same run at the same time gets
    RunBusy before it reads or changes anything."""
    run = store.get_run(run_id)
    if run is None:
        raise UsageError(f"no run {run_id!r} in {store.path}")
    holder = new_holder()
    take_lease(store, run_id, holder)
    try:
        return _reopen(run_id, tools, store=store, model_name=model_name, user=user, config=config, holder=holder,
                       replay=replay)
    except BaseException:
        store.release_lease(run_id, holder)
        _DRIVING.discard(holder)
        raise


def _reopen(run_id: str, tools: ToolSet, *, store: Any, model_name: str, user: SimulatedUser | None,
            config: RunConfig, holder: str, replay: bool) -> RunSession:
    run = store.get_run(run_id)
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
    kept = [EVENT_ADAPTER.validate_python(e) for e in events[:keep]]
    resumed = RunResumed(checkpoint=ckpt["n"], step=ckpt["step"], phase=ckpt["phase"], dropped_events=dropped)
    if not replay:
        session = RunSession(run_id=run_id, model_name=model_name, tools=tools, config=config, user=user,
                             trajectory=Trajectory(kept), offset_ms=offset, holder=holder)
        session.restore(ckpt["state"])
        session.add(resumed)
        return session
    start = _conversation_end(kept)
    session = RunSession(run_id=run_id, model_name=model_name, tools=tools, config=config, user=user,
                         trajectory=Trajectory(kept[:start]), offset_ms=offset, holder=holder)
    session._persisted = keep                 # the rest is stored already: re-reached, not written again
    message, history = recorded_conversation(kept)
    session.conversation(message, history, record=False)
    resumed.phase = "replayed"
    session.begin_replay(kept[start:], resumed, (ckpt["state"] or {}).get("user"))
    return session


def _conversation_end(events: list) -> int:
    """Where the agent's own events begin: after run_started and the conversation it was given."""
    for i, e in enumerate(events):
        if not (isinstance(e, RunStarted) or (isinstance(e, UserMessage) and e.source in ("input", "history"))
                or (isinstance(e, AgentMessage) and e.source == "history")):
            return i
    return len(events)


def recorded_conversation(events: list) -> tuple[str | None, tuple[Turn, ...]]:
    """The conversation a run was given (its message and earlier turns), from its record."""
    message, history = None, []
    for e in events[:_conversation_end(events)]:
        if isinstance(e, UserMessage) and e.source == "input":
            message = e.content
        elif isinstance(e, UserMessage):
            history.append(Turn("user", e.content))
        elif isinstance(e, AgentMessage):
            history.append(Turn("agent", e.content, question=e.kind == "question"))
    return message, tuple(history)


async def resume_task(run_id: str, agent: Any, tools: ToolSet, *, store: Any, user: SimulatedUser | None = None,
                      config: RunConfig = RunConfig()) -> RunResult:
    """Continue a stored run with ``agent`` (any agent under test), the same tools
    and guards: from the checkpoint's state when the agent keeps its state in the
    session (``resumes_from_state``), else by replay (see the module docstring)."""
    from_state = bool(getattr(agent, "resumes_from_state", False))
    name = getattr(agent, "name", type(agent).__name__)
    session = reopen(run_id, tools, store=store, model_name=name, user=user, config=config, replay=not from_state)
    if from_state:
        task = AgentTask(tools=tools, system_prompt=config.system_prompt, max_steps=config.max_steps)
    else:
        message, history = recorded_conversation(session.trajectory.events)
        started = session.trajectory.started
        task = AgentTask(message=message, history=history, tools=tools, system_prompt=config.system_prompt,
                         max_steps=config.max_steps, case_id=started.case_id if started else None)
    return await drive(session, agent, task)


async def resume_agent(run_id: str, model: Model, tools: ToolSet, *, store: Any, user: SimulatedUser | None = None,
                       config: RunConfig = RunConfig()) -> RunResult:
    """Continue a stored run from its last checkpoint with the same model, tools and guards.

    Side effects that completed before the interruption are answered from the
    ledger, never re-run; one whose outcome is unknown is resolved through the
    tool's status query or idempotency key, or ends the run as ``unknown``."""
    return await resume_task(run_id, LoopAgent(model), tools, store=store, user=user, config=config)
