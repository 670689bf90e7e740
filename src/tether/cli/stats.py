"""``tether stats``: run metrics over the runs in the store."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ._common import user_errors
from ._listing import Column, Format, FormatOpt, Listing, emit

HELP = """Run metrics over the runs in the store: completion rate, mean and P95 steps,
loop-trigger rate, invented-completion rate, human-intervention rate, mean cost.

Runs that ended `error` are counted apart and left out of every rate and mean;
docs/report.md defines each number.

Examples:

  tether stats

  tether stats --since 7d --model 'policy:*' --json

  tether stats --case 'C4-LD-*' --kind eval
"""

LABELS = {
    "completion_rate": "completion rate (completed / submitted / succeeded)",
    "steps_mean": "steps, mean",
    "steps_p95": "steps, P95 (nearest rank)",
    "loop_trigger_rate": "loop-trigger rate (a loop-guard trip)",
    "invented_completion_rate": "invented-completion rate",
    "hitl_rate": "human-intervention rate (approval asked / needs_human)",
    "cost_mean": "agent cost per run, mean",
}


def stats_command(
    since: Annotated[Optional[str], typer.Option(help="only runs created since: 7d, 12h, 30m or a date (2026-01-31)")] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="only runs of this model (glob)")] = None,
    case: Annotated[Optional[str], typer.Option("--case", "-c", help="only runs of this case (glob)")] = None,
    kind: Annotated[Optional[str], typer.Option(help="only runs of this kind: run, eval, import, ...")] = None,
    eval_id: Annotated[Optional[str], typer.Option("--eval", help="only the trials of this eval")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="the same as --format json")] = False,
    fmt: FormatOpt = None,
    store: Annotated[Optional[str], typer.Option(help="the run store: a file or a postgresql:// URL (default $TETHER_STORE or .tether/tether.db)")] = None,
) -> None:
    from ..report.metrics import KEYS, compute, parse_since
    from ..store import open_store

    from ..store.opening import NoStore, no_store_yet

    with user_errors():
        since_at = parse_since(since)
        try:
            db = open_store(store, read_only=True)
        except NoStore as exc:          # nothing recorded yet: the metrics of no runs, and nothing made
            where, m = str(exc.path), compute(None, runs=[])
            notes = [no_store_yet(where)]
        else:
            where = db.where
            m = compute(db, since=since_at, model=model, case=case, kind=kind, eval_id=eval_id)
            notes = [f"left out: {m['errors']} error run(s), {m['running']} still running"
                     + (f", {len(m['damaged'])} damaged ({', '.join(m['damaged'][:5])})" if m["damaged"] else "")]
    rows = [{"label": LABELS[key], "value": _shown(key, m[key])} for key in KEYS]
    emit(Listing("stats", [Column("label", "metric"), Column("value", right=True)], rows,
                 title=f"run metrics · {m['runs']} run(s) in {where}", notes=notes, document=m),
         Format.json if json_out else fmt)


def _shown(key: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    if key.endswith("_rate"):
        return f"{value:.1%}"
    if key == "cost_mean":
        return f"{value:.6f}"
    return f"{value:g}"
