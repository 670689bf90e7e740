"""What every framework adapter shares: the ask_user pseudo-tool, call ids,
decisions built from framework answers, and where a session put pinned text
and hints in a request (the guarded run itself is in :mod:`._guarded`)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from ..errors import UsageError
from ..messages import Decision, Message, ToolSpec, canonical_json
from ..models._http import ASK_USER, ASK_USER_TOOL, AdapterStats, RawCall, build_decision
from ..status import TerminalStatus
from ..tools import ToolResult
from ..errors import RunStop
from ..models import ModelRequest
from ..runtime import RunSession

__all__ = ["ASK_USER", "ASK_USER_TOOL", "CallIds", "require", "decision_from", "split_added", "result_text",
           "check_step_cap", "remember"]


def require(module: str, extra: str) -> ModuleType:
    """Import a framework lazily, with the install hint when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UsageError(f"this adapter needs {module.split('.')[0]!r}: pip install 'tether[{extra}]'") from exc


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


