"""Feed a recorded trajectory through a guard stack: "would my guards have
caught this?" on production traces.

The events are replayed in order into a fresh trajectory; each guard is asked
at the same points as in a live run (before a model request, after a model
decision, before a tool call, after its result, on the final answer). Nothing
is executed and no model is called. Trips after the first stop are still
reported, marked as coming after the point where the run would have ended.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Sequence

from ..events import (
    ModelDecisionEvent,
    ModelRequestEvent,
    RunFinished,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
)
from ..messages import DecisionKind, ToolCallRequest, ToolSpec, Usage
from ._base import GuardContext, Verdict


@dataclass(frozen=True)
class Trip:
    seq: int                 # the event of the original trace where the guard tripped
    step: int
    guard: str
    verdict: Verdict
    after_stop: bool         # the run would already have ended before this trip


class _Request:
    """What a guard's before_model sees offline: no messages were recorded, so
    token estimates use the recorded usage instead."""

    def __init__(self) -> None:
        self.messages: list = []
        self.tools: list = []


async def check_trace(trajectory: Trajectory, guards: Sequence[Any]) -> list[Trip]:
    replay = Trajectory()
    usage = Usage()
    model_calls = tool_calls = 0
    step = 0
    trips: list[Trip] = []
    stopped = False
    started = trajectory.started
    specs = [ToolSpec(name=n, description="", parameters={}) for n in (started.tools if started else [])]

    async def ask(hook: str, event_seq: int, *args: Any) -> None:
        nonlocal stopped
        ctx = GuardContext(trajectory=replay, step=step, usage=usage, elapsed_s=replay_time[0] / 1000,
                           model_calls=model_calls, tool_calls=tool_calls,
                           model_name=started.model if started else "", tools=specs)
        for guard in guards:
            fn = getattr(guard, hook, None)
            if fn is None:
                continue
            verdict = fn(ctx, *args)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            if verdict is None:
                continue
            trips.append(Trip(event_seq, step, guard.name, verdict, stopped))
            if verdict.action in ("stop", "escalate"):
                stopped = True
            if verdict.action != "hint":
                break

    replay_time = [0.0]
    calls_by_id: dict[str, ToolCallRequest] = {}
    for event in trajectory:
        replay_time[0] = event.at_ms
        copy = event.model_copy()
        if isinstance(event, ModelRequestEvent):
            step = event.step
            await ask("before_model", event.seq, _Request())
        replay.append(copy)
        if isinstance(event, ModelDecisionEvent):
            usage = usage + event.usage
            model_calls += 1
            await ask("after_model", event.seq, None)
        elif isinstance(event, ToolCallEvent):
            call = ToolCallRequest(id=event.call_id, name=event.tool, arguments=event.arguments)
            calls_by_id[event.call_id] = call
            await ask("before_tool", event.seq, call)
        elif isinstance(event, ToolResultEvent) and event.source != "guard":
            tool_calls += 1
            call = calls_by_id.get(event.call_id) or ToolCallRequest(id=event.call_id, name=event.tool)
            await ask("after_tool", event.seq, call, event)
        elif isinstance(event, RunFinished):
            last = next((e for e in reversed(trajectory.of_type(ModelDecisionEvent))), None)
            if last is not None and last.kind == DecisionKind.FINAL:
                await ask("on_final", event.seq, event.reply)
    return trips
