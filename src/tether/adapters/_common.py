"""What every framework adapter shares: the ask_user pseudo-tool, call ids,
decisions built from framework answers, and where a session put pinned text
and hints in a request."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from ..errors import UsageError
from ..messages import Decision, Message, ToolCallRequest, ToolSpec, canonical_json
from ..models._http import ASK_USER, ASK_USER_TOOL, AdapterStats, RawCall, build_decision
from ..status import TerminalStatus
from ..tools import ToolResult
from ._compat import RunSession, RunStop

__all__ = ["ASK_USER", "ASK_USER_TOOL", "CallIds", "require", "decision_from", "split_added", "harness_specs",
           "run_tool", "result_text"]


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
