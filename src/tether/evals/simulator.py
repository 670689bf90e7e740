"""The scripted simulated user: deterministic answers from a case's persona."""

from __future__ import annotations

import unicodedata

from ..events import Trajectory
from .case import Persona


def _norm(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if not ch.isspace())


class ScriptedUser:
    """Answers questions from ``persona``: revealed facts first, then replies.

    State lives in the trajectory (what the simulator already said), so one
    instance can serve one run; make a new one per run.
    """

    def __init__(self, persona: Persona):
        self.persona = persona
        self.revealed: set[str] = set()
        self.replies_used = 0

    def state(self) -> dict:
        return {"revealed": sorted(self.revealed), "replies_used": self.replies_used}

    def load_state(self, state: dict) -> None:
        self.revealed = set(state.get("revealed", []))
        self.replies_used = int(state.get("replies_used", 0))

    async def reply(self, question: str, trajectory: Trajectory) -> str | None:
        said = sum(1 for m in trajectory.user_messages() if m.source == "simulator")
        if said >= self.persona.max_rounds:
            return None
        q = _norm(question)
        facts: list[str] = []
        for key, fact in self.persona.reveals.items():
            if key not in self.revealed and _norm(key) in q and fact not in facts:
                facts.append(fact)
        for key in self.persona.reveals:
            if _norm(key) in q:
                self.revealed.add(key)
        if facts:
            return "；".join(facts)
        replies = self.persona.replies
        if self.replies_used < len(replies):
            self.replies_used += 1
            return replies[self.replies_used - 1]
        if replies and self.persona.then == "repeat_last":
            return replies[-1]
        return self.persona.default_reply
