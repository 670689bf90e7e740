"""Evaluation: case schema, loading, scoring, running suites, metrics."""

from .case import Case, Dimension, case_json_schema
from .loader import case_files, load_case, load_case_text, load_suite
from .results import Results
from .runner import REFERENCE_SYSTEM_PROMPT, EvalConfig, run_suite, run_trial
from .scoring import CriterionResult, TrialScore, Verdict, score_trajectory
from .simulator import ScriptedUser

__all__ = [
    "REFERENCE_SYSTEM_PROMPT",
    "Case",
    "CriterionResult",
    "Dimension",
    "EvalConfig",
    "Results",
    "ScriptedUser",
    "TrialScore",
    "Verdict",
    "case_files",
    "case_json_schema",
    "load_case",
    "load_case_text",
    "load_suite",
    "run_suite",
    "run_trial",
    "score_trajectory",
]
