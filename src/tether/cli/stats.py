"""``tether stats``: run metrics over the runs in the store."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer
from rich import box
from rich.table import Table

from ._common import console, user_errors

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
    json_out: Annotated[bool, typer.Option("--json", help="print the metrics as JSON")] = False,
    store: Annotated[Optional[str], typer.Option(help="the run store: a file or a postgresql:// URL (default $TETHER_STORE or .tether/tether.db)")] = None,
) -> None:
    from ..report.metrics import KEYS, compute, parse_since
    from ..store import open_store

    with user_errors():
        db = open_store(store, read_only=True)
        m = compute(db, since=parse_since(since), model=model, case=case, kind=kind, eval_id=eval_id)
    if json_out:
        from .._terminal import json_text

        typer.echo(json_text(json.dumps(m, ensure_ascii=False, indent=2)))
        return
    table = Table(title=f"run metrics · {m['runs']} run(s) in {db.where}", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in KEYS:
        value = m[key]
        if value is None:
            shown = "n/a"
        elif key.endswith("_rate"):
            shown = f"{value:.1%}"
        elif key == "cost_mean":
            shown = f"{value:.6f}"
        else:
            shown = f"{value:g}"
        table.add_row(LABELS[key], shown)
    console.print(table)
    console.print(f"  left out: {m['errors']} error run(s), {m['running']} still running"
                  + (f", {len(m['damaged'])} damaged ({', '.join(m['damaged'][:5])})" if m["damaged"] else ""),
                  style="dim", highlight=False)
