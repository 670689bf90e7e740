"""The parts of a trajectory diff: Δstep, Δargs, Δrecovery, Δterminal, Δtext (and cost).

Plain pydantic models, so a diff serializes as JSON (``tether diff --json``).
Computed in ``trajectory.py``.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from ..messages import canonical_json

Assessment = Literal["better", "worse", "neutral"]
TerminalKind = Literal["same", "improved", "regressed", "changed"]


class ComparedCall(BaseModel):
    """One tool call as the diff aligns and compares it."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # Side-effecting, as the run's record says (its tool specs, its ledger); None: the record does not say
    side_effect: bool | None = None

    @property
    def signature(self) -> str:
        return f"{self.tool}:{canonical_json(self.arguments)}"


class StepChange(BaseModel):
    """Consecutive calls added, removed or moved (positions 1-based)."""

    kind: Literal["added", "removed", "moved"]
    tools: list[str]               # the calls' tool names, in order
    base_pos: int | None = None    # first position in the base run
    new_pos: int | None = None     # first position in the new run

    @property
    def count(self) -> int:
        return len(self.tools)

    def describe(self) -> str:
        n = self.count
        if len(set(self.tools)) == 1:
            what = self.tools[0] + (f" x{n}" if n > 1 else "")
        elif n <= 3:
            what = ", ".join(self.tools)
        else:
            what = f"{n} calls (" + ", ".join(f"{t} x{k}" for t, k in Counter(self.tools).items()) + ")"
        if self.kind == "added":
            return f"+ {what} at #{_span(self.new_pos, n)}"
        if self.kind == "removed":
            return f"- {what} at #{_span(self.base_pos, n)}"
        return f"~ {what} moved #{_span(self.base_pos, n)} -> #{_span(self.new_pos, n)}"


class CountChange(BaseModel):
    tool: str
    base: int
    new: int


class StepDiff(BaseModel):
    base_calls: list[ComparedCall] = Field(default_factory=list)
    new_calls: list[ComparedCall] = Field(default_factory=list)
    changes: list[StepChange] = Field(default_factory=list)
    counts: list[CountChange] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    @property
    def reordered(self) -> list[StepChange]:
        return [c for c in self.changes if c.kind == "moved"]


class ArgChange(BaseModel):
    tool: str
    path: str                       # field path inside the arguments: amount, items[0].sku
    base_pos: int                   # 1-based positions of the aligned calls
    new_pos: int
    base: Any = None
    new: Any = None
    base_present: bool = True
    new_present: bool = True

    def describe(self) -> str:
        old = _value(self.base) if self.base_present else "(absent)"
        new = _value(self.new) if self.new_present else "(absent)"
        return f"{self.tool}.{self.path}: {old} -> {new}"

    def __str__(self) -> str:
        return self.describe()


class ArgsDiff(BaseModel):
    changes: list[ArgChange] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)


class RecoveryStats(BaseModel):
    errors: int = 0                 # tool results with ok = false (guard answers excluded)
    empty: int = 0                  # ok results that carried nothing
    retries: int = 0                # calls identical to an earlier unsuccessful call
    max_identical: int = 0          # most repeats of one exact call
    strategies: list[str] = Field(default_factory=list)   # retry / reword / fallback, in order tried
    calls_after_failure: int = 0    # executed calls after the first unsuccessful result
    guard_trips: int = 0
    blocked: int = 0                # calls a guard blocked or stopped


class MetricChange(BaseModel):
    metric: str
    base: Any
    new: Any
    assessment: Assessment = "neutral"

    def describe(self) -> str:
        def show(v: Any) -> str:
            return (", ".join(v) or "none") if isinstance(v, list) else str(v)
        tag = f" ({self.assessment})" if self.assessment != "neutral" else ""
        return f"{self.metric} {show(self.base)} -> {show(self.new)}{tag}"


class RecoveryDiff(BaseModel):
    base: RecoveryStats
    new: RecoveryStats
    changes: list[MetricChange] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    @property
    def regressions(self) -> list[MetricChange]:
        return [c for c in self.changes if c.assessment == "worse"]


class TerminalDiff(BaseModel):
    base: str | None
    new: str | None
    kind: TerminalKind = "same"

    @property
    def changed(self) -> bool:
        return self.kind != "same"


class TextDiff(BaseModel):
    base: str = ""
    new: str = ""
    similarity: float = 1.0
    diff: list[str] = Field(default_factory=list)   # unified diff lines, at most TEXT_DIFF_LINES

    @property
    def changed(self) -> bool:
        return self.base != self.new


class CostDiff(BaseModel):
    changes: list[MetricChange] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)


PARTS = ("step", "args", "recovery", "terminal", "text")
TEXT_DIFF_LINES = 40


class TrajectoryDiff(BaseModel):
    base_run: str = ""
    new_run: str = ""
    step: StepDiff
    args: ArgsDiff
    recovery: RecoveryDiff
    terminal: TerminalDiff
    text: TextDiff
    cost: CostDiff = Field(default_factory=CostDiff)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def changed_parts(self) -> list[str]:
        return [p for p in PARTS if getattr(self, p).changed]

    @property
    def changed(self) -> bool:
        return bool(self.changed_parts)


def _span(start: int | None, count: int) -> str:
    if start is None:
        return "?"
    return str(start) if count == 1 else f"{start}-{start + count - 1}"


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
