"""``tether score``: re-score saved results (judge the rubric criteria) without re-running agents."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.text import Text

from ..errors import UsageError
from ..evals import Case, load_suite
from ..evals.judge import DEFAULT_CACHE_DIR, Judge
from ..evals.loader import builtin_suites
from ..evals.rescore import rescore_results
from ..evals.results import Results
from ..report import render_attributions, render_cases, render_summary
from ..report.terminal import render_errors
from ._common import MAX_CONCURRENCY, MAX_JUDGE_SAMPLES, Lang, console, user_errors

HELP = """Re-score a saved results document: judge the rubric criteria with an LLM judge, re-check the
automatic criteria, rebuild the metrics. Agents are not re-run: each trial's run is read from
the store the results name (or --store), checked against the digest the results pinned.

Each rubric criterion is judged with the run in view (tool calls and results, final reply)
and a structured verdict: pass / fail / unclear, a reason, the events relied on. With
--judge-samples N every criterion is asked N times: samples that disagree give unclear.
A judge pass that contradicts a failed automatic check is flagged as a conflict.
Judge answers are cached (--cache-dir): scoring the same runs again makes no request.
The judge's requests are recorded in the judged run (role judge, after its end), so their
cost is kept apart from the agent's. Human verdicts already in the results are kept.
Trials whose run ended in error stay errors; a judge that cannot answer makes its trial an
error too (never a verdict).

Examples:

  tether score results.json --judge openai:gpt-4.1-mini --json results.judged.json

  tether score results.json --judge openai:gpt-4.1-mini --judge-samples 3 --json results.judged.json

  tether score results.json --cases ./my-cases --store ci.db   # no judge: re-check only
"""


# -- shared by score and review -----------------------------------------------------
def load_results(path: Path) -> Results:
    return Results.load(path)


def load_cases(results: Results, sources: list[str] | None) -> list[Case]:
    if sources:
        return load_suite(*sources)
    if results.suite in builtin_suites():
        return load_suite(results.suite)
    raise UsageError(f"the results come from suite {results.suite!r}, which is not built in: "
                     "point at its cases with --cases DIR")


def render_judging(results: Results, out: Console, judge: Judge | None = None) -> None:
    """Who decided the criteria (counters, LLM, human), judge agreement, conflicts."""
    for run in results.runs:
        j = run.judged
        line = Text.assemble(("judged", "bold"), f" · {run.model} · guards {run.guards}: ",
                             f"{j.auto} auto, {j.llm} llm, ", (f"{j.human} human", "bold cyan"),
                             f", {j.unjudged} unjudged")
        if run.judge and j.llm:
            agree = "n/a" if run.judge_agreement is None else f"{run.judge_agreement:.0%}"
            line.append(f" · judge {run.judge}, {run.judge_samples or 1} sample(s), mean agreement {agree}")
        if run.conflicts:
            line.append(f" · {run.conflicts} conflict(s)", style="bold yellow")
        out.print(line, highlight=False, soft_wrap=True)
        for c in run.cases:
            for t in c.trials:
                for cf in t.conflicts:
                    out.print(Text.assemble(("  conflict ", "yellow"), f"{c.case_id} trial {t.trial}: {cf.message}"),
                              highlight=False, soft_wrap=True)
    if judge is not None:
        s = judge.stats
        cache = f"{judge.cache.path}" if judge.cache is not None else "off"
        out.print(f"judge requests: {s.requests} · cache hits: {s.cache_hits}"
                  + (f" · failed requests: {s.failures}" if s.failures else "") + f" · cache: {cache}",
                  style="dim", highlight=False, soft_wrap=True)


def render_all(results: Results, quiet: bool, lang: str = "en") -> None:
    from ..report.terminal import render_matrix, subject_labels

    render_summary(results, console)
    render_matrix(results, console)
    if not quiet:
        for run, label in zip(results.runs, subject_labels(results)):
            render_cases(run, console, label)
            render_attributions(run, console, Lang(lang).value)
    render_errors(results, console)


# -- the command ---------------------------------------------------------------------
def score_command(
    results_path: Annotated[Path, typer.Argument(metavar="RESULTS.json", help="a results document (tether eval --json)")],
    judge: Annotated[Optional[str], typer.Option("--judge", "-j", help="judge model spec for the rubric criteria; without it only the automatic criteria are re-checked")] = None,
    judge_samples: Annotated[int, typer.Option("--judge-samples", min=1, max=MAX_JUDGE_SAMPLES, help="judge each criterion N times; any disagreement gives unclear")] = 1,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="write the re-scored results document here")] = None,
    cases: Annotated[Optional[list[str]], typer.Option("--cases", help="where the cases are (default: the built-in suite the results name), repeatable")] = None,
    store: Annotated[Optional[Path], typer.Option(help="the store holding the runs (default: the one the results name)")] = None,
    cache_dir: Annotated[Path, typer.Option(help="judge answer cache (JSON Lines)")] = DEFAULT_CACHE_DIR,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="ask the judge again, do not read or write the cache")] = False,
    concurrency: Annotated[int, typer.Option(min=1, max=MAX_CONCURRENCY, help="judge requests at once")] = 4,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="summary only, no per-case tables")] = False,
    lang: Annotated[Lang, typer.Option("--lang", help="the language of the failure attribution's labels and tether's own wording in it (a case's fix suggestion stays in the case's language)")] = Lang.en,
) -> None:
    with user_errors():
        results = load_results(results_path)
        case_list = load_cases(results, cases)
        j = None
        if judge:
            from ..models import resolve_model

            j = Judge(resolve_model(judge), samples=judge_samples, cache_dir=None if no_cache else cache_dir,
                      concurrency=concurrency)
        scored = asyncio.run(rescore_results(results, case_list, j, results_path=results_path, store=store,
                                             concurrency=concurrency))
    render_all(scored, quiet, lang)
    render_judging(scored, console, j)
    if json_path:
        scored.save(json_path)
        console.print(f"results: {json_path}", highlight=False, soft_wrap=True)
    else:
        console.print("not saved: add --json OUT to write the re-scored results "
                      "(judge answers are cached, so scoring again is free)", style="dim", soft_wrap=True)
