"""Reading the conversation, and replaying it.

The policies are stateless: every request, :func:`read_conversation` finds
the user's task (the latest user message that is not an answer to a
question) and the events since then, in order: tool calls with their
results, and questions to the user with the replies.

:class:`Replay` lets a policy be written as a straight program ("call this,
then if it fails retry ..."): each ``call``/``ask`` returns the recorded
outcome while the conversation has one, and raises :class:`Emit` with the
next decision at the frontier. Since the program is deterministic, the
replay retraces exactly the decisions it made on earlier steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...messages import Decision, Message
from ...runtime.loop import split_notes
from ._assess import Assessment, assess_content

_QUESTION = re.compile(r"[？?]|请问|请提供|请告诉|请说明|请确认|告诉我|能否|哪里|哪天|多少|是否")


def is_question(text: str) -> bool:
    return bool(_QUESTION.search(text or ""))


@dataclass
class ToolEvent:
    name: str
    arguments: dict[str, Any]
    call_id: str
    assessment: Assessment | None = None


@dataclass
class QAEvent:
    question: str
    reply: str


@dataclass
class Conversation:
    request: str = ""
    replies: list[str] = field(default_factory=list)
    events: list[ToolEvent | QAEvent] = field(default_factory=list)


def read_conversation(messages: list[Message]) -> Conversation:
    conv = Conversation()
    pending: dict[str, ToolEvent] = {}
    prev: Message | None = None
    for m in messages:
        if m.role == "system":
            continue
        if m.role in ("user", "tool"):        # tether's notes (guard hints, the finish-up request) are not the user's
            m = m.model_copy(update={"content": split_notes(m.content)[0]})
            if m.role == "user" and not m.content:
                continue
        if m.role == "user":
            asked = prev is not None and prev.role == "assistant" and not prev.tool_calls and is_question(prev.content)
            if asked and conv.request:
                conv.events.append(QAEvent(prev.content, m.content))
                conv.replies.append(m.content)
            elif prev is not None and prev.role == "user" and conv.request:
                conv.replies.append(m.content)
            else:
                conv = Conversation(request=m.content)
                pending = {}
        elif m.role == "assistant":
            for call in m.tool_calls:
                ev = ToolEvent(call.name, dict(call.arguments), call.id)
                conv.events.append(ev)
                pending[call.id] = ev
        elif m.role == "tool" and m.tool_call_id in pending:
            pending.pop(m.tool_call_id).assessment = assess_content(m.content)
        prev = m
    conv.events = [e for e in conv.events if not isinstance(e, ToolEvent) or e.assessment is not None]
    return conv


class Emit(Exception):
    """The program reached the frontier: this is the next decision."""

    def __init__(self, decision: Decision):
        super().__init__(decision.kind)
        self.decision = decision


@dataclass
class AssessedCall:
    """A call the policy already made, with how its result was assessed."""

    name: str
    arguments: dict[str, Any]
    assessment: Assessment


class Replay:
    def __init__(self, events: list[ToolEvent | QAEvent], step: int):
        self.events = events
        self.pos = 0
        self.step = step
        self.calls: list[AssessedCall] = []
        self.questions: list[tuple[str, str]] = []

    def call(self, name: str, arguments: dict[str, Any]) -> Assessment:
        while self.pos < len(self.events):
            ev = self.events[self.pos]
            self.pos += 1
            if isinstance(ev, ToolEvent) and ev.name == name and ev.assessment is not None:
                self.calls.append(AssessedCall(name, dict(ev.arguments), ev.assessment))
                return ev.assessment
        raise Emit(Decision.call(name, arguments, id=f"call_{self.step}_{len(self.calls)}"))

    def ask(self, question: str) -> str:
        while self.pos < len(self.events):
            ev = self.events[self.pos]
            self.pos += 1
            if isinstance(ev, QAEvent):
                self.questions.append((ev.question, ev.reply))
                return ev.reply
        raise Emit(Decision.ask(question))

    def count(self, name: str, arguments: dict[str, Any] | None = None) -> int:
        return sum(1 for c in self.calls if c.name == name and (arguments is None or c.arguments == arguments))
