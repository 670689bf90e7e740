"""Feed a recorded run through a guard stack: "would my guards have caught
this?" on production traces and stored runs.

The events are replayed in order into a fresh trajectory, and the guards are
asked through :meth:`tether.guards._base.GuardChain.ask`, the one function a
live :class:`~tether.runtime.session.RunSession` asks them with, at the same
points and with the same arguments:

* ``before_model`` before each of the agent's requests, with the request as
  recorded (a trace v2 carries the full message list sent and the tools
  offered; a version 1 trace has no messages, so token estimates see none);
* ``after_model`` after each of the agent's decisions, with its response
  (decision and usage);
* ``before_tool`` before each tool call, ``after_tool`` after its result
  (not when the call was held by a guard, as in a live run);
* ``on_final`` on the agent's final answer.

Judge, simulated-user and drift-check requests (``role`` other than
``agent``) are not the agent's and are not shown to the guards; a finish-up
request after the original run was stopped is not either (a live run does not
ask guards about it). Trips are recorded into the replayed trajectory as
``guard_tripped`` events, as a live run records them; the original run's own
trips are left out. Nothing is executed and no model is called. Trips after
the first stop are still reported, marked as coming after the point where the
run would have ended.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..events import (
    GuardTripped,
    Outcome,
    ModelDecisionEvent,
    ModelRequestEvent,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
)
from ..messages import Decision, DecisionKind, ToolCallRequest, ToolSpec, Usage
from ._base import GuardChain, GuardContext, Intervention



@dataclass(frozen=True)
class TraceTrip:
    """A trip the replayed guards made on a recorded trace (a live trip is :class:`~tether.guards._base.Trip`)."""

    seq: int                 # the event of the original trace where the guard tripped
    step: int
    guard: str
    verdict: Intervention
    after_stop: bool         # the run would already have ended before this trip


class _Replay:
    """The live session's counters, rebuilt event by event."""

    def __init__(self, trajectory: Trajectory, guards: Sequence[Any]):
        started = trajectory.started
        self.chain = GuardChain(guards)
        self.model_name = started.model if started else ""
        self.specs: list[ToolSpec] = list(started.tool_specs) if started and started.tool_specs else [
            ToolSpec(name=n, description="", parameters={}) for n in (started.tools if started else [])]
        self.trajectory = Trajectory()
        self.step = 0
        self.usage = Usage()
        self.model_calls = 0
        self.tool_calls = 0
        self.at_ms = 0.0
        self.trips: list[TraceTrip] = []
        self.stopped = False

    def ctx(self) -> GuardContext:
        return GuardContext(trajectory=self.trajectory, step=self.step, usage=self.usage,
                            elapsed_s=self.at_ms / 1000, model_calls=self.model_calls, tool_calls=self.tool_calls,
                            model_name=self.model_name, tools=self.specs)

    async def ask(self, hook: str, seq: int, *args: Any) -> bool:
        """Ask the chain; record every trip; True when one decided (block / stop / escalate)."""
        trips, decisive = await self.chain.ask(hook, self.ctx(), *args)
        for trip in trips:
            v = trip.verdict
            self.trips.append(TraceTrip(seq, self.step, trip.guard.name, v, self.stopped))
            self.trajectory.append(GuardTripped(step=self.step, guard=trip.guard.name, rule=v.rule, verdict=v.action,
                                                message=v.message, numbers=dict(v.numbers), at_ms=self.at_ms))
            if v.action in ("stop", "escalate"):
                self.stopped = True
        return decisive is not None


async def check_trace(trajectory: Trajectory, guards: Sequence[Any]) -> list[TraceTrip]:
    """Every trip ``guards`` would have made on ``trajectory``, in order."""
    from ..models import ModelRequest, ModelResponse

    r = _Replay(trajectory, guards)
    by_name = {s.name: s for s in r.specs}
    messages = {id(ev): msgs for ev, msgs in trajectory.requests(role="agent")}
    calls: dict[str, ToolCallRequest] = {}
    held: set[str] = set()               # calls a replayed guard blocked or stopped: no after_tool, as live
    original_stop = False                 # the recorded run was stopped: what follows is its finish-up
    for event in trajectory:
        r.at_ms = event.at_ms
        agent = getattr(event, "role", "agent") == "agent"
        if isinstance(event, GuardTripped):
            original_stop = original_stop or event.verdict in ("stop", "escalate")
            continue                      # the original stack's trips: the replayed stack records its own
        if isinstance(event, ModelRequestEvent) and agent and not original_stop:
            r.step = event.step
            request = ModelRequest(messages=messages.get(id(event), []), step=event.step,
                                   tools=[by_name.get(n) or ToolSpec(name=n, description="", parameters={})
                                          for n in event.tools])
            await r.ask("before_model", event.seq, request)
        r.trajectory.append(event.model_copy())
        if isinstance(event, ModelDecisionEvent) and agent:
            r.usage = r.usage + event.usage
            r.model_calls += 1
            if original_stop:
                continue
            decision = Decision(kind=event.kind, tool_calls=event.tool_calls, text=event.text)
            await r.ask("after_model", event.seq, ModelResponse(decision=decision, usage=event.usage))
            if event.kind == DecisionKind.FINAL or (event.kind == DecisionKind.TOOL_CALLS and not event.tool_calls):
                await r.ask("on_final", event.seq, event.text)
        elif isinstance(event, ToolCallEvent):
            call = ToolCallRequest(id=event.call_id, name=event.tool, arguments=event.arguments)
            calls[event.call_id] = call
            if await r.ask("before_tool", event.seq, call):
                held.add(event.call_id)
        elif isinstance(event, ToolResultEvent):
            if event.executed:           # as the live session counts them (Outcome.executed)
                r.tool_calls += 1
            if event.outcome is not Outcome.BLOCKED and event.call_id not in held:
                call = calls.get(event.call_id) or ToolCallRequest(id=event.call_id, name=event.tool)
                await r.ask("after_tool", event.seq, call, r.trajectory.events[-1])
            held.discard(event.call_id)
    return r.trips


@dataclass
class RunCheck:
    """One run of many: where it came from and what the guards did on it."""

    source: str                      # a run id or a trace path
    calls: int                       # tool calls the run executed
    trips: list[TraceTrip]                # trips before the point the run would have ended
    error: str = ""                  # why the run could not be read (then no trips)

    @property
    def stopped(self) -> TraceTrip | None:
        return next((t for t in self.trips if t.verdict.action in ("stop", "escalate")), None)


@dataclass
class RuleCount:
    guard: str
    rule: str
    runs: int = 0                    # runs with at least one trip of this rule
    hint: int = 0                    # trips by verdict
    block: int = 0
    stop: int = 0
    escalate: int = 0

    @property
    def trips(self) -> int:
        return self.hint + self.block + self.stop + self.escalate


def rule_table(checks: Sequence[RunCheck]) -> list[RuleCount]:
    """Per guard rule over many runs: runs it tripped in and its trips by verdict.
    Trips after the point a run would have been stopped are not counted (they
    would not have happened)."""
    table: dict[tuple[str, str], RuleCount] = {}
    for check in checks:
        seen: set[tuple[str, str]] = set()
        for trip in check.trips:
            key = (trip.guard, trip.verdict.rule)
            row = table.setdefault(key, RuleCount(*key))
            setattr(row, trip.verdict.action, getattr(row, trip.verdict.action) + 1)
            if key not in seen:
                row.runs += 1
                seen.add(key)
    return sorted(table.values(), key=lambda r: (-r.runs, r.guard, r.rule))


async def check_many(runs: Any, make_guards: Any) -> list[RunCheck]:
    """Feed many recorded runs through fresh guards from ``make_guards()`` each.
    ``runs`` yields ``(source, load)`` where ``load()`` returns the trajectory or
    raises a tether error (an unreadable run is reported, not fatal)."""
    from ..errors import TetherError

    out: list[RunCheck] = []
    for source, load in runs:
        try:
            trajectory = load()
        except TetherError as exc:
            out.append(RunCheck(source, 0, [], error=str(exc).splitlines()[0][:300]))
            continue
        trips = await check_trace(trajectory, list(make_guards()))
        calls = len(trajectory.tool_calls(executed_only=True))
        out.append(RunCheck(source, calls, [t for t in trips if not t.after_stop]))
    return out
