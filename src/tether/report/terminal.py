"""Rich tables for eval results: a summary per model and dimension, a table
of cases with verdicts and key counts, and failure attributions."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..evals.results import DimensionMetrics, ModelRunResult, Results

VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "unclear": "yellow", "unjudged": "dim"}


def _verdict(v: str) -> Text:
    return Text(v, style=VERDICT_STYLE.get(v, ""))


def _rate(m: DimensionMetrics | None) -> Text:
    if m is None:
        return Text("-", style="dim")
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.0%}"
    good = m.auto_rate if m.auto_rate is not None else m.rate
    style = ""
    if good is not None:
        ok = good >= 0.5 if m.better == "higher" else good <= 0.5
        style = "green" if ok else "red"
    text = Text(f"{pct(m.rate)} / auto {pct(m.auto_rate)}", style=style)
    text.append(f"\n{m.passed}P {m.failed}F {m.unclear}U {m.unjudged}J", style="dim")
    return text


def render_summary(results: Results, console: Console) -> None:
    table = Table(title=f"{results.suite.upper()} summary (rate over decided cases / over automatic verdicts)",
                  show_lines=True)
    table.add_column("model")
    table.add_column("guards")
    dims = []
    for run in results.runs:
        for d in run.dimensions:
            if d not in dims:
                dims.append(d)
    for d in dims:
        m = next((r.dimensions[d] for r in results.runs if d in r.dimensions), None)
        arrow = "↓" if m and m.better == "lower" else "↑"
        table.add_column(f"{d} {arrow}\n{m.name if m else ''}", justify="center")
    table.add_column("failure modes")
    for run in results.runs:
        modes = ", ".join(f"{k} {v.count}" for k, v in run.failure_modes.items()) or "-"
        table.add_row(run.model, run.guards, *[_rate(run.dimensions.get(d)) for d in dims], modes)
    console.print(table)
    console.print("[dim]P pass · F fail · U unclear (the seed's gaps) · J unjudged (judge criteria without a judge: never counted as pass)[/dim]")


def render_cases(run: ModelRunResult, console: Console) -> None:
    table = Table(title=f"{run.model} · guards {run.guards} · {run.trials} trial(s)")
    for col, just in [("case", "left"), ("verdict", "left"), ("auto", "left"), ("status", "left"),
                      ("calls", "right"), ("ident.", "right"), ("retries", "right"), ("strat.", "right"),
                      ("asked", "right"), ("pass^k", "right"), ("why", "left")]:
        table.add_column(col, justify=just, overflow="fold")
    for case in run.cases:
        last = case.trials[-1]
        c = last.counters
        why = "; ".join(f"{cr.id}: {cr.evidence}" for cr in last.criteria if cr.verdict in ("fail", "unclear"))
        statuses = sorted({t.status for t in case.trials})
        table.add_row(case.case_id, _verdict(case.verdict), _verdict(case.auto_verdict), ",".join(statuses),
                      str(c.tool_calls), str(c.max_identical), str(c.retries), str(c.strategies), str(c.questions),
                      f"{case.pass_hat_k:.0f}" if run.trials > 1 else "-", why[:160])
    console.print(table)


def render_attributions(run: ModelRunResult, console: Console) -> None:
    rows = [t.attribution for c in run.cases for t in c.trials if t.attribution]
    if not rows:
        return
    table = Table(title=f"failure attribution · {run.model} · guards {run.guards}", show_lines=False)
    for col in ("case", "trial", "type", "manifestation", "root cause", "fix"):
        table.add_column(col, overflow="fold")
    for a in rows:
        table.add_row(a.case_id, str(a.trial), a.failure_type, a.manifestation[:140], a.root_cause, a.fix_suggestion)
    console.print(table)
