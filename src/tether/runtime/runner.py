"""The run loop: model -> tool calls -> results -> model ..., every step recorded.

The loop is written so that whatever happens (a tool raising, a model error, a
guard stopping the run, the step cap) the trajectory ends with a
``run_finished`` event carrying a terminal status and the reply so far.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from ..errors import ModelFailure, UsageError
from ..events import (
    AgentMessage,
    GuardTripped,
    ModelDecisionEvent,
    ModelRequestEvent,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
    UserMessage,
)
from ..guards import Guard, Verdict
from ..messages import DecisionKind, Message, ToolCallRequest, Usage, canonical_json
from ..models import Model, ModelRequest
from ..status import TerminalStatus
from ..tools import ToolResult, ToolSet


class SimulatedUser(Protocol):
    """Answers the agent's questions. ``None`` means the user says nothing more."""

    async def reply(self, question: str, trajectory: Trajectory) -> str | None: ...


@dataclass(frozen=True)
class Turn:
    """One turn of prior conversation."""

    role: str            # "user" or "agent"
    content: str
    question: bool = False


@dataclass(frozen=True)
class RunConfig:
    max_steps: int = 30
    system_prompt: str | None = None
    guards: Sequence[Guard] = ()
    guards_label: str = "off"
    clock: Callable[[], float] = time.perf_counter
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunResult:
    trajectory: Trajectory
    status: TerminalStatus
    reply: str
    error: str | None = None

    @property
    def run_id(self) -> str:
        started = self.trajectory.started
        return started.run_id if started else ""


class _Recorder:
    def __init__(self, clock: Callable[[], float]):
        self.trajectory = Trajectory()
        self.clock = clock
        self.t0 = clock()

    def add(self, event):
        event.at_ms = round((self.clock() - self.t0) * 1000, 3)
        return self.trajectory.append(event)


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
    (for example a scripted model called once too often), after recording it."""
    rec = _Recorder(config.clock)
    rec.add(RunStarted(
        run_id=run_id or uuid.uuid4().hex[:12], model=getattr(model, "name", type(model).__name__),
        case_id=case_id, trial=trial, tools=tools.names(), guards=config.guards_label, meta=dict(config.meta),
    ))
    messages: list[Message] = []
    if config.system_prompt:
        messages.append(Message(role="system", content=config.system_prompt))
    for turn in history:
        if turn.role == "user":
            rec.add(UserMessage(content=turn.content, source="history"))
            messages.append(Message(role="user", content=turn.content))
        else:
            rec.add(AgentMessage(content=turn.content, kind="question" if turn.question else "text", source="history"))
            messages.append(Message(role="assistant", content=turn.content))
    if message is not None:
        rec.add(UserMessage(content=message, source="input"))
        messages.append(Message(role="user", content=message))

    loop = _Loop(model, tools, user, config, rec, messages)
    try:
        status, reply, reason = await loop.run()
        error = None
    except UsageError as exc:
        rec.add(RunFinished(status=TerminalStatus.ERROR, reply="", steps=loop.step, usage=loop.usage,
                            error=str(exc), reason="misuse"))
        exc.trajectory = rec.trajectory  # type: ignore[attr-defined]
        raise
    except Exception as exc:  # a run failure: recorded, never a crash of the caller
        status, reply, reason, error = TerminalStatus.ERROR, loop.last_text, "exception", f"{type(exc).__name__}: {exc}"
    rec.add(RunFinished(status=status, reply=reply, steps=loop.step, usage=loop.usage, error=error, reason=reason))
    return RunResult(rec.trajectory, status, reply, error)


class _Loop:
    def __init__(self, model: Model, tools: ToolSet, user: SimulatedUser | None, config: RunConfig,
                 rec: _Recorder, messages: list[Message]):
        self.model, self.tools, self.user, self.config, self.rec = model, tools, user, config, rec
        self.messages = messages
        self.step = 0
        self.usage = Usage()
        self.last_text = ""
        self.pending_hints: list[str] = []

    async def run(self) -> tuple[TerminalStatus, str, str]:
        while self.step < self.config.max_steps:
            self.step += 1
            stopped = self._guard(lambda g: g.before_model(self.rec.trajectory, self.step))
            if stopped:
                return stopped
            request_messages = list(self.messages)
            if self.pending_hints:
                request_messages.append(Message(role="system", content="\n".join(self.pending_hints)))
                self.pending_hints.clear()
            request = ModelRequest(messages=request_messages, tools=self.tools.specs(), step=self.step)
            self.rec.add(ModelRequestEvent(step=self.step, message_count=len(request_messages),
                                           tools=[t.name for t in request.tools], request_hash=request.canonical_hash()))
            try:
                response = await self.model.request(request)
            except UsageError:
                raise
            except Exception as exc:
                raise ModelFailure(getattr(self.model, "name", "model"), self.step, f"{type(exc).__name__}: {exc}") from exc
            decision = response.decision
            self.usage = self.usage + response.usage
            self.rec.add(ModelDecisionEvent(step=self.step, kind=decision.kind, tool_calls=decision.tool_calls,
                                            text=decision.text, usage=response.usage))
            if decision.text:
                self.last_text = decision.text

            if decision.kind == DecisionKind.FINAL:
                return TerminalStatus.COMPLETED, decision.text, "final answer"
            if decision.kind == DecisionKind.QUESTION:
                outcome = await self._ask_user(decision.text)
                if outcome:
                    return outcome
                continue
            if not decision.tool_calls:
                # A tool_calls decision with no calls: treat its text as the answer.
                return TerminalStatus.COMPLETED, decision.text, "empty tool_calls"
            self.messages.append(Message(role="assistant", content=decision.text, tool_calls=decision.tool_calls))
            for call in decision.tool_calls:
                stopped = await self._tool(call)
                if stopped:
                    return stopped
        return TerminalStatus.STEP_LIMIT, self.last_text, f"step cap {self.config.max_steps} reached"

    async def _ask_user(self, question: str) -> tuple[TerminalStatus, str, str] | None:
        self.rec.add(AgentMessage(content=question, kind="question", source="model", step=self.step))
        self.messages.append(Message(role="assistant", content=question))
        if self.user is None:
            return TerminalStatus.AWAITING_USER, question, "question with no simulated user"
        answer = await self.user.reply(question, self.rec.trajectory)
        if answer is None:
            return TerminalStatus.AWAITING_USER, question, "the simulated user ended the conversation"
        self.rec.add(UserMessage(content=answer, source="simulator"))
        self.messages.append(Message(role="user", content=answer))
        return None

    async def _tool(self, call: ToolCallRequest) -> tuple[TerminalStatus, str, str] | None:
        self.rec.add(ToolCallEvent(step=self.step, call_id=call.id, tool=call.name, arguments=call.arguments))
        verdict_end = None
        blocked: Verdict | None = None
        for guard in self.config.guards:
            verdict = guard.before_tool(self.rec.trajectory, self.step, call)
            if verdict is None:
                continue
            self._record_trip(guard, verdict)
            if verdict.action == "hint":
                self.pending_hints.append(verdict.message)
            elif verdict.action == "block":
                blocked = verdict
                break
            else:
                verdict_end = self._ending(verdict)
                break
        started = time.perf_counter()
        if verdict_end is not None:
            result = ToolResult.failure(f"not executed: {verdict_end[2]}", "guard_stopped", source="guard")
        elif blocked is not None:
            result = ToolResult.failure(f"blocked by guard: {blocked.message}", "guard_blocked", source="guard")
        elif call.raw_arguments is not None:
            result = ToolResult.failure(f"arguments for {call.name} are not a JSON object: {call.raw_arguments[:200]}",
                                        "invalid_arguments", source="runner")
        else:
            result = await self.tools.call(call.name, call.arguments)
        self.rec.add(ToolResultEvent(step=self.step, call_id=call.id, tool=call.name, ok=result.ok, data=result.data,
                                     error=result.error, error_type=result.error_type, source=result.source,
                                     duration_ms=round((time.perf_counter() - started) * 1000, 3)))
        self.messages.append(Message(role="tool", tool_call_id=call.id, name=call.name,
                                     content=canonical_json(result.for_model())))
        return verdict_end

    def _guard(self, check: Callable[[Guard], Verdict | None]) -> tuple[TerminalStatus, str, str] | None:
        for guard in self.config.guards:
            verdict = check(guard)
            if verdict is None:
                continue
            self._record_trip(guard, verdict)
            if verdict.action == "hint":
                self.pending_hints.append(verdict.message)
            elif verdict.action in ("stop", "escalate"):
                return self._ending(verdict)
        return None

    def _record_trip(self, guard: Guard, verdict: Verdict) -> None:
        self.rec.add(GuardTripped(step=self.step, guard=guard.name, rule=verdict.rule, verdict=verdict.action,
                                  message=verdict.message, numbers=dict(verdict.numbers)))

    def _ending(self, verdict: Verdict) -> tuple[TerminalStatus, str, str]:
        if verdict.action == "escalate":
            return TerminalStatus.NEEDS_HUMAN, self.last_text, verdict.message
        return verdict.status or TerminalStatus.LOOP_ABORTED, self.last_text, verdict.message


def run_agent_sync(*args: Any, **kwargs: Any) -> RunResult:
    """Synchronous wrapper for scripts and notebooks; refuses to nest in a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_agent(*args, **kwargs))
    raise UsageError("run_agent_sync() called inside a running event loop; use `await run_agent(...)` instead")
