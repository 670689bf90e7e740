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
from .policies import (
    DEFAULT_SIDE_EFFECT_PREFIXES,
    POLICIES,
    ChangePolicy,
    Rule,
    SideEffects,
    Violation,
    check_policy,
    get_policy,
)
from .results import CaseDiff, ResultsDiff, TrialDiff, diff_results
from .trajectory import diff_trajectories

__all__ = [
    "ArgChange",
    "ArgsDiff",
    "BaselineEntry",
    "CaseDiff",
    "ChangePolicy",
    "DEFAULT_SIDE_EFFECT_PREFIXES",
    "POLICIES",
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
    "check_policy",
    "diff_results",
    "diff_trajectories",
    "find_baseline",
    "get_policy",
    "list_baselines",
    "load_input",
    "load_results",
]
