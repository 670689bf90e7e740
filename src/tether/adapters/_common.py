"""What every framework adapter shares: the ask_user pseudo-tool, call ids,
decisions built from framework answers, and where a session put pinned text
and hints in a request."""

from __future__ import annotations

import importlib
from types import ModuleType
import weakref
from typing import Any, Awaitable, Callable, Generic, TypeVar

from ..errors import UsageError
from ..messages import Decision, Message, ToolCallRequest, ToolSpec, canonical_json
from ..models._http import ASK_USER, ASK_USER_TOOL, AdapterStats, RawCall, build_decision
from ..status import TerminalStatus
from ..tools import ToolResult
from ..errors import RunStop
from ..models import ModelRequest, ModelResponse
from ..runtime import RunSession
from ..runtime.loop import LoopAgent

__all__ = ["ASK_USER", "ASK_USER_TOOL", "CallIds", "require", "decision_from", "split_added", "harness_specs",
           "run_tool", "result_text", "check_step_cap", "remember", "finish_up", "PerRun"]


def require(module: str, extra: str) -> ModuleType:
    """Import a framework lazily, with the install hint when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UsageError(f"this adapter needs {module.split('.')[0]!r}: pip install 'tether[{extra}]'") from exc


def harness_specs(specs: list[ToolSpec], *, ask_user: bool = True) -> list[ToolSpec]:
    """The harness tools, plus the ask_user pseudo-tool (unless a real tool has that name)."""
    if ask_user and not any(s.name == ASK_USER for s in specs):
        return [*specs, ASK_USER_TOOL]
    return list(specs)


def decision_from(calls: list[tuple[str | None, str, Any]], text: str, tools: list[ToolSpec], step: int) -> Decision:
    """A framework's answer (tool calls as (id, name, arguments), text) as a Decision;
    an ask_user call alone becomes a question."""
    offered = any(t.name == ASK_USER for t in tools)
    real = [t for t in tools if t.name != ASK_USER]
    return build_decision([RawCall(i, n, a) for i, n, a in calls], text, tools=real, ask_user_offered=offered,
                          stats=AdapterStats(), step=step)


def split_added(original: list[Message], sent: list[Message]) -> tuple[list[str], list[str]]:
    """The system texts a session put before (pinned) and after (hints) the original messages."""
    n = len(original)
    for i in range(len(sent) - n + 1):
        if sent[i:i + n] == original:
            before = [m.content for m in sent[:i] if m.role == "system"]
            after = [m.content for m in sent[i + n:] if m.role == "system"]
            return before, after
    return [], []


class CallIds:
    """Framework call ids -> the unique ids the session recorded (ids may repeat across steps)."""

    def __init__(self) -> None:
        self._map: dict[str, str] = {}

    def learn(self, framework_ids: list[str | None], decision: Decision) -> None:
        for fid, call in zip(framework_ids, decision.tool_calls):
            if fid:
                self._map[fid] = call.id

    def get(self, framework_id: str | None, fallback: str) -> str:
        return self._map.get(framework_id or "", framework_id or fallback)


def result_text(result: ToolResult) -> str:
    """What the model reads: the envelope as canonical JSON (as in tether's loop)."""
    return canonical_json(result.for_model())


async def run_tool(session: RunSession, call_id: str, name: str, arguments: Any, *, real_ask_user: bool = False) -> str:
    """The body of every harness tool in every framework: the session's gates,
    guards, intercepts and recording; ask_user goes to the simulated user.
    RunStop propagates (the framework must not swallow it)."""
    raw = None
    if isinstance(arguments, str):
        from ..models._http import parse_arguments

        arguments, raw = parse_arguments(arguments)
    if name == ASK_USER and not real_ask_user:
        question = str((arguments or {}).get("question", "")).strip()
        answer = await session.ask_user(question)
        if answer is None:
            raise RunStop(TerminalStatus.AWAITING_USER, question, "question with no answer from the user")
        return answer
    call = ToolCallRequest(id=call_id, name=name, arguments=dict(arguments or {}), raw_arguments=raw)
    result = await session.tool(call)
    return result_text(result)


def check_step_cap(session: RunSession, max_steps: int) -> None:
    """Before a model request: the case's step cap ends the run (``step_limit``), as in tether's loop.
    The framework's own turn limit is set above it."""
    if session.state.step >= max_steps:
        raise RunStop(TerminalStatus.STEP_LIMIT, session.state.last_text, f"step cap {max_steps} reached")


def remember(session: RunSession, request: ModelRequest, decision: Decision) -> None:
    """Keep the session's messages what the framework's model has seen (what a guard's
    finish-up request and a checkpoint are built from): the request as the framework
    built it, then the decision; the session appends tool results and the user's answers."""
    messages = list(request.messages)
    if decision.kind != "question":          # session.ask_user appends the question itself
        messages.append(Message(role="assistant", content=decision.text, tool_calls=decision.tool_calls))
    session.state.messages = messages


Ask = Callable[[ModelRequest], Awaitable[ModelResponse]]


class _AskModel:
    """The framework's own model as a tether Model, for the finish-up request."""

    def __init__(self, name: str, ask: Ask):
        self.name, self._ask = name, ask

    async def request(self, request: ModelRequest) -> ModelResponse:
        return await self._ask(request)


async def finish_up(session: RunSession, stop: RunStop, name: str, ask: Ask | None) -> tuple[Any, str, str]:
    """``Agent.stopped``: with the guard's ``finish_up``, one last request to the
    framework's own model without tools (tether's loop's finish-up, same prompt)."""
    if ask is None:
        return stop.status, stop.reply or session.state.last_text, stop.reason
    return await LoopAgent(_AskModel(name, ask)).stopped(session, stop)


T = TypeVar("T")


class PerRun(Generic[T]):
    """Per-run adapter state (an agent object serves concurrent trials)."""

    def __init__(self) -> None:
        self._by_session: "weakref.WeakKeyDictionary[RunSession, T]" = weakref.WeakKeyDictionary()

    def __setitem__(self, session: RunSession, value: T) -> None:
        self._by_session[session] = value

    def get(self, session: RunSession) -> T | None:
        return self._by_session.get(session)
