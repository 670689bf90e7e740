"""The Guard seam.

A guard observes the run and may return an :class:`Intervention` (from a plain
or an ``async`` method) at five points: before each model request, after each
model response, before each tool call, after each tool result, and on the final
answer; ``None`` lets the run go on. Interventions (the ``verdict`` of the
``guard_tripped`` event that records one):

* ``hint``: a note the model sees on its next request; the run goes on.
* ``block``: the tool call is not executed; the model sees why as its result.
* ``stop``: the run ends with ``intervention.status`` (e.g. ``loop_aborted``). With
  ``finish_up`` the model gets one last request without tools to write its
  final answer (done / not done / why) instead of the run ending mid-air.
* ``escalate``: a human decides; the run ends as ``needs_human``.

Composition order: guards run in the order given; at each point every guard is
asked, hints accumulate, and the first block / stop / escalate wins (later
guards are not asked). The reference stack orders them budget, loop, goal,
result: hard limits first, then behaviour, then semantics.

Guard state is plain data (:meth:`BaseGuard.state` / :meth:`BaseGuard.load_state`)
so a run can be checkpointed and resumed with its guards.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal, Protocol, Sequence, runtime_checkable

from ..errors import UsageError

from ..events import ToolResultEvent, Trajectory
from ..messages import ToolCallRequest, ToolSpec, Usage
from ..status import TerminalStatus

InterventionAction = Literal["hint", "block", "stop", "escalate"]


@dataclass(frozen=True)
class Intervention:
    action: InterventionAction
    rule: str
    message: str
    numbers: dict[str, float | int | str] = field(default_factory=dict)
    status: TerminalStatus | None = None   # for stop: which ending (default loop_aborted)
    finish_up: bool = False                # for stop: let the model write a final answer first


async def plain_request(model: Any, request: Any, *, role: str) -> Any:
    """A model request outside any run (offline ``guard-check``): nothing is recorded."""
    return await model.request(request)


@dataclass
class GuardContext:
    """What a guard may look at. ``trajectory`` is the live event stream.

    ``side_request(model, request, role=...)`` asks a model *for* the run, not as
    its agent (the goal guard's drift check): a live session records it as events
    of the run with that role, its cost kept apart from the agent's."""

    trajectory: Trajectory
    step: int = 0
    usage: Usage = field(default_factory=Usage)
    elapsed_s: float = 0.0
    model_calls: int = 0
    tool_calls: int = 0               # executed tool calls
    model_name: str = ""
    tools: list[ToolSpec] = field(default_factory=list)
    side_request: Callable[..., Awaitable[Any]] = plain_request


HOOKS = ("before_model", "after_model", "before_tool", "after_tool", "on_final", "on_stop", "pinned", "state",
         "load_state")


@runtime_checkable
class Guard(Protocol):
    """The gate protocol: every hook is declared here and the run loop calls each
    one directly. Subclass :class:`BaseGuard` and override what you need; a hook
    may be a plain or an ``async`` method."""

    name: str

    def before_model(self, ctx: GuardContext, request: Any) -> Intervention | None | Awaitable[Intervention | None]: ...

    def after_model(self, ctx: GuardContext, response: Any) -> Intervention | None | Awaitable[Intervention | None]: ...

    def before_tool(self, ctx: GuardContext, call: ToolCallRequest) -> Intervention | None | Awaitable[Intervention | None]: ...

    def after_tool(self, ctx: GuardContext, call: ToolCallRequest,
                   result: ToolResultEvent) -> Intervention | None | Awaitable[Intervention | None]: ...

    def on_final(self, ctx: GuardContext, reply: str) -> Intervention | None | Awaitable[Intervention | None]: ...

    def on_stop(self, ctx: GuardContext, verdict: Intervention, reply: str) -> str: ...

    def pinned(self, ctx: GuardContext) -> list[str]: ...

    def state(self) -> dict[str, Any]: ...

    def load_state(self, state: dict[str, Any]) -> None: ...


def check_guards(guards: Sequence[Any]) -> None:
    """Refuse, before a run starts, a guard that does not implement the protocol."""
    for g in guards:
        missing = [h for h in HOOKS if not callable(getattr(g, h, None))]
        if missing or not isinstance(getattr(g, "name", None), str):
            what = ", ".join(missing) if missing else "a str `name`"
            raise UsageError(f"guard {g!r} does not implement the Guard protocol (missing {what}); "
                             "subclass tether.guards.BaseGuard and override the hooks you need")


@dataclass(frozen=True)
class Trip:
    guard: Any
    verdict: Intervention


class GuardChain:
    """Asks guards at one hook, in order: hints accumulate, the first block /
    stop / escalate wins and later guards are not asked. The live run loop and
    offline ``guard-check`` both ask through this one function."""

    def __init__(self, guards: Sequence[Any]):
        check_guards(guards)
        self.guards = tuple(guards)

    async def ask(self, hook: str, ctx: GuardContext, *args: Any) -> tuple[list[Trip], Trip | None]:
        trips: list[Trip] = []
        for guard in self.guards:
            verdict = getattr(guard, hook)(ctx, *args)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            if verdict is None:
                continue
            trip = Trip(guard, verdict)
            trips.append(trip)
            if verdict.action != "hint":
                return trips, trip
        return trips, None

    def pinned(self, ctx: GuardContext) -> list[str]:
        return [text for g in self.guards for text in g.pinned(ctx)]


class BaseGuard:
    """Default no-op hooks; subclass and override what you need."""

    name = "guard"

    def before_model(self, ctx: GuardContext, request: Any) -> Intervention | None:
        return None

    def after_model(self, ctx: GuardContext, response: Any) -> Intervention | None:
        return None

    def before_tool(self, ctx: GuardContext, call: ToolCallRequest) -> Intervention | None:
        return None

    def after_tool(self, ctx: GuardContext, call: ToolCallRequest, result: ToolResultEvent) -> Intervention | None:
        return None

    def on_final(self, ctx: GuardContext, reply: str) -> Intervention | None:
        return None

    def on_stop(self, ctx: GuardContext, verdict: Intervention, reply: str) -> str:
        """Amend the final reply of a run this guard stopped (after finish-up)."""
        return reply

    def pinned(self, ctx: GuardContext) -> list[str]:
        """System text pinned into every model request (never trimmed)."""
        return []

    def state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        return None
