"""Semantic checks on a final reply (seed 004 section 5.1, "semantic determinism").

A check is a callable ``check(reply) -> None | str``: ``None`` when the reply
passes, else why it does not. It has a ``description`` naming the rule, which
a :class:`~tether.replay.SemanticOutputMismatch` reports as its ``rule``.

* :class:`Exact`: the same text (whitespace normalized by default).
* :class:`ContainsAll`: every phrase present (NFKC, case folded).
* :class:`Predicate`: any function of the reply returning bool or a reason.
"""

from __future__ import annotations

import unicodedata
from typing import Callable, Iterable, Protocol, runtime_checkable

from .canonicalize import Whitespace, normalize_text
from ..mismatch import SemanticOutputMismatch


@runtime_checkable
class SemanticCheck(Protocol):
    description: str

    def __call__(self, reply: str) -> str | None: ...


class Exact:
    def __init__(self, text: str, *, whitespace: Whitespace = "trim"):
        self.text = text
        self.whitespace = whitespace
        self.description = f"exact reply (whitespace: {whitespace})"

    def __call__(self, reply: str) -> str | None:
        if normalize_text(reply, self.whitespace) == normalize_text(self.text, self.whitespace):
            return None
        return "the final reply is not the recorded one"


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


class ContainsAll:
    def __init__(self, phrases: Iterable[str]):
        self.phrases = list(phrases)
        self.description = "reply contains all of: " + ", ".join(repr(p) for p in self.phrases)

    def __call__(self, reply: str) -> str | None:
        missing = [p for p in self.phrases if _fold(p) not in _fold(reply)]
        if not missing:
            return None
        return f"the final reply lacks {len(missing)} of {len(self.phrases)} required phrase(s): " + \
            ", ".join(repr(p) for p in missing)


class Predicate:
    def __init__(self, fn: Callable[[str], bool | str | None], description: str | None = None):
        self.fn = fn
        self.description = description or f"predicate {getattr(fn, '__name__', 'fn')}"

    def __call__(self, reply: str) -> str | None:
        out = self.fn(reply)
        if out is True or out is None:
            return None
        if out is False:
            return f"the final reply fails {self.description}"
        return str(out)


def as_check(check: SemanticCheck | Callable[[str], bool | str | None]) -> SemanticCheck:
    if isinstance(check, (Exact, ContainsAll, Predicate)):
        return check
    if isinstance(check, SemanticCheck) and hasattr(check, "description"):
        return check
    return Predicate(check)


def check_reply(check: SemanticCheck | Callable[[str], bool | str | None], reply: str, *, step: int | None,
                expected: str | None = None) -> None:
    """Raise :class:`SemanticOutputMismatch` when ``reply`` fails ``check``."""
    c = as_check(check)
    why = c(reply)
    if why is None:
        return
    want = expected if expected is not None else getattr(c, "text", None) or c.description
    raise SemanticOutputMismatch(step, want, reply, detail=why, rule=c.description)


__all__ = ["ContainsAll", "Exact", "Predicate", "SemanticCheck", "as_check", "check_reply"]
