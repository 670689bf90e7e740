"""The run loop: model -> tool calls -> results -> model ..., every step recorded.

The loop is written so that whatever happens (a tool raising, a model error, a
guard stopping the run, the step cap) the trajectory ends with a
``run_finished`` event carrying a terminal status and the reply so far.
"""

from __future__ import annotations

import asyncio
import inspect
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
from ..guards import Guard, GuardContext, Verdict
from ..messages import Decision, DecisionKind, Message, ToolCallRequest, Usage, canonical_json
from ..models import Model, ModelRequest
from ..status import TerminalStatus
from ..tools import ToolResult, ToolSet
from .effects import MemoryLedger


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
    # Durable runs: a store (tether.store.SQLiteStore) persists events, one
    # checkpoint per step and the side-effect ledger, so the run can resume.
    store: Any = None
    # Human approval gates for risky tools (tether.runtime.approvals.ApprovalGate).
    approvals: Any = None


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
    def __init__(self, clock: Callable[[], float], store: Any = None, run_id: str = "", offset_ms: float = 0.0):
        self.trajectory = Trajectory()
        self.clock = clock
        self.t0 = clock() - offset_ms / 1000
        self.store = store
        self.run_id = run_id

    def add(self, event):
        event.at_ms = round((self.clock() - self.t0) * 1000, 3)
        self.trajectory.append(event)
        if self.store is not None:
            self.store.append_event(self.run_id, event.seq, event.model_dump(mode="json"))
        return event


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
    run_id = run_id or uuid.uuid4().hex[:12]
    model_name = getattr(model, "name", type(model).__name__)
    if config.store is not None:
        config.store.create_run(run_id, model=model_name, case_id=case_id, meta=dict(config.meta))
    rec = _Recorder(config.clock, config.store, run_id)
    rec.add(RunStarted(
        run_id=run_id, model=model_name,
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
    return await drive(loop)


async def drive(loop: "_Loop") -> RunResult:
    """Run (or continue) a loop to its end and record how it ended."""
    rec = loop.rec
    try:
        status, reply, reason = await loop.run()
        error = None
    except UsageError as exc:
        rec.add(RunFinished(status=TerminalStatus.ERROR, reply="", steps=loop.step, usage=loop.usage,
                            error=str(exc), reason="misuse"))
        if rec.store is not None:
            rec.store.finish_run(rec.run_id, TerminalStatus.ERROR, "", f"misuse: {exc}")
        exc.trajectory = rec.trajectory  # type: ignore[attr-defined]
        raise
    except Exception as exc:  # a run failure: recorded, never a crash of the caller
        status, reply, reason, error = TerminalStatus.ERROR, loop.last_text, "exception", f"{type(exc).__name__}: {exc}"
    rec.add(RunFinished(status=status, reply=reply, steps=loop.step, usage=loop.usage, error=error, reason=reason))
    if rec.store is not None:
        rec.store.finish_run(rec.run_id, status, reply, reason)
    return RunResult(rec.trajectory, status, reply, error)


FINISH_UP_PROMPT = (
    "运行已被守卫停止（{guard}: {message}）。不要再调用任何工具。"
    "请直接给出最终回复：已完成的部分、未完成的部分及原因、用户接下来可以怎么做。"
)

_Ending = tuple[TerminalStatus, str, str]


class _Loop:
    def __init__(self, model: Model, tools: ToolSet, user: SimulatedUser | None, config: RunConfig,
                 rec: _Recorder, messages: list[Message]):
        self.model, self.tools, self.user, self.config, self.rec = model, tools, user, config, rec
        self.messages = messages
        self.step = 0
        self.usage = Usage()
        self.model_calls = 0
        self.tool_calls = 0
        self.last_text = ""
        self.pending_hints: list[str] = []
        self.specs = tools.specs()
        self._tripped_by: Any = None
        self.seen_ids: set[str] = set()
        self.pending_calls: list[ToolCallRequest] = []   # calls of the current decision not yet run
        self.ledger = config.store if config.store is not None else MemoryLedger()

    # -- guard plumbing -----------------------------------------------------
    def ctx(self) -> GuardContext:
        return GuardContext(trajectory=self.rec.trajectory, step=self.step, usage=self.usage,
                            elapsed_s=self.config.clock() - self.rec.t0, model_calls=self.model_calls,
                            tool_calls=self.tool_calls, model_name=getattr(self.model, "name", ""), tools=self.specs)

    async def _ask_guards(self, hook: str, *args: Any) -> Verdict | None:
        """Ask every guard at one point; hints accumulate, the first other verdict wins.
        A hook may be sync or async."""
        for guard in self.config.guards:
            fn = getattr(guard, hook, None)
            if fn is None:
                continue
            verdict = fn(self.ctx(), *args)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            if verdict is None:
                continue
            self.rec.add(GuardTripped(step=self.step, guard=guard.name, rule=verdict.rule, verdict=verdict.action,
                                      message=verdict.message, numbers=dict(verdict.numbers)))
            if verdict.action == "hint":
                self.pending_hints.append(verdict.message)
                continue
            self._tripped_by = guard
            return verdict
        return None

    def _pinned(self) -> list[str]:
        texts: list[str] = []
        for guard in self.config.guards:
            fn = getattr(guard, "pinned", None)
            if fn is not None:
                texts.extend(fn(self.ctx()))
        return texts

    async def _end(self, verdict: Verdict) -> _Ending:
        if verdict.action == "escalate":
            return TerminalStatus.NEEDS_HUMAN, self.last_text, verdict.message
        status = verdict.status or TerminalStatus.LOOP_ABORTED
        reply = self.last_text
        if verdict.finish_up:
            reply = await self._finish_up(verdict) or reply
        amend = getattr(self._tripped_by, "on_stop", None)
        if amend is not None:
            reply = amend(self.ctx(), verdict, reply)
        return status, reply, verdict.message

    async def _finish_up(self, verdict: Verdict) -> str:
        """One last request without tools, so the user gets an answer, not a log dump."""
        prompt = FINISH_UP_PROMPT.format(guard=self._tripped_by.name, message=verdict.message)
        request = ModelRequest(messages=[*self.messages, Message(role="system", content=prompt)], tools=[],
                               step=self.step + 1)
        self.rec.add(ModelRequestEvent(step=self.step + 1, message_count=len(request.messages), tools=[],
                                       request_hash=request.canonical_hash()))
        try:
            response = await self.model.request(request)
        except Exception as exc:  # the run is ending anyway: keep what we have
            self.rec.add(AgentMessage(content=f"(finish-up failed: {type(exc).__name__}: {exc})", kind="text"))
            return ""
        self.step += 1
        self.usage = self.usage + response.usage
        d = response.decision
        self.rec.add(ModelDecisionEvent(step=self.step, kind=d.kind, tool_calls=d.tool_calls, text=d.text,
                                        usage=response.usage))
        return d.text

    # -- the loop -------------------------------------------------------------
    def checkpoint(self, phase: str) -> None:
        """One checkpoint per step boundary and per tool result (durable runs only)."""
        if self.rec.store is not None:
            from .durable import capture

            self.rec.store.save_checkpoint(self.rec.run_id, self.step, phase, len(self.rec.trajectory), capture(self))

    async def _run_pending(self) -> _Ending | None:
        while self.pending_calls:
            ending = await self._tool(self.pending_calls[0])
            self.pending_calls.pop(0)
            self.checkpoint("calls_pending" if self.pending_calls else "before_model")
            if ending:
                return ending
        return None

    async def run(self) -> _Ending:
        ending = await self._run_pending()          # a resumed run may have calls left to make
        if ending:
            return ending
        if self.step == 0:
            self.checkpoint("before_model")
        while self.step < self.config.max_steps:
            self.step += 1
            request_messages = list(self.messages)
            pinned = self._pinned()
            if pinned:
                request_messages.insert(0, Message(role="system", content="\n".join(pinned)))
            if self.pending_hints:
                request_messages.append(Message(role="system", content="\n".join(self.pending_hints)))
            request = ModelRequest(messages=request_messages, tools=self.specs, step=self.step)
            verdict = await self._ask_guards("before_model", request)
            if verdict:
                return await self._end(verdict)
            self.pending_hints.clear()
            self.rec.add(ModelRequestEvent(step=self.step, message_count=len(request_messages),
                                           tools=[t.name for t in request.tools], request_hash=request.canonical_hash()))
            try:
                response = await self.model.request(request)
            except (UsageError, ModelFailure):
                raise
            except Exception as exc:
                raise ModelFailure(getattr(self.model, "name", "model"), self.step, f"{type(exc).__name__}: {exc}") from exc
            self.model_calls += 1
            decision = self._unique_ids(response.decision)
            self.usage = self.usage + response.usage
            self.rec.add(ModelDecisionEvent(step=self.step, kind=decision.kind, tool_calls=decision.tool_calls,
                                            text=decision.text, usage=response.usage))
            if decision.text:
                self.last_text = decision.text
            verdict = await self._ask_guards("after_model", response)
            if verdict:
                return await self._end(verdict)

            if decision.kind == DecisionKind.FINAL or (decision.kind == DecisionKind.TOOL_CALLS and not decision.tool_calls):
                verdict = await self._ask_guards("on_final", decision.text)
                if verdict:
                    status = verdict.status or TerminalStatus.NEEDS_HUMAN
                    return status, decision.text, verdict.message
                return TerminalStatus.COMPLETED, decision.text, "final answer"
            if decision.kind == DecisionKind.QUESTION:
                outcome = await self._ask_user(decision.text)
                if outcome:
                    return outcome
                self.checkpoint("before_model")
                continue
            self.messages.append(Message(role="assistant", content=decision.text, tool_calls=decision.tool_calls))
            self.pending_calls = list(decision.tool_calls)
            self.checkpoint("calls_pending")
            ending = await self._run_pending()
            if ending:
                return ending
        return TerminalStatus.STEP_LIMIT, self.last_text, f"step cap {self.config.max_steps} reached"

    def _unique_ids(self, decision: Decision) -> Decision:
        """Call ids must be unique within a run (results are matched by id);
        models and doubles may reuse them, so repeats get a step suffix."""
        if not decision.tool_calls:
            return decision
        calls = []
        for i, call in enumerate(decision.tool_calls):
            cid = call.id or f"call_{self.step}_{i}"
            if cid in self.seen_ids:
                cid = f"{cid}~{self.step}.{i}"
            self.seen_ids.add(cid)
            calls.append(call if cid == call.id else call.model_copy(update={"id": cid}))
        return decision.model_copy(update={"tool_calls": calls})

    async def _ask_user(self, question: str) -> _Ending | None:
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

    async def _tool(self, call: ToolCallRequest) -> _Ending | None:
        self.rec.add(ToolCallEvent(step=self.step, call_id=call.id, tool=call.name, arguments=call.arguments))
        verdict = await self._ask_guards("before_tool", call)
        started = time.perf_counter()
        ending: _Ending | None = None
        if verdict is not None and verdict.action != "block":
            result = ToolResult.failure(f"not executed: {verdict.message}", "guard_stopped", source="guard")
        elif verdict is not None:
            result = ToolResult.failure(f"blocked by guard: {verdict.message}", "guard_blocked", source="guard")
        elif call.raw_arguments is not None:
            result = ToolResult.failure(f"arguments for {call.name} are not a JSON object: {call.raw_arguments[:200]}",
                                        "invalid_arguments", source="runner")
        else:
            result = self.tools.check(call.name, call.arguments)
            if result is None:
                result, ending = await self._gated_call(call)
        event = self.rec.add(ToolResultEvent(step=self.step, call_id=call.id, tool=call.name, ok=result.ok,
                                             data=result.data, error=result.error, error_type=result.error_type,
                                             source=result.source,
                                             duration_ms=round((time.perf_counter() - started) * 1000, 3)))
        if result.error_type != "awaiting_approval":   # a paused call is asked again on resume
            self.messages.append(Message(role="tool", tool_call_id=call.id, name=call.name,
                                         content=canonical_json(result.for_model())))
        if verdict is not None and verdict.action != "block":
            return await self._end(verdict)
        if ending is not None:
            return ending
        if verdict is None:
            after = await self._ask_guards("after_tool", call, event)
            if after is not None and after.action != "block":
                return await self._end(after)
        return None

    async def _gated_call(self, call: ToolCallRequest) -> tuple[ToolResult, _Ending | None]:
        """Approval gate, then the side-effect ledger, then the tool."""
        from .durable import approve, side_effect_call

        arguments = call.arguments
        if self.config.approvals is not None:
            outcome = await approve(self, call)
            if isinstance(outcome, tuple):
                return outcome
            arguments = outcome
        tool = self.tools.tools[call.name]
        if tool.side_effect:
            return await side_effect_call(self, call, tool, arguments)
        result = await self.tools.call(call.name, arguments)
        self.tool_calls += 1
        return result, None


def run_agent_sync(*args: Any, **kwargs: Any) -> RunResult:
    """Synchronous wrapper for scripts and notebooks; refuses to nest in a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_agent(*args, **kwargs))
    raise UsageError("run_agent_sync() called inside a running event loop; use `await run_agent(...)` instead")
