"""Evaluation: case schema, loading, scoring, running suites, metrics.

Names are imported on first use (PEP 562): ``tether.evals.case_index`` and the
CLI's listing commands load without pydantic models or the runner.
"""

from importlib import import_module
from typing import Any

_PUBLIC = {
    "REFERENCE_SYSTEM_PROMPT": ".runner",
    "Case": ".case",
    "CriterionResult": ".scoring",
    "Dimension": ".case",
    "EvalConfig": ".runner",
    "EvalGateFailed": ".gates",
    "FailUnder": ".gates",
    "Judge": ".judge",
    "judge_trial": ".judge",
    "rescore_results": ".rescore",
    "TooManyErrors": ".gates",
    "calibrate": ".calibrate",
    "check_case": ".loader",
    "test_case": ".case_examples",
    "Results": ".results",
    "ScriptedUser": ".simulator",
    "TrialScore": ".scoring",
    "Verdict": ".scoring",
    "case_files": ".loader",
    "case_json_schema": ".case",
    "load_case": ".loader",
    "load_case_text": ".loader",
    "load_suite": ".loader",
    "run_suite": ".runner",
    "run_trial": ".runner",
    "score_trajectory": ".scoring",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
