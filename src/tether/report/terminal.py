"""Rich tables for eval results, readable in an 80-column terminal: a summary
per model and dimension, a table of cases with verdicts and key counts (the
reasons listed under it), and failure attributions."""

from __future__ import annotations

import re
from typing import Any

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
    """Two lines: the rate over decided cases (or, when no case is decided, the rate
    over automatic criteria, marked ``auto``), then the case counts. A rate from
    automatic criteria alone always says so; nobody's judge-only case reads 100 %."""
    if m is None:
        return Text("-", style="dim")
    shown = m.rate if m.rate is not None else m.auto_rate
    style = ""
    if shown is not None:
        ok = shown >= 0.5 if m.better == "higher" else shown <= 0.5
        style = "green" if ok else "red"
    if m.rate is not None:
        text = Text(_pct(m.rate), style=f"bold {style}".strip())
        if m.unjudged:
            text.append(f"\nauto {_pct(m.auto_rate)}", style=style)
    elif m.auto_rate is not None:
        text = Text(f"auto {_pct(m.auto_rate)}", style=style)
    else:
        text = Text("unjudged" if m.unjudged else "unclear" if m.unclear else "-", style="dim")
    counts = f"{m.passed}P {m.failed}F {m.unclear}U {m.unjudged}J" + (f" {m.errors}E" if m.errors else "")
    text.append(f"\n{counts}", style="dim")
    return text


def subject_labels(results: Results) -> list[str]:
    """One label per subject (model or agent, with its guard stack when stacks differ)."""
    several_stacks = len({r.guards for r in results.runs}) > 1 or any(r.guards != "off" for r in results.runs)
    return [f"{run.model} · guards {run.guards}" if several_stacks else run.model for run in results.runs]


def needs_judge(results: Results) -> tuple[int, int]:
    """(cases with a criterion only the judge decides that nobody decided, cases in all)."""
    ids: set[str] = set()
    waiting: set[str] = set()
    for run in results.runs:
        for case in run.cases:
            ids.add(case.case_id)
            if any(cr.verdict == "unjudged" for t in case.trials for cr in t.criteria):
                waiting.add(case.case_id)
    return len(waiting), len(ids)


def render_summary(results: Results, console: Console) -> None:
    """The first screen: what the judge has not decided, then one row per subject and
    dimension. Subjects are numbered; the case table refers to them by number."""
    waiting, total = needs_judge(results)
    if waiting:
        console.print(Text.assemble(
            (f"{waiting} of {total} cases need the judge", "bold yellow"),
            " (add --judge MODEL): their judge criteria read unjudged and never count as a pass. "
            "Rates marked auto are over automatic criteria only."), highlight=False)
    from ..evals.metrics import in_suite_order, legend_item

    names: dict[str, DimensionMetrics] = {}
    for run in results.runs:
        for d, m in run.dimensions.items():
            names.setdefault(d, m)
    dims = in_suite_order(results.suite, names)
    console.print(Text(f"{results.suite.upper()} · rate per dimension over decided cases", style="bold"),
                  highlight=False)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    labels = subject_labels(results)
    table.add_column("subject", overflow="fold",
                     min_width=min(20, max(len(f"[{len(labels)}] {x}") for x in labels)) if labels else None)
    for d in dims:
        arrow = "↓" if names[d].better == "lower" else "↑"
        table.add_column(f"{d} {arrow}", no_wrap=True, min_width=11, max_width=14)
    for i, (run, label) in enumerate(zip(results.runs, labels), 1):
        table.add_row(f"[{i}] {label}", *[_rate_cell(run.dimensions.get(d)) for d in dims])
    console.print(table)
    console.print("  " + " · ".join(legend_item(d, names[d].name) for d in dims), style="dim", highlight=False)
    console.print("  P pass · F fail · U unclear (between the pass and fail ranges) · J unjudged (needs the judge)"
                  + (" · E trials in error (left out)" if any(r.errors for r in results.runs) else ""),
                  style="dim", highlight=False)


def _case_verdict(case) -> Text:
    """A case's verdict; a case whose judge criteria nobody decided shows its automatic
    verdict as ``auto pass`` / ``auto fail``, never a bare pass."""
    if case.verdict == "unjudged" and case.auto_verdict != "unjudged":
        text = Text("auto ", style="dim")
        text.append(case.auto_verdict, style=VERDICT_STYLE.get(case.auto_verdict, ""))
        return text
    return _verdict(case.verdict)


def _matrix_cell(case) -> Text:
    """A case's verdict for one subject, with the tool calls of its last trial."""
    text = _case_verdict(case)
    if case.verdict != "error":
        text.append(f" {case.trials[-1].counters.tool_calls}", style="dim")
    if any(t.counters.truncated for t in case.trials):
        text.append(" truncated", style="bold red")     # a reply cut by the output token limit, never hidden
    return text


MATRIX_COLUMNS = 4   # subjects per case table: 9 + 4 x 15 columns fit 80


def render_matrix(results: Results, console: Console) -> None:
    """Every case against every subject, in tables of at most MATRIX_COLUMNS subjects,
    so an 80-column pipe never cuts a case id."""
    labels = subject_labels(results)
    from ..evals.metrics import in_suite_order

    dims = in_suite_order(results.suite, (d for run in results.runs for d in run.dimensions))
    rank = {d: i for i, d in enumerate(dims)}
    cases = {c.case_id: c.dimension for run in results.runs for c in run.cases}
    order = sorted(cases, key=lambda cid: (rank.get(cases[cid], len(rank)), cid))
    width = max((len(x) for x in order), default=4)
    numbered = list(enumerate(results.runs, 1))
    for start in range(0, len(numbered), MATRIX_COLUMNS):
        chunk = numbered[start:start + MATRIX_COLUMNS]
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("case", no_wrap=True, min_width=width)
        for i, _ in chunk:
            table.add_column(f"[{i}]", no_wrap=True, min_width=12)
        by_subject = [{c.case_id: c for c in run.cases} for _, run in chunk]
        for case_id in order:
            table.add_row(case_id, *[_matrix_cell(m[case_id]) if case_id in m else Text("-", style="dim")
                                     for m in by_subject])
        console.print(table)
    multi = any(r.trials > 1 for r in results.runs)
    cut = any(t.counters.truncated for run in results.runs for c in run.cases for t in c.trials)
    console.print("  verdict of the case (auto pass / auto fail: its automatic criteria, the judge's unjudged), "
                  f"then tool calls{' of the last trial' if multi else ''}"
                  + (" · truncated: a reply was cut by the output token limit" if cut else ""),
                  style="dim", highlight=False)
    for i, (run, label) in enumerate(zip(results.runs, labels), 1):
        modes = ", ".join(f"{k} {v.count}" for k, v in run.failure_modes.items())
        console.print(f"  [{i}] {label} · failure modes: {modes or 'none'}", highlight=False, soft_wrap=True)


def render_cases(run: ModelRunResult, console: Console, label: str | None = None) -> None:
    """One subject's cases with their key counts, then every failing or unclear criterion
    with its evidence (tether eval --verbose, tether score)."""
    multi = run.trials > 1
    width = max((len(c.case_id) for c in run.cases), default=4)
    table = Table(title=f"{label or run.model} · {run.trials} trial(s) per case", box=box.SIMPLE_HEAD,
                  pad_edge=False, title_justify="left")
    table.add_column("case", no_wrap=True, min_width=width)
    table.add_column("verdict", no_wrap=True, min_width=9)
    table.add_column("status", overflow="fold")
    for col in ("call", "same", "rtry", "strt", "ask"):
        table.add_column(col, justify="right", no_wrap=True, min_width=4)
    if multi:
        table.add_column("pass^k", justify="right", no_wrap=True, min_width=8)
    reasons: list[tuple[str, str, str]] = []
    for case in run.cases:
        last = case.trials[-1]
        c = last.counters
        statuses = ", ".join(sorted({t.status for t in case.trials}))
        cut = sum(t.counters.truncated for t in case.trials)
        if cut:
            statuses += f" truncated×{cut}"
        row = [case.case_id, _case_verdict(case), statuses,
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
    console.print("  call tool calls executed · same most repeats of one exact call · rtry calls repeating an unsuccessful "
                  "call · strt distinct recovery strategies · ask questions to the user", style="dim",
                  highlight=False)
    console.print("  tool calls by outcome (last trials): " + outcome_summary(c for case in run.cases
                                                                              for c in [case.trials[-1].counters]),
                  style="dim", highlight=False)
    spans = " · ".join(f"{d} {_span(m.interval if m.rate is not None else m.auto_interval)}"
                       for d, m in run.dimensions.items() if (m.interval or m.auto_interval))
    if spans:
        console.print(f"  95% Wilson intervals: {spans}", style="dim", highlight=False)
    for case_id, verdict, why in reasons:
        line = Text(f"  {case_id} ")
        line.append(verdict, style=VERDICT_STYLE.get(verdict, "bold red"))
        line.append(f" {why}")
        console.print(line, highlight=False, soft_wrap=False)


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
ATTRIBUTION_TITLE = {"en": "failure attribution · {model} · guards {guards}", "zh": "失败归因 · {model} · 守卫 {guards}"}
ATTRIBUTION_TRIAL = {"en": "trial {trial}", "zh": "第 {trial} 次试验"}


def render_attributions(run: ModelRunResult, console: Console, lang: str = "en") -> None:
    """Failure attributions, labelled and worded in ``lang`` (en or zh), one language per
    sentence: with zh, the evidence is re-worded in Chinese (a case's own fix suggestion
    and a judge's reason stay in the language they were written in)."""
    rows = [t.attribution for c in run.cases for t in c.trials if t.attribution]
    if not rows:
        return
    lang = lang if lang in ATTRIBUTION_LABELS else "en"
    kind, shows, cause, fix = ATTRIBUTION_LABELS[lang]
    console.print(Text(ATTRIBUTION_TITLE[lang].format(model=run.model, guards=run.guards), style="bold"))
    for a in rows:
        console.print(
            Text.assemble(
                (f"  {a.case_id}", "bold"), f" {ATTRIBUTION_TRIAL[lang].format(trial=a.trial)} · {kind} ",
                (a.failure_type, "red"), "\n",
                f"    {shows}: {a.text('manifestation', lang)}\n",
                f"    {cause}: {a.text('root_cause', lang)}\n",
                f"    {fix}: {a.text('fix_suggestion', lang)}",
            ),
            highlight=False, soft_wrap=True,
        )


def outcome_summary(counters: Any) -> str:
    """Tool calls by outcome summed over ``counters`` (tether.events.Outcome's labels)."""
    from ..events import Outcome

    labels = {o.value: o.label for o in Outcome}
    total: dict[str, int] = {}
    for c in counters:
        for k, n in c.outcomes.items():
            total[k] = total.get(k, 0) + n
    return " · ".join(f"{labels.get(k, k)} {n}" for k, n in total.items()) or "none recorded"
