"""Simulated users: deterministic answers from a case's persona (``ScriptedUser``),
the side record both simulators keep (why the user stopped, whether it broke
its persona), and the deterministic persona-break checks.

The LLM-driven simulator lives in :mod:`tether.evals.llm_user`; :func:`make_user`
builds either from ``EvalConfig.simulator``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import TYPE_CHECKING

from ..events import AgentMessage, Trajectory, UserMessage
from .case import Persona

if TYPE_CHECKING:
    from ..models import Model

DEFAULT_REFUSAL = "不想说"


def _norm(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if not ch.isspace())


class PersonaUser:
    """What every simulated user keeps beside its answers: the side record
    ``run_trial`` reads after the run.

    ``stop`` says why the user ended the conversation (``"patience: ..."``,
    ``"max_rounds: ..."``, ``"stop_token: ..."``, ``"replies_exhausted: ..."``);
    ``fault`` says how the simulator broke its persona (``"persona_break: ..."``)
    or failed (``"simulator_error: ..."``): the trial is then a simulator fault,
    kept out of the agent's score. Once the user has
    stopped, every further question gets ``None`` (the run ends ``awaiting_user``).
    """

    def __init__(self, persona: Persona):
        self.persona = persona
        self.asked = 0                 # questions this simulator was asked in this run
        self.stop: str | None = None
        self.fault: str | None = None
        self.closed = False

    def state(self) -> dict:
        return {"asked": self.asked, "stop": self.stop, "fault": self.fault, "closed": self.closed}

    def load_state(self, state: dict) -> None:
        self.asked = int(state.get("asked", 0))
        self.stop = state.get("stop")
        self.fault = state.get("fault")
        self.closed = bool(state.get("closed", False))

    # -- stopping ------------------------------------------------------------------
    def _end(self, reason: str, detail: str, last_line: str | None = None) -> str | None:
        """End the conversation: ``last_line`` (if any) is still said, later questions get None."""
        self.stop = f"{reason}: {detail}"
        self.closed = True
        return last_line

    def _broke(self, fault: str) -> None:
        self.fault = fault
        self.stop = fault
        self.closed = True

    def _limits(self, trajectory: Trajectory) -> tuple[bool, str | None]:
        """Count this question; (True, line) when max_rounds or patience ends the conversation."""
        self.asked += 1
        said = sum(1 for m in trajectory.user_messages() if m.source == "simulator")
        p = self.persona
        if said >= p.max_rounds:
            return True, self._end("max_rounds", f"the user already replied {said} times (max_rounds {p.max_rounds})")
        if p.patience is not None:
            n = history_questions(trajectory) + self.asked
            if n > p.patience:
                closing = f"; closing line 「{p.closing}」" if p.closing else ""
                return True, self._end("patience", f"question {n} exceeds patience {p.patience}{closing}", p.closing)
        return False, None


class ScriptedUser(PersonaUser):
    """Answers questions from ``persona`` by rules: refusals and revealed facts
    first, then ``replies``; stops at ``max_rounds`` or when patience runs out.

    One instance serves one run; make a new one per run.
    """

    def __init__(self, persona: Persona):
        super().__init__(persona)
        self.revealed: set[str] = set()
        self.replies_used = 0
        self.refusals_used = 0

    def state(self) -> dict:
        return {"revealed": sorted(self.revealed), "replies_used": self.replies_used,
                "refusals_used": self.refusals_used, **super().state()}

    def load_state(self, state: dict) -> None:
        super().load_state(state)
        self.revealed = set(state.get("revealed", []))
        self.replies_used = int(state.get("replies_used", 0))
        self.refusals_used = int(state.get("refusals_used", 0))

    async def reply(self, question: str, trajectory: Trajectory) -> str | None:
        if self.closed:
            return None
        ended, line = self._limits(trajectory)
        if ended:
            return line
        q = _norm(question)
        refused = [k for k in self.persona.refused_topics if _norm(k) in q]
        parts: list[str] = []
        for key, fact in self.persona.reveals.items():
            if key in refused or _norm(key) not in q:
                continue
            if key not in self.revealed and fact not in parts:
                parts.append(fact)
            self.revealed.add(key)
        if refused:
            parts.append(self._refusal())
        if parts:
            return "；".join(parts)
        replies = self.persona.replies
        if self.replies_used < len(replies):
            self.replies_used += 1
            return replies[self.replies_used - 1]
        if replies and self.persona.then == "repeat_last":
            return replies[-1]
        if self.persona.default_reply is None:
            return self._end("replies_exhausted", f"no reply left after {len(replies)} scripted replies")
        return self.persona.default_reply

    def _refusal(self) -> str:
        lines = self.persona.refusal_replies or [DEFAULT_REFUSAL]
        line = lines[min(self.refusals_used, len(lines) - 1)]
        self.refusals_used += 1
        return line


def make_user(persona: Persona | None, simulator: "str | Model" = "scripted") -> PersonaUser | None:
    """The simulated user for a trial: ``"scripted"`` (default), a model spec
    string (resolved with :func:`tether.models.resolve_model`) or a Model."""
    if persona is None:
        return None
    if isinstance(simulator, str):
        if simulator == "scripted":
            return ScriptedUser(persona)
        from ..models import resolve_model

        simulator = resolve_model(simulator)
    from .llm_user import LLMUser

    return LLMUser(persona, simulator)


# -- the conversation, as the user saw it ---------------------------------------------
def history_questions(trajectory: Trajectory) -> int:
    return sum(1 for e in trajectory.of_type(AgentMessage) if e.kind == "question" and e.source == "history")


def conversation_text(trajectory: Trajectory, question: str) -> tuple[str, str]:
    """(everything the agent said to the user, everything said by anyone), normalized,
    including the current ``question``."""
    agent = [e.content for e in trajectory.of_type(AgentMessage)] + [question]
    user = [e.content for e in trajectory.of_type(UserMessage)]
    return _norm("\n".join(agent)), _norm("\n".join(agent + user))


# -- persona-break detection --------------------------------------------------------
_SPLIT = re.compile(r"[，,。.；;、：:！!？?\s()（）「」“”\"'/]+")

# Matched against the reply without whitespace (Chinese) and with single spaces (English, tags, JSON keys).
_ASSISTANT_COMPACT = [re.compile(p) for p in (
    r"(我|本人)(是|作为)(一个|一名|您的|你的)?(ai|人工智能|智能助手|助手|语言模型|机器人)",
    r"作为(一个|一名)?(ai|人工智能|智能助手|助手|语言模型)",
    r"我(来|可以|能|将|会|这就|马上|现在)(帮|为|替)(你|您)",
    r"我(帮|为|替)(你|您)(们)?(搜|查|找|订|预订|规划|安排|推荐)",
    r"让我(来)?(为您|帮您|给您|为你|帮你)?(搜索|查询|查找|查一下|搜一下|调用)",
    r"(有什么|还有什么)(我)?(可以|能)(帮|为)(你|您)",
)]
_ASSISTANT_SPACED = [re.compile(p) for p in (
    r"\bas an? (ai|assistant|language model)\b",
    r"\bi(?:'m| am) (?:an? |your )?(ai|assistant|language model)\b",
    r"\bhow (?:can|may) i (?:help|assist)\b",
    r"\bi can help you\b",
    r"\blet me (?:search|look up|check|find)\b",
    r"<\s*/?\s*(tool_call|function_call|tool_use)\b",
    r'"(name|tool|function|arguments|tool_calls|parameters)"\s*:',
)]


def _markers(fact: str) -> list[str]:
    """The fact itself and its clauses of 4+ characters, normalized."""
    parts = [_norm(p) for p in _SPLIT.split(fact)]
    return [m for m in dict.fromkeys([_norm(fact), *(p for p in parts if len(p) >= 4)]) if m]


def speaks_as_assistant(reply: str) -> str | None:
    """The phrase that shows the simulator talking like the assistant, if any."""
    text = " ".join(unicodedata.normalize("NFKC", reply).casefold().split())
    stripped = text.strip()
    if stripped and stripped[0] in "{[":
        try:
            json.loads(stripped)
            return stripped[:60]
        except ValueError:
            pass
    compact = text.replace(" ", "")
    for patterns, subject in ((_ASSISTANT_COMPACT, compact), (_ASSISTANT_SPACED, text)):
        for pattern in patterns:
            m = pattern.search(subject)
            if m:
                return m.group(0)
    return None


def persona_break(persona: Persona, question: str, reply: str, trajectory: Trajectory | None = None) -> str | None:
    """Why ``reply`` (to ``question``) breaks ``persona``, or None. Deterministic checks:
    an empty reply; talking as the assistant (offering to search, calling itself
    助手/AI, tool-call-like JSON); giving a ``withheld`` fact; giving a ``reveals``
    fact that no agent question asked about (none of its keywords was asked, and
    it was not already in the conversation)."""
    if not reply.strip():
        return "empty reply"
    said = speaks_as_assistant(reply)
    if said:
        return f"spoke as the assistant: 「{said}」"
    r = _norm(reply)
    for key, fact in persona.withheld.items():
        if any(m in r for m in _markers(fact)):
            return f"answered a refused topic ({key}): 「{fact}」"
    asked, context = conversation_text(trajectory or Trajectory(), question)
    facts: dict[str, list[str]] = {}
    for key, fact in persona.reveals.items():
        facts.setdefault(fact, []).append(key)
    for fact, keys in facts.items():
        hits = [m for m in _markers(fact) if m in r]
        if not hits or any(_norm(k) in asked for k in keys) or any(m in context for m in hits):
            continue
        return f"revealed a fact nobody asked about ({'/'.join(keys)}): 「{fact}」 in reply to 「{question}」"
    return None

