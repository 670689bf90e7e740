"""Regression diffs: what changed between two runs, and whether the change type allows it.

Seed 004, section 14: Δ = (Δstep, Δargs, Δrecovery, Δterminal, Δtext), judged
against the kind of change that was made (prompt, tool schema, model, memory,
orchestration, performance). See docs/diff.md.
"""

from .baseline import BaselineEntry, accept_baseline, find_baseline, list_baselines
from .loading import ResultsFile, load_input, load_results
from .parts import (
    ArgChange,
    ArgsDiff,
    RecoveryDiff,
    RecoveryStats,
    StepChange,
    StepDiff,
    TerminalDiff,
    TextDiff,
    TrajectoryDiff,
)
from .change_types import (
    DEFAULT_SIDE_EFFECT_PREFIXES,
    CHANGE_TYPES,
    ChangeType,
    Rule,
    SideEffects,
    Violation,
    check_change_type,
    get_change_type,
)
from .results import CaseDiff, ResultsDiff, TrialDiff, diff_results
from .trajectory import diff_trajectories

__all__ = [
    "ArgChange",
    "ArgsDiff",
    "BaselineEntry",
    "CaseDiff",
    "ChangeType",
    "DEFAULT_SIDE_EFFECT_PREFIXES",
    "CHANGE_TYPES",
    "RecoveryDiff",
    "RecoveryStats",
    "ResultsDiff",
    "ResultsFile",
    "Rule",
    "SideEffects",
    "StepChange",
    "StepDiff",
    "TerminalDiff",
    "TextDiff",
    "TrajectoryDiff",
    "TrialDiff",
    "Violation",
    "accept_baseline",
    "check_change_type",
    "diff_results",
    "diff_trajectories",
    "find_baseline",
    "get_change_type",
    "list_baselines",
    "load_input",
    "load_results",
]
