"""Rich tables for eval results, readable in an 80-column terminal: a summary
per model and dimension, a table of cases with verdicts and key counts (the
reasons listed under it), and failure attributions."""

from __future__ import annotations

import re

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..evals.results import DimensionMetrics, ModelRunResult, Results

VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "unclear": "yellow", "unjudged": "dim",
                 "error": "bold magenta"}


def _verdict(v: str) -> Text:
    return Text(v, style=VERDICT_STYLE.get(v, ""))


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _span(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"[{ci[0] * 100:.0f}–{ci[1] * 100:.0f}]"


def _rate_cell(m: DimensionMetrics | None) -> Text:
    """The rate over decided cases with its Wilson 95 % interval, then the rate over
    automatic verdicts. When no case is decided (rubrics nobody judged yet) the
    automatic rate leads and the cell says "unjudged", never n/a or 0 %."""
    if m is None:
        return Text("-", style="dim")
    shown = m.rate if m.rate is not None else m.auto_rate
    style = ""
    if shown is not None:
        ok = shown >= 0.5 if m.better == "higher" else shown <= 0.5
        style = "green" if ok else "red"
    if m.rate is not None:
        text = Text(f"{_pct(m.rate)}", style=f"bold {style}".strip())
        text.append(f"\n{_span(m.interval)}", style="dim")
        text.append(f"\nauto {_pct(m.auto_rate)}", style=style)
    elif m.auto_rate is not None:
        text = Text(f"auto {_pct(m.auto_rate)}", style=f"bold {style}".strip())
        text.append(f"\n{_span(m.auto_interval)}", style="dim")
        text.append("\nunjudged", style="dim")
    else:
        text = Text("unjudged" if m.unjudged else "n/a", style="dim")
        text.append("\n\n")
    text.append(f"\n{m.passed}P {m.failed}F {m.unclear}U {m.unjudged}J", style="dim")
    if m.errors:
        text.append(f" {m.errors}E", style="magenta")
    return text


def _label(run: ModelRunResult, results: Results) -> str:
    several_stacks = len({r.guards for r in results.runs}) > 1 or any(r.guards != "off" for r in results.runs)
    return f"{run.model}\nguards {run.guards}" if several_stacks else run.model


def render_summary(results: Results, console: Console) -> None:
    dims: list[str] = []
    names: dict[str, DimensionMetrics] = {}
    for run in results.runs:
        for d, m in run.dimensions.items():
            if d not in dims:
                dims.append(d)
                names[d] = m
    table = Table(title=f"{results.suite.upper()} · rate over decided cases, and over automatic verdicts",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("model", no_wrap=True)
    for d in dims:
        arrow = "↓" if names[d].better == "lower" else "↑"
        table.add_column(f"{d} {arrow}", no_wrap=True)
    for run in results.runs:
        table.add_row(_label(run, results), *[_rate_cell(run.dimensions.get(d)) for d in dims])
    console.print(table)
    console.print("  " + " · ".join(f"{d} {names[d].name}" for d in dims), style="dim")
    console.print("  P pass · F fail · U unclear (between a case's pass and fail ranges) · "
                  "J unjudged (needs the judge; never counted as a pass or a fail) · [95% Wilson interval]"
                  + (" · E trials in error (left out)" if any(r.errors for r in results.runs) else ""), style="dim")
    for run in results.runs:
        modes = ", ".join(f"{k} {v.count} ({v.rate:.0%} of trials)" for k, v in run.failure_modes.items())
        console.print(f"  failure modes · {run.model} · guards {run.guards}: {modes or 'none'}", highlight=False)


def render_cases(run: ModelRunResult, console: Console) -> None:
    multi = run.trials > 1
    table = Table(title=f"{run.model} · guards {run.guards} · {run.trials} trial(s)", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    table.add_column("case", no_wrap=True, min_width=8)
    table.add_column("verdict", no_wrap=True, min_width=8)
    table.add_column("auto", no_wrap=True, min_width=8)
    table.add_column("status", no_wrap=True, min_width=9)
    for col in ("call", "same", "rtry", "strt", "ask"):
        table.add_column(col, justify="right", no_wrap=True)
    if multi:
        table.add_column("pass^k", justify="right", no_wrap=True)
    reasons: list[tuple[str, str, str]] = []
    for case in run.cases:
        last = case.trials[-1]
        c = last.counters
        statuses = ",".join(sorted({t.status for t in case.trials}))
        cut = sum(t.counters.truncated for t in case.trials)
        if cut:
            statuses += f" truncated×{cut}"
        row = [case.case_id, _verdict(case.verdict), _verdict(case.auto_verdict), statuses,
               str(c.tool_calls), str(c.max_identical), str(c.retries), str(c.strategies), str(c.questions)]
        if multi:
            row.append(_pass_k(case))
        table.add_row(*row)
        for cr in last.criteria:
            if cr.verdict in ("fail", "unclear"):
                reasons.append((case.case_id, cr.verdict, f"{cr.id}: {cr.evidence}"))
        if cut:
            reasons.append((case.case_id, "truncated", f"{cut} reply(ies) cut by the output token limit "
                                                       "(finish_reason length): not complete answers"))
    console.print(table)
    console.print("  call = tool calls · same = most repeats of one exact call · rtry = calls repeating an "
                  "unsuccessful call · strt = distinct recovery strategies · ask = questions to the user", style="dim")
    for case_id, verdict, why in reasons:
        line = Text(f"  {case_id} ")
        line.append(verdict, style=VERDICT_STYLE.get(verdict, "bold red"))
        line.append(f" {why}")
        console.print(line, highlight=False)


def _pass_k(case) -> Text:
    """pass^k at k = the decided trials (0 or 1) and pass@1; a case nobody judged yet is
    "unjudged" (its automatic verdict is in the auto column), never 0 %."""
    if case.pass_at_1 is None:
        return Text("-" if case.verdict == "error" else "unjudged", style="dim")
    return Text(f"{case.pass_hat_k:.0f} ({case.pass_at_1:.0%})")


def _error_text(kind: str | None, error: str | None) -> str:
    """An error message as people read it: the model and what went wrong, once
    per distinct cause (the step, attempt counts and exception class dropped)."""
    text = re.sub(r"^[A-Za-z_]\w*: ", "", (error or "(no message)").strip())
    text = re.sub(r"\s*\[[^\]]*attempt[^\]]*\]", "", text)
    m = re.match(r"model '(.*?)' failed at step \d+: (?:gave up: )?(.*)", text, re.S)
    if m:
        unreachable = kind == "infrastructure" and re.search(r"connection|timed out|timeout", m.group(2), re.I)
        text = f"model '{m.group(1)}' {'unreachable' if unreachable else 'failed'}: {m.group(2)}"
    return f"{kind or 'error'}: {text}"


def render_errors(results: Results, console: Console) -> int:
    """Trials that ended in error, apart from the verdicts; returns how many."""
    total = 0
    for run in results.runs:
        if not run.errors:
            continue
        total += run.errors
        console.print(Text.assemble(("errors", "bold magenta"), f" · {run.model} · guards {run.guards}: ",
                                    f"{run.errors} trial(s), left out of every verdict, rate and attribution"),
                      highlight=False, soft_wrap=True)
        groups: dict[str, list[str]] = {}
        for e in run.error_trials:
            groups.setdefault(_error_text(e.error_kind, e.error), []).append(f"{e.case_id} t{e.trial}")
        for text, where in groups.items():
            shown = ", ".join(where[:6]) + (f", … (+{len(where) - 6})" if len(where) > 6 else "")
            console.print(f"  {text}", highlight=False, soft_wrap=True)
            console.print(f"    {len(where)} trial(s): {shown}", style="dim", highlight=False, soft_wrap=True)
    return total


ATTRIBUTION_LABELS = {
    "en": ("failure type", "manifestation", "root cause", "fix suggestion"),
    "zh": ("失败类型", "具体表现", "根本原因", "修复建议"),
}


def render_attributions(run: ModelRunResult, console: Console, lang: str = "en") -> None:
    """Failure attributions, labelled (and, where tether wrote them, worded) in ``lang``: en or zh."""
    rows = [t.attribution for c in run.cases for t in c.trials if t.attribution]
    if not rows:
        return
    kind, shows, cause, fix = ATTRIBUTION_LABELS.get(lang, ATTRIBUTION_LABELS["en"])
    console.print(Text(f"failure attribution · {run.model} · guards {run.guards}", style="bold"))
    for a in rows:
        console.print(
            Text.assemble(
                (f"  {a.case_id}", "bold"), f" trial {a.trial} · {kind} ", (a.failure_type, "red"), "\n",
                f"    {shows}: {a.manifestation}\n",
                f"    {cause}: {a.text('root_cause', lang)}\n",
                f"    {fix}: {a.text('fix_suggestion', lang)}",
            ),
            highlight=False, soft_wrap=True,
        )
