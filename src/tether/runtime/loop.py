"""The run loop, and the one driver every agent runs under.

:func:`drive` runs an agent on a :class:`RunSession` and makes sure the
record ends with exactly one ``run_finished`` whatever happens:

* the agent returns: ``completed`` with its reply (or the ending it returned);
* a guard or gate raises :class:`~tether.errors.RunStop`: the agent may write
  a last answer (:meth:`Agent.stopped`), the guard that stopped it may amend it;
* a model could not be reached (ModelFailure): ``error``, kind
  ``infrastructure`` for the wire, ``model`` otherwise;
* misuse (UsageError) and RunAborted signals (replay mismatches): recorded,
  then re-raised to the caller;
* anything else: ``error``, kind ``harness``; never a crash of the caller.

:class:`LoopAgent` is tether's own loop (request, decide, gate, call,
record), one readable method. Plan-execute-review (:mod:`.plan`) is another
agent on the same session and driver.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from .. import i18n
from ..errors import LeaseLost, ModelFailure, RunAborted, RunStop, UsageError
from ..events import AgentMessage
from ..guards import Intervention
from ..messages import DecisionKind, Message
from ..models import Model, ModelRequest
from ..status import TerminalStatus
from ..tools import ToolSet
from .session import RunResult, RunSession, Turn, model_params

Ending = tuple[TerminalStatus, str, str]   # status, reply, reason



@dataclass(frozen=True)
class AgentTask:
    """What the harness gives an agent under test: the conversation so far and
    the tools (the harness's ToolSet, with the case's intercepts and mocks)."""

    message: str | None = None
    history: Sequence[Turn] = ()
    tools: ToolSet = field(default_factory=ToolSet)
    system_prompt: str | None = None
    max_steps: int = 30
    # a framework agent's own instructions and the case's reference prompt (system_prompt):
    # "agent" keeps the agent's (the case's only where the agent has none), "case" replaces, "both" adds
    system_prompt_mode: str = "agent"
    case_id: str | None = None


@runtime_checkable
class Agent(Protocol):
    """An agent under test: anything that runs a task on a session.

    ``run`` drives the session (its model requests, ``session.tool`` for every
    tool call) and returns the final reply, an ``(status, reply, reason)``
    ending, or None (the last text the model said is the reply)."""

    name: str

    async def run(self, session: RunSession, task: AgentTask) -> "str | Ending | None": ...


async def drive(session: RunSession, agent: Any, task: AgentTask) -> RunResult:
    """Run ``agent`` on ``session`` to a terminal status (see the module docstring).
    An agent with a ``final_reply(session, status, why)`` method writes the
    reply of every ending itself (plan mode writes it from the facts)."""
    try:
        return await _drive(session, agent, task)
    finally:
        session.let_go()


async def _drive(session: RunSession, agent: Any, task: AgentTask) -> RunResult:
    error = kind = None
    try:
        try:
            out = await agent.run(session, task)
        except RunStop as stop:
            stopped = getattr(agent, "stopped", None)
            out = await stopped(session, stop) if stopped is not None else (stop.status, stop.reply or
                                                                             session.state.last_text, stop.reason)
            out = _amend(session, stop, out)
    except LeaseLost:               # another process drives the run now: write nothing, say so
        session.abandon()
        raise
    except UsageError as exc:
        result = session.finish(TerminalStatus.ERROR, "", "misuse", error=str(exc), error_kind="misuse")
        exc.trajectory = result.trajectory  # type: ignore[attr-defined]
        raise
    except RunAborted as exc:
        result = session.finish(TerminalStatus.ERROR, session.state.last_text, "aborted",
                                error=f"{type(exc).__name__}: {exc}", error_kind="aborted")
        exc.trajectory = result.trajectory  # type: ignore[attr-defined]
        raise
    except ModelFailure as exc:
        kind = "infrastructure" if exc.infrastructure else "model"
        error, out = f"{type(exc).__name__}: {exc}", (TerminalStatus.ERROR, session.state.last_text, "exception")
    except Exception as exc:  # a run failure: recorded, never a crash of the caller
        kind = "harness"
        error, out = f"{type(exc).__name__}: {exc}", (TerminalStatus.ERROR, session.state.last_text, "exception")
    if out is None:
        out = (TerminalStatus.COMPLETED, session.state.last_text, "agent returned")
    elif isinstance(out, str):
        out = (TerminalStatus.COMPLETED, out, "final answer")
    status, reply, reason = out
    final_reply = getattr(agent, "final_reply", None)
    if final_reply is not None:
        reply = final_reply(session, status, error or reason)
    return session.finish(status, reply, reason, error=error, error_kind=kind)


def _amend(session: RunSession, stop: RunStop, out: Ending) -> Ending:
    """Let the guard that stopped the run amend the reply (the budget's done / not-done ledger)."""
    if stop.verdict is None or session.stopped_by is None:
        return out
    status, reply, reason = out
    return status, session.stopped_by.on_stop(session.ctx(), stop.verdict, reply), reason


class LoopAgent:
    """tether's own loop around a :class:`Model`: request, decide, gate, call, record.
    Its whole state is the session's (messages, pending calls), so a resumed run
    continues from the last checkpoint (``resumes_from_state``)."""

    resumes_from_state = True

    def __init__(self, model: Model):
        self.model = model
        self.name = getattr(model, "name", type(model).__name__)

    async def run(self, session: RunSession, task: AgentTask) -> Ending:
        s = session.state
        await run_pending(session)                  # a resumed run may have calls left to make
        while s.step < task.max_steps:
            base = ModelRequest(messages=s.messages, tools=session.specs)
            request = await session.before_model(base)
            request = request.model_copy(update={"messages": deliver_inline(base.messages, request.messages)})
            decision = await session.request_model(self.model, request)
            if decision.kind == DecisionKind.FINAL or (decision.kind == DecisionKind.TOOL_CALLS
                                                       and not decision.tool_calls):
                await session.final(decision.text)
                return TerminalStatus.COMPLETED, decision.text, "final answer"
            if decision.kind == DecisionKind.QUESTION:
                answer = await session.ask_user(decision.text)
                if answer is None:
                    why = "question with no simulated user" if session.user is None else \
                        "the simulated user ended the conversation"
                    return TerminalStatus.AWAITING_USER, decision.text, why
                continue
            await run_pending(session)              # the session set them pending and checkpointed
        return TerminalStatus.STEP_LIMIT, s.last_text, f"step cap {task.max_steps} reached"

    async def stopped(self, session: RunSession, stop: RunStop) -> Ending:
        """A guard stopped the run: with ``finish_up``, one last request without
        tools so the user gets an answer, not a log dump."""
        reply = stop.reply or session.state.last_text
        if stop.verdict is not None and stop.verdict.finish_up:
            reply = await self._finish_up(session, stop.verdict) or reply
        return stop.status, reply, stop.reason

    async def _finish_up(self, session: RunSession, verdict: Intervention) -> str:
        s = session.state
        lang = i18n.run_language(session.trajectory)
        localized = getattr(session.stopped_by, "localized", None)
        message = (localized(verdict, lang) if lang != "en" and callable(localized) else None) or verdict.message
        prompt = i18n.text(lang, "finish_up", guard=getattr(session.stopped_by, "name", "guard"), message=message)
        s.step += 1
        request = ModelRequest(messages=append_note(s.messages, prompt), tools=[], step=s.step)
        session.record_request(request, model=self.name, params=model_params(self.model))
        started = time.perf_counter()
        try:
            response = await self.model.request(request)
        except Exception as exc:  # the run is ending anyway: keep what we have
            session.add(AgentMessage(content=f"(finish-up failed: {type(exc).__name__}: {exc})", kind="text"))
            return ""
        return session.record_response(response, latency_ms=(time.perf_counter() - started) * 1000).text


NOTE_MARK = "[tether] "     # what starts a note of tether's inside a tool result or user turn


def append_note(messages: list[Message], note: str) -> list[Message]:
    """``messages`` with ``note`` (marked ``[tether] ``) appended to the last tool
    result or user turn (a new user turn when the conversation ends otherwise).
    Never an extra system message: servers that render the tool list once per
    system message (llama.cpp's chatml-function-calling) would send the whole
    list again. :func:`split_notes` takes the notes back out."""
    if not note:
        return list(messages)
    if messages and messages[-1].role in ("tool", "user"):
        last = messages[-1]
        return [*messages[:-1], last.model_copy(update={"content": f"{last.content}\n\n{NOTE_MARK}{note}"})]
    return [*messages, Message(role="user", content=NOTE_MARK + note)]


def split_notes(content: str) -> tuple[str, list[str]]:
    """A message's own content and the notes :func:`append_note` added to it."""
    if content.startswith(NOTE_MARK):
        content = "\n\n" + content
    body, *notes = content.split("\n\n" + NOTE_MARK)
    return body, notes


def deliver_inline(original: list[Message], sent: list[Message]) -> list[Message]:
    """What the session added to a request (pinned text before, guard hints after the
    original messages, as system messages) folded into the conversation itself:
    pinned text into the first system message, hints onto the last tool result or
    user turn (see :func:`append_note`). The model gets the same words, no extra
    system message."""
    n = len(original)
    at = next((i for i in range(len(sent) - n + 1) if sent[i:i + n] == original), None)
    if at is None or len(sent) == n:
        return list(sent)
    pinned = [m.content for m in sent[:at] if m.role == "system"]
    hints = [m.content for m in sent[at + n:] if m.role == "system"]
    messages = list(original)
    if pinned:
        text = "\n".join(pinned)
        if messages and messages[0].role == "system":
            messages[0] = messages[0].model_copy(update={"content": f"{messages[0].content}\n\n{text}"})
        else:
            messages.insert(0, Message(role="system", content=text))
    return append_note(messages, "\n".join(hints)) if hints else messages


async def run_pending(session: RunSession) -> None:
    """Make the calls of the current decision not yet made. The session takes
    each off ``pending_calls`` when its result is recorded (a call paused for a
    human stays) and checkpoints before and after it."""
    s = session.state
    while s.pending_calls:
        call = s.pending_calls[0]
        await session.tool(call)
        if s.pending_calls and s.pending_calls[0] is call:     # not taken off (a foreign id): never loop
            s.pending_calls.pop(0)
