"""Per-run metrics, computed once when a run finishes and kept in the run's row
(columns ``steps``, ``tool_calls``, ``tokens``, ``cost``, ``trips``, ``looped``,
``invented``, ``hitl``), so ``tether stats`` and the viewer are aggregate
queries instead of reading every run's events. Shared by both backends.
"""

from __future__ import annotations

from typing import Any, Iterable

CLAIM_CHECK_RULES = frozenset({"result.invented_completion", "result.invented_id"})
# the metric columns of a run's row, in this order (both backends)
COLUMNS = ("steps", "tool_calls", "tokens", "cost", "trips", "looped", "invented", "hitl")


def run_facts(run: dict, events: Iterable[dict]) -> dict[str, Any]:
    """What the metrics need from one run (its row and its events)."""
    facts = {"status": run["status"], "steps": 0, "tool_calls": 0, "cost": 0.0, "tokens": 0, "trips": 0,
             "loop": False, "invented": False, "hitl": run["status"] == "needs_human"}
    for e in events:
        kind = e.get("type")
        if kind == "guard_tripped":
            facts["trips"] += 1
            if e.get("guard") == "loop":
                facts["loop"] = True
            if e.get("rule") in CLAIM_CHECK_RULES:
                facts["invented"] = True
        elif kind == "tool_call":
            facts["tool_calls"] += 1
        elif kind == "approval" and e.get("action") == "requested":
            facts["hitl"] = True
        elif kind == "run_finished":       # the last one counts (a resumed run finishes again)
            usage = e.get("usage") or {}
            facts["steps"] = _int(e.get("steps"))
            facts["cost"] = _float(usage.get("cost"))
            facts["tokens"] = _int(usage.get("input_tokens")) + _int(usage.get("output_tokens"))
    if run["status"] == "invented_completion":
        facts["invented"] = True
    return facts


def row_values(facts: dict[str, Any]) -> tuple:
    """The facts as the values of :data:`COLUMNS` (booleans as 0/1)."""
    named = {**facts, "looped": facts["loop"]}
    return tuple(int(named[c]) if isinstance(named[c], bool) else named[c] for c in COLUMNS)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


def _float(value: Any) -> float:
    try:
        return float(value or 0.0)
    except (TypeError, ValueError, OverflowError):
        return 0.0
