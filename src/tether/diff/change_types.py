"""Change types: which differences a kind of change may make (seed 004, section 14).

Agent regression is not "zero differences": a prompt change *should* reword
the reply. Each change type names the differences it usually allows and the
ones it forbids; ``check_change_type`` turns a diff into the list of forbidden
differences (``Violation``), each with its case, trial and a readable reason.

=============  ===========  ===============================================  =============================================
change type    seed name    usually allows                                   forbids (rules)
=============  ===========  ===============================================  =============================================
prompt         文案 Prompt  reply wording; steps without side effects        args, terminal, side_effects, verdict_regression
tool_schema    工具 Schema  argument changes (the planned field migration),  side_effects, terminal_regression,
                            reply wording, steps                             verdict_regression
model          模型版本     reply wording, steps, arguments, recovery        terminal_regression, verdict_regression,
                                                                             side_effects
memory         Memory 结构  reply wording (context format), steps            args, terminal_regression, side_effects,
                                                                             verdict_regression
orchestration  编排代码     step reorders (give the reason when accepting),  side_effects, recovery_regression,
                            other step changes, reply wording                terminal_regression, verdict_regression
performance    性能优化     fewer steps, tool calls and tokens; wording      args, terminal, recovery_regression,
                                                                             cost_increase, side_effects, verdict_regression
=============  ===========  ===============================================  =============================================

A call is *side-effecting* when the run's record says so (the tool specs it
offered mark ``side_effect``; the side-effect ledger wrote an intent for it),
or its tool is named with ``--side-effect`` / ``SideEffects(tools=...)``. Only
for a trace that records neither (format 1, an import without specs) does
the name decide: it starts with one of ``DEFAULT_SIDE_EFFECT_PREFIXES``.
Calls answered from the ledger were not executed and never count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Iterable

from pydantic import BaseModel

from ..errors import UsageError
from .results import ResultsDiff, TrialDiff
from .parts import ComparedCall, StepDiff, TrajectoryDiff

DEFAULT_SIDE_EFFECT_PREFIXES = ("create_", "submit_", "update_", "delete_", "send_", "pay_", "refund")


class Rule(StrEnum):
    ARGS = "args"                                 # an argument of an aligned call changed
    TERMINAL = "terminal"                         # the terminal status changed at all
    TERMINAL_REGRESSION = "terminal_regression"   # a clean ending became an unclean one
    SIDE_EFFECTS = "side_effects"                 # more, or duplicated, calls of side-effecting tools
    RECOVERY_REGRESSION = "recovery_regression"   # more retries / repeats / guard trips, fewer strategies
    VERDICT_REGRESSION = "verdict_regression"     # a case verdict moved toward fail (pass -> fail, ...)
    COST_INCREASE = "cost_increase"               # more steps, tool calls or tokens


@dataclass(frozen=True)
class ChangeType:
    name: str
    label: str                     # the seed's name for the change type
    allows: tuple[str, ...]
    forbids: tuple[Rule, ...]


_R = Rule
CHANGE_TYPES: dict[str, ChangeType] = {p.name: p for p in (
    ChangeType("prompt", "文案 Prompt", ("reply wording", "steps without side effects"),
                 (_R.ARGS, _R.TERMINAL, _R.SIDE_EFFECTS, _R.VERDICT_REGRESSION)),
    ChangeType("tool_schema", "工具 Schema", ("argument changes (the planned field migration)", "reply wording", "steps"),
                 (_R.SIDE_EFFECTS, _R.TERMINAL_REGRESSION, _R.VERDICT_REGRESSION)),
    ChangeType("model", "模型版本", ("reply wording", "steps", "arguments", "recovery changes"),
                 (_R.TERMINAL_REGRESSION, _R.VERDICT_REGRESSION, _R.SIDE_EFFECTS)),
    ChangeType("memory", "Memory 结构", ("reply wording (context format)", "steps"),
                 (_R.ARGS, _R.TERMINAL_REGRESSION, _R.SIDE_EFFECTS, _R.VERDICT_REGRESSION)),
    ChangeType("orchestration", "编排代码", ("step reorders (give the reason when accepting)", "other step changes",
                                            "reply wording"),
                 (_R.SIDE_EFFECTS, _R.RECOVERY_REGRESSION, _R.TERMINAL_REGRESSION, _R.VERDICT_REGRESSION)),
    ChangeType("performance", "性能优化", ("fewer steps, tool calls and tokens", "reply wording"),
                 (_R.ARGS, _R.TERMINAL, _R.RECOVERY_REGRESSION, _R.COST_INCREASE, _R.SIDE_EFFECTS,
                  _R.VERDICT_REGRESSION)),
)}


@dataclass(frozen=True)
class SideEffects:
    """Which tool names count as side-effecting."""

    tools: frozenset[str] = field(default_factory=frozenset)
    prefixes: tuple[str, ...] = DEFAULT_SIDE_EFFECT_PREFIXES

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.tools or name.startswith(self.prefixes))

    def of(self, call: "ComparedCall") -> bool:
        """Is this call side-effecting: named, else as its record says, else by its name."""
        if call.tool in self.tools:
            return True
        return call.side_effect if call.side_effect is not None else call.tool.startswith(self.prefixes)


class Violation(BaseModel):
    rule: Rule
    message: str
    case_id: str | None = None
    trial: int | None = None

    def describe(self) -> str:
        where = self.case_id or ""
        if self.trial is not None:
            where += f" trial {self.trial}"
        return f"{where.strip() + ': ' if where.strip() else ''}{self.rule}: {self.message}"


def get_change_type(change_type: str | ChangeType) -> ChangeType:
    if isinstance(change_type, ChangeType):
        return change_type
    try:
        return CHANGE_TYPES[change_type.replace("-", "_")]
    except KeyError:
        raise UsageError(f"unknown change type {change_type!r}; known: {', '.join(CHANGE_TYPES)}") from None


def check_change_type(diff: TrajectoryDiff | ResultsDiff, change_type: str | ChangeType, *,
                 side_effects: SideEffects | Iterable[str] | None = None) -> list[Violation]:
    """The differences in ``diff`` that ``change_type`` forbids (empty: the change is within its type)."""
    rules = get_change_type(change_type)
    se = side_effects if isinstance(side_effects, SideEffects) else SideEffects(frozenset(side_effects or ()))
    forbids = set(rules.forbids)
    if isinstance(diff, TrajectoryDiff):
        return [Violation(rule=r, message=m) for r, m in _trajectory(diff, forbids, se)]
    out: list[Violation] = []
    for case in diff.cases:
        if Rule.VERDICT_REGRESSION in forbids:
            for what, change in (("verdict", case.verdict), ("auto verdict", case.auto_verdict)):
                if change.kind == "regressed":
                    out.append(Violation(rule=Rule.VERDICT_REGRESSION, case_id=case.case_id,
                                         message=f"{what} {change.base} -> {change.new}"))
        for trial in case.trials:
            found = _trajectory(trial.trajectory, forbids, se) if trial.trajectory else _counters_only(trial, forbids)
            out.extend(Violation(rule=r, message=m, case_id=case.case_id, trial=trial.trial) for r, m in found)
    return out


def _trajectory(d: TrajectoryDiff, forbids: set[Rule], se: SideEffects) -> list[tuple[Rule, str]]:
    out: list[tuple[Rule, str]] = []
    if Rule.ARGS in forbids:
        out += [(Rule.ARGS, f"call #{c.new_pos} {c.describe()}") for c in d.args.changes]
    if Rule.TERMINAL in forbids and d.terminal.changed:
        out.append((Rule.TERMINAL, f"status {d.terminal.base} -> {d.terminal.new}"))
    elif Rule.TERMINAL_REGRESSION in forbids and d.terminal.kind == "regressed":
        out.append((Rule.TERMINAL_REGRESSION, f"status {d.terminal.base} -> {d.terminal.new}"))
    if Rule.SIDE_EFFECTS in forbids:
        out += [(Rule.SIDE_EFFECTS, m) for m in side_effect_problems(d.step, se)]
    if Rule.RECOVERY_REGRESSION in forbids:
        out += [(Rule.RECOVERY_REGRESSION, c.describe()) for c in d.recovery.regressions]
    if Rule.COST_INCREASE in forbids:
        out += [(Rule.COST_INCREASE, c.describe()) for c in d.cost.changes if c.assessment == "worse"]
    return out


def _counters_only(t: TrialDiff, forbids: set[Rule]) -> list[tuple[Rule, str]]:
    """Without traces: terminal from the statuses, recovery and cost from the counters."""
    out: list[tuple[Rule, str]] = []
    if Rule.TERMINAL in forbids and t.terminal.changed:
        out.append((Rule.TERMINAL, f"status {t.terminal.base} -> {t.terminal.new}"))
    elif Rule.TERMINAL_REGRESSION in forbids and t.terminal.kind == "regressed":
        out.append((Rule.TERMINAL_REGRESSION, f"status {t.terminal.base} -> {t.terminal.new}"))
    for c in t.counters:
        if Rule.RECOVERY_REGRESSION in forbids and c.assessment == "worse" and c.metric not in ("steps", "tool_calls"):
            out.append((Rule.RECOVERY_REGRESSION, c.describe() + " (counters; trace missing)"))
        if Rule.COST_INCREASE in forbids and c.metric in ("steps", "tool_calls") and c.new > c.base:
            out.append((Rule.COST_INCREASE, c.describe() + " (counters; trace missing)"))
    return out


def side_effect_problems(step: StepDiff, se: SideEffects) -> list[str]:
    """Side-effecting calls the new run makes beyond the base run: a call with
    the same arguments repeated more often (duplicated), or more calls of a tool."""
    base_sig = Counter(c.signature for c in step.base_calls if se.of(c))
    new_sig = Counter(c.signature for c in step.new_calls if se.of(c))
    base_n = Counter(c.tool for c in step.base_calls if se.of(c))
    new_n = Counter(c.tool for c in step.new_calls if se.of(c))
    out: list[str] = []
    flagged: set[str] = set()
    for sig, n in new_sig.items():
        if n > 1 and n > base_sig[sig]:
            tool = sig.split(":", 1)[0]
            flagged.add(tool)
            out.append(f"duplicated side effect: {tool} with the same arguments x{n} (base x{base_sig[sig]})")
    for tool, n in sorted(new_n.items()):
        if n > base_n[tool] and tool not in flagged:
            out.append(f"extra side effect: {tool} called {n} time(s) (base {base_n[tool]})")
    return out
