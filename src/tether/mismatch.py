"""Typed mismatches: where a run departed from what was recorded or expected.

Seed 004 section 8.3: a replay failure must say *what* differed, not just
"the final answer is different"::

    Mismatch (AssertionError)
    ├── ModelRequestMismatch   the model was asked something else
    ├── ToolNameMismatch       another tool was called at this step
    ├── ToolArgumentsMismatch  the same tool with other arguments
    ├── ToolCallCountMismatch  calls beyond the recording, or recorded calls never made
    ├── ToolResultMismatch     a tool answered differently than recorded
    ├── TerminalStateMismatch  the run ended with another status
    ├── SemanticOutputMismatch the final reply fails its semantic checks
    └── UserReplyMismatch      the simulated user was asked more often, or something else

Each carries ``step``, ``expected``, ``actual`` and a readable ``diff``; each
is an ``AssertionError`` so pytest shows it as a test failure.

The family sits low (it needs only :mod:`tether.errors`) because replay is not
its only user: the tool doubles and the trajectory assertions raise it too.
Users import it from :mod:`tether.replay`.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from .errors import RunAborted


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def readable_diff(expected: Any, actual: Any) -> str:
    """Field by field for mappings (``amount: expected 19900, actual 199``),
    a unified diff for anything else."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines = []
        for key in sorted(set(expected) | set(actual), key=str):
            if key not in actual:
                lines.append(f"  {key}: expected {_short(expected[key])}, missing")
            elif key not in expected:
                lines.append(f"  {key}: not expected, actual {_short(actual[key])}")
            elif expected[key] != actual[key]:
                lines.append(f"  {key}: expected {_short(expected[key])}, actual {_short(actual[key])}")
        return "\n".join(lines)
    a, b = _pretty(expected).splitlines(), _pretty(actual).splitlines()
    return "\n".join(difflib.unified_diff(a, b, "expected", "actual", lineterm="", n=2))


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


class Mismatch(RunAborted, AssertionError):
    """The run departed from its recording (a RunAborted signal: the loop records it and re-raises)."""

    kind = "Mismatch"

    def __init__(self, step: int | None, expected: Any, actual: Any, *, detail: str = "", rule: str = ""):
        self.step = step
        self.expected = expected
        self.actual = actual
        self.detail = detail
        self.rule = rule            # the canonicalization rule or match mode in force
        self.diff = readable_diff(expected, actual)
        where = f" at step {step}" if step is not None else ""
        head = f"ReplayMismatch.{self.kind}{where}"
        if detail:
            head += f": {detail}"
        body = self.diff or f"  expected {_short(expected)}\n  actual   {_short(actual)}"
        tail = f"\n  (compared under: {rule})" if rule else ""
        super().__init__(f"{head}\n{body}{tail}")

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"ReplayMismatch.{self.kind}", "step": self.step, "expected": self.expected,
                "actual": self.actual, "detail": self.detail, "rule": self.rule}


class ModelRequestMismatch(Mismatch):
    kind = "ModelRequest"


class ToolNameMismatch(Mismatch):
    kind = "ToolName"


class ToolArgumentsMismatch(Mismatch):
    kind = "ToolArguments"


class ToolCallCountMismatch(Mismatch):
    kind = "ToolCallCount"


class ToolResultMismatch(Mismatch):
    kind = "ToolResult"


class TerminalStateMismatch(Mismatch):
    kind = "TerminalState"


class SemanticOutputMismatch(Mismatch):
    kind = "SemanticOutput"


class UserReplyMismatch(Mismatch):
    """The agent asked the simulated user more often, or something else, than recorded."""

    kind = "UserReply"


__all__ = [
    "Mismatch",
    "ModelRequestMismatch",
    "SemanticOutputMismatch",
    "TerminalStateMismatch",
    "ToolArgumentsMismatch",
    "ToolCallCountMismatch",
    "ToolNameMismatch",
    "ToolResultMismatch",
    "UserReplyMismatch",
    "readable_diff",
]
