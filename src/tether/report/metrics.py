"""Run metrics over the store (seed 002 section 10.2): completion, steps,
loop triggers, invented completions, human intervention, cost.

Every number is over the *finished, non-error* runs that match the filters
(a run that ended ``error`` failed for reasons outside the agent: an
unreachable model, a harness bug; it is counted in ``errors`` and left out of
every rate and mean; a run still ``running`` is counted in ``running``).
docs/report.md defines each key:

* ``completion_rate``: runs whose status is ``completed``, ``submitted`` or
  ``succeeded`` (the agent ended the task itself) / runs with an outcome (a run
  that ended ``ended``, an MCP gateway window, has none: it is in every other
  number, never in this one);
* ``steps_mean`` / ``steps_p95``: model steps per run (``run_finished.steps``);
  the 95th percentile by the nearest-rank method (the smallest value with at
  least 95 % of runs at or below it);
* ``loop_trigger_rate``: runs with at least one loop-guard trip (hint, block or
  stop) / runs;
* ``invented_completion_rate``: runs that ended ``invented_completion`` or in
  which the result guard's claim check tripped (``result.invented_completion``,
  ``result.invented_id``) / runs;
* ``hitl_rate``: runs in which an approval was requested or that ended
  ``needs_human`` / runs;
* ``cost_mean``: the agent's own model cost per run (``run_finished.usage.cost``;
  judge, simulated-user and drift-check requests are not the agent's cost).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any, Iterable

from ..errors import UsageError

from ..store.facts import CLAIM_CHECK_RULES, run_facts  # noqa: F401  (one definition, shared with the stores)
from ..store.queries import NO_OUTCOME

COMPLETION_STATUSES = frozenset({"completed", "submitted", "succeeded"})
KEYS = ("completion_rate", "steps_mean", "steps_p95", "loop_trigger_rate", "invented_completion_rate",
        "hitl_rate", "cost_mean")


def p95(values: list[float]) -> float | None:
    """Nearest-rank 95th percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def parse_since(text: str | None, *, now: float | None = None) -> float | None:
    """``7d``, ``12h``, ``30m`` (ago) or an ISO date / datetime -> a UNIX time. An age or a date
    before 1970 is 1970 (no run is older): ``99999999d`` means every run, not an error."""
    if not text:
        return None
    now = dt.datetime.now().timestamp() if now is None else now
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([dhm])\s*", text)
    if m:
        return max(0.0, now - float(m.group(1)) * {"d": 86400, "h": 3600, "m": 60}[m.group(2)])
    try:
        when = dt.datetime.fromisoformat(text.strip())
        return 0.0 if when.year < 1970 else max(0.0, when.timestamp())
    except (ValueError, OverflowError, OSError):
        raise UsageError(f"--since {text!r}: give a duration (7d, 12h, 30m) or a date (2026-01-31)") from None


def compute(store: Any, runs: list[dict] | None = None, **filters: Any) -> dict[str, Any]:
    """The run metrics of the store's runs matching ``filters`` (``since``, ``model``,
    ``case``, ``kind``, ``eval_id``, ``q``): aggregate queries over the metrics each
    run's row keeps (store/facts.py), whatever the store's size. Given ``runs``
    (rows), the metrics of those runs, from their events; a damaged run is left out
    and named."""
    from ..store.opening import DamagedRun

    if runs is None:
        names = {"case": "case_id"}
        out = store.run_metrics(**{names.get(k, k): v for k, v in filters.items()})
        out.setdefault("damaged", [])
        return out
    facts, damaged = [], []
    for r in runs:
        if r["status"] in ("running", "error"):
            continue
        try:
            facts.append(run_facts(r, store.events(r["run_id"])))
        except DamagedRun:              # one damaged run is left out and counted; the others are measured
            damaged.append(r["run_id"])
    out = summarize(facts, errors=sum(1 for r in runs if r["status"] == "error"),
                    running=sum(1 for r in runs if r["status"] == "running"))
    out["damaged"] = damaged
    return out


def summarize(facts: list[dict[str, Any]], *, errors: int = 0, running: int = 0) -> dict[str, Any]:
    n = len(facts)

    def rate(key: str) -> float | None:
        return round(sum(1 for f in facts if f[key]) / n, 4) if n else None

    def mean(key: str, digits: int = 4) -> float | None:
        return round(sum(f[key] for f in facts) / n, digits) if n else None

    judged = sum(1 for f in facts if f["status"] not in NO_OUTCOME)
    return {
        "completion_rate": round(sum(1 for f in facts if f["status"] in COMPLETION_STATUSES) / judged, 4)
        if judged else None,
        "steps_mean": mean("steps"),
        "steps_p95": p95([f["steps"] for f in facts]),
        "loop_trigger_rate": rate("loop"),
        "invented_completion_rate": rate("invented"),
        "hitl_rate": rate("hitl"),
        "cost_mean": mean("cost", 6),
        "tokens_mean": mean("tokens", 1),
        "runs": n,
        "errors": errors,
        "running": running,
        "statuses": dict(sorted(_count(f["status"] for f in facts).items())),
    }


def _count(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out
