"""What the guards changed: the same suite under several guard stacks, side by side."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..evals.results import Results
from .terminal import VERDICT_STYLE, _pct


def render_guard_comparison(results: Results, console: Console) -> None:
    models = list(dict.fromkeys(r.model for r in results.runs))
    for model in models:
        runs = [r for r in results.runs if r.model == model]
        if len(runs) < 2:
            continue
        table = Table(title=f"{model} · what the guards changed", box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("case", no_wrap=True)
        for r in runs:
            table.add_column(f"guards {r.guards}", no_wrap=True)
        table.add_column("", no_wrap=True)
        base = runs[0]
        for i, case in enumerate(base.cases):
            cells = []
            verdicts = []
            for r in runs:
                c = r.cases[i]
                t = c.trials[-1]
                verdicts.append(c.auto_verdict)
                cell = Text(f"{c.verdict}", style=VERDICT_STYLE.get(c.verdict, ""))
                cell.append(f" auto {c.auto_verdict} · {t.counters.tool_calls} calls", style="dim")
                if t.counters.guard_trips:
                    cell.append(f" · {t.counters.guard_trips} trips", style="dim")
                cells.append(cell)
            changed = len(set(verdicts)) > 1
            table.add_row(case.case_id, *cells, Text("changed" if changed else "", style="bold"))
        console.print(table)
        for dim in base.dimensions:
            parts = [f"guards {r.guards}: {_pct(r.dimensions[dim].rate)} (auto {_pct(r.dimensions[dim].auto_rate)})"
                     for r in runs if dim in r.dimensions]
            console.print(f"  {dim} {base.dimensions[dim].name}: " + " · ".join(parts), highlight=False)
