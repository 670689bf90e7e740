"""Terminal rendering of diffs and the differences a change type forbids (readable at 80 columns)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .change_types import ChangeType, Violation
from .results import CaseDiff, PairedComparison, ResultsDiff, TrialDiff, VerdictChange
from .parts import MetricChange, TrajectoryDiff

MAX_STEP_LINES = 8
MAX_ARG_LINES = 10
MAX_TEXT_LINES = 4
MAX_TEXT_WIDTH = 140   # cells: two lines of the text column at 80 columns
_KIND_STYLE = {"improved": "green", "better": "green", "regressed": "bold red", "worse": "bold red",
               "changed": "yellow", "neutral": "", "same": "dim"}


def render_trajectory_diff(d: TrajectoryDiff, console: Console, *, title: str | None = None) -> None:
    console.print(Text(title or f"{d.base_run or 'base'} -> {d.new_run or 'new'}", style="bold"), highlight=False)
    _print_grid(console, _trajectory_rows(d))


def render_results_diff(d: ResultsDiff, console: Console, *, quiet: bool = False) -> None:
    console.print(Text.assemble(("base ", "bold"), d.base_label), highlight=False)
    console.print(Text.assemble(("new  ", "bold"), d.new_label), highlight=False)
    unchanged = []
    for case in d.cases:
        if not case.changed and not _missing(case):
            unchanged.append(case.case_id)
            continue
        if not quiet:
            console.print()
            _render_case(case, console)
    if unchanged and not quiet:
        console.print()
        console.print(Text.assemble(("no differences: ", "dim"), ", ".join(unchanged)), highlight=False)
    console.print()
    render_summary(d, console)


def _render_case(case: CaseDiff, console: Console) -> None:
    head = Text(case.case_id, style="bold")
    head.append("  ")
    head.append_text(_verdict(case.verdict))
    if case.auto_verdict.kind != "same" or case.verdict.kind == "same":
        head.append("  auto ", style="dim")
        head.append_text(_verdict(case.auto_verdict))
    if case.pass_at_1[0] != case.pass_at_1[1] and len(case.trials) > 1:
        head.append(f"  pass@1 {_pct(case.pass_at_1[0])} -> {_pct(case.pass_at_1[1])}", style="dim")
    if case.title:
        head.append(f"  {case.title}", style="dim")
    console.print(head, highlight=False)
    for note in case.notes:
        console.print(Text(f"  note: {note}", style="yellow"), highlight=False)
    changed = [t for t in case.trials if t.changed or t.missing]
    for n, trial in enumerate(changed):
        label = len(case.trials) > 1
        if n == 0:
            if label:
                console.print(Text(f"  trial {trial.trial}", style="bold"), highlight=False)
            _print_grid(console, _trial_rows(trial))
        else:
            parts = trial.trajectory.changed_parts if trial.trajectory else ["counters"]
            console.print(Text(f"  trial {trial.trial}: differs in {', '.join(parts) or 'criteria'}", style="dim"),
                          highlight=False)


def _trial_rows(t: TrialDiff) -> list[tuple[str, Text]]:
    rows: list[tuple[str, Text]] = []
    for m in t.missing:
        rows.append(("missing", Text(m, style="yellow")))
    if t.trajectory is not None:
        rows += _trajectory_rows(t.trajectory)
    else:
        if t.counters:
            rows.append(("counters", _metrics(t.counters)))
        if t.terminal.changed:
            rows.append(("terminal", _terminal(t.terminal.base, t.terminal.new, t.terminal.kind)))
    if t.criteria:
        body = Text()
        for i, c in enumerate(t.criteria):
            if i:
                body.append("\n")
            body.append(f"{c.id} {c.base or '(absent)'} -> {c.new or '(absent)'}")
        rows.append(("criteria", body))
    return rows


def _trajectory_rows(d: TrajectoryDiff) -> list[tuple[str, Text]]:
    rows: list[tuple[str, Text]] = []
    if d.step.changed or d.step.counts:
        body = Text(" · ".join(f"{c.tool} {c.base} -> {c.new}" for c in d.step.counts) or "same tools, new order")
        for c in d.step.changes[:MAX_STEP_LINES]:
            body.append("\n")
            body.append(c.describe(), style={"added": "green", "removed": "red", "moved": "yellow"}[c.kind])
        _more(body, len(d.step.changes) - MAX_STEP_LINES)
        rows.append(("step", body))
    if d.args.changed:
        body = Text()
        for i, c in enumerate(d.args.changes[:MAX_ARG_LINES]):
            if i:
                body.append("\n")
            body.append(f"#{c.new_pos} ", style="dim")
            body.append(c.describe())
        _more(body, len(d.args.changes) - MAX_ARG_LINES)
        rows.append(("args", body))
    if d.recovery.changed:
        rows.append(("recovery", _metrics(d.recovery.changes)))
    if d.terminal.changed:
        rows.append(("terminal", _terminal(d.terminal.base, d.terminal.new, d.terminal.kind)))
    if d.text.changed:
        body = Text(f"similarity {d.text.similarity:.2f}")
        if not d.text.base or not d.text.new:
            body.append(f" · {'base' if not d.text.base else 'new'} reply empty", style="yellow")
        for line in d.text.diff[:MAX_TEXT_LINES]:
            body.append("\n")
            short = _clip(line, MAX_TEXT_WIDTH)
            body.append(short, style="red" if line[:1] == "-" else "green")
        _more(body, len(d.text.diff) - MAX_TEXT_LINES)
        rows.append(("text", body))
    if d.cost.changed:
        rows.append(("cost", _metrics(d.cost.changes)))
    if not rows:
        rows.append(("", Text("no differences", style="dim")))
    return rows


def render_summary(d: ResultsDiff, console: Console) -> None:
    s = d.stats
    line = Text("summary ", style="bold")
    cases = f"{s.cases} case" + ("" if s.cases == 1 else "s")
    line.append(f"{cases} · {s.with_differences} with differences · {s.flipped} flipped (")
    line.append(f"{s.improved} improved", style="green" if s.improved else "")
    line.append(", ")
    line.append(f"{s.regressed} regressed", style="bold red" if s.regressed else "")
    line.append(")")
    console.print(line, highlight=False)
    if max(s.trials) > 1:
        b, n = s.pass_at_1
        console.print(f"  pass@1 (mean over cases, trials {s.trials[0]} vs {s.trials[1]}): "
                      f"{_pct(b)} -> {_pct(n)}", highlight=False)
    for dim in d.dimensions:
        text = Text(f"  {dim.dimension} {dim.name} ({dim.better} is better): "
                    f"{_rate(dim.base, dim.base_auto)} -> {_rate(dim.new, dim.new_auto)}")
        if dim.assessment != "neutral":
            text.append(f" ({dim.assessment})", style=_KIND_STYLE[dim.assessment])
        text.append(f" · auto {_pct(dim.base_auto)} -> {_pct(dim.new_auto)}", style="dim")
        console.print(text, highlight=False)
    for case in d.flipped:
        text = Text(f"  flipped {case.case_id} ")
        if case.verdict.kind != "same":
            text.append_text(_verdict(case.verdict))
        if case.auto_verdict.kind != "same":
            text.append(" · auto " if case.verdict.kind != "same" else "auto ", style="dim")
            text.append_text(_verdict(case.auto_verdict))
        console.print(text, highlight=False)
    for p in d.paired:
        render_paired(p, console)
    for label, ids in (("only in base", d.only_in_base), ("only in new", d.only_in_new)):
        if ids:
            console.print(f"  {label}: {', '.join(ids)}", highlight=False)
    for note in d.notes:
        console.print(Text(f"  note: {note}", style="yellow"), highlight=False)


def render_paired(p: PairedComparison, console: Console) -> None:
    """The paired test in plain words: verdict, the numbers behind it, the flipped
    cases both ways, what was left out, and what n a difference would need."""
    head = Text(f"  paired test ({p.basis}s, {p.cases} case{'s' if p.cases != 1 else ''}): ")
    style = {"better": "bold green", "worse": "bold red"}.get(p.verdict, "yellow")
    head.append(p.verdict, style=style)
    if p.cases:
        head.append(f" · pass rate {_pct(p.base_rate)} -> {_pct(p.new_rate)}")
        if p.p_value is not None:
            test = "exact McNemar" if p.method == "exact McNemar" else "exact sign test over cases"
            head.append(f" · {test} p = {p.p_value:.3g}", style="dim")
        if p.interval is not None:
            head.append(f" · paired bootstrap 95% interval of the change "
                        f"[{p.interval[0] * 100:+.0f}, {p.interval[1] * 100:+.0f}] points", style="dim")
    console.print(head, highlight=False, soft_wrap=True)
    for label, ids, st in (("better", p.better, "green"), ("worse", p.worse, "red")):
        body = Text(f"    {label} in new ({len(ids)}): ")
        body.append(", ".join(ids) or "none", style=st if ids else "dim")
        console.print(body, highlight=False, soft_wrap=True)
    if p.left_out:
        console.print(Text(f"    left out, unjudged or error on a side ({len(p.left_out)}): {', '.join(p.left_out)}",
                           style="dim"), highlight=False, soft_wrap=True)
    if p.needed:
        console.print(Text(f"    a difference this size would need about {p.needed} paired cases to detect "
                           "(alpha 0.05, power 0.8)", style="dim"), highlight=False, soft_wrap=True)
    elif p.verdict not in ("better", "worse") and p.cases and not p.better and not p.worse:
        console.print(Text("    no case changed", style="dim"), highlight=False)


def render_violations(change_type: ChangeType, violations: list[Violation], console: Console) -> None:
    head = Text(f"change type {change_type.name} ({change_type.label}): ", style="bold")
    if not violations:
        head.append("no forbidden differences", style="green")
        console.print(head, highlight=False)
        return
    head.append(f"{len(violations)} forbidden difference(s)", style="bold red")
    head.append(f" · forbids {', '.join(change_type.forbids)}", style="dim")
    console.print(head, highlight=False)
    for v in violations:
        console.print(Text(f"  {v.describe()}"), highlight=False)


# -- helpers ------------------------------------------------------------------
def _missing(case: CaseDiff) -> bool:
    return any(t.missing for t in case.trials)


def _print_grid(console: Console, rows: list[tuple[str, Text]]) -> None:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan", no_wrap=True, min_width=8)
    grid.add_column(overflow="fold")
    for label, body in rows:
        grid.add_row(label, body)
    console.print(Padding(grid, (0, 0, 0, 2)))


def _verdict(v: VerdictChange) -> Text:
    text = Text(v.describe(), style=_KIND_STYLE.get(v.kind, ""))
    if v.kind not in ("same", "changed"):
        text.append(f" ({v.kind})")
    return text


def _terminal(base: str | None, new: str | None, kind: str) -> Text:
    return Text.assemble(f"{base} -> {new} ", (f"({kind})", _KIND_STYLE.get(kind, "")))


def _metrics(changes: list[MetricChange]) -> Text:
    body = Text()
    for i, c in enumerate(changes):
        if i:
            body.append(" · ")
        body.append(c.describe(), style=_KIND_STYLE.get(c.assessment, ""))
    return body


def _more(body: Text, extra: int) -> None:
    if extra > 0:
        body.append(f"\n... {extra} more", style="dim")


def _clip(line: str, width: int) -> str:
    """At most ``width`` terminal cells (CJK characters take two)."""
    if cell_len(line) <= width:
        return line
    out, used = [], 0
    for ch in line:
        used += cell_len(ch)
        if used > width - 3:
            break
        out.append(ch)
    return "".join(out) + "..."


def _rate(rate: float | None, auto: float | None) -> str:
    """A dimension rate; "unjudged" when no case is decided but automatic verdicts exist."""
    return "unjudged" if rate is None and auto is not None else _pct(rate)


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.0%}"
