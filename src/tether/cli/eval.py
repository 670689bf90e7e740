"""``tether eval``: run a suite against models and report per failure mode."""

from __future__ import annotations

import asyncio
import fnmatch
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..evals import EvalConfig, load_suite, run_suite
from ..guards.stacks import guard_stack
from ..evals.results import Results
from ..report import render_attributions, render_cases, render_guard_comparison, render_summary
from ._common import console, err_console, user_errors

CALIBRATION = ["policy:stubborn", "policy:quitter", "policy:steady"]

HELP = """Run an evaluation suite (the built-in [bold]c4[/] or a directory of case YAML files) against models.

Without --model, runs the three offline calibration agents (policy:stubborn, policy:quitter,
policy:steady). Prints a summary per model and dimension, a table per model with verdicts
and key counts, and failure attributions; saves every trial's trace under --out.

Examples:

  tether eval c4

  tether eval c4 --model policy:steady --trials 5 --json results.json --fail-under 0.8

  tether eval c4 --model policy:stubborn --guards off --guards on   # what the guards change

  tether eval c4 --model policy:stubborn --sweep loop.max_identical=3,5,10   # a threshold, side by side

  tether eval c4 --model openai:gpt-4.1-mini --judge openai:gpt-4.1 --judge-samples 3

  tether eval ./my-cases --model policy:steady --case 'MY-*'
"""


def eval_command(
    suite: Annotated[str, typer.Argument(help="built-in suite name (c4) or a directory / YAML file of cases")] = "c4",
    model: Annotated[Optional[list[str]], typer.Option("--model", "-m", help="model spec, repeatable (policy:steady, ...)")] = None,
    trials: Annotated[int, typer.Option(min=1, help="trials per case; pass^k is reported per case")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="trials running at once")] = 8,
    out: Annotated[Path, typer.Option(help="directory for traces (one JSONL per trial)")] = Path("tether-runs"),
    json_path: Annotated[Optional[Path], typer.Option("--json", help="write the versioned results document here")] = None,
    fail_under: Annotated[Optional[float], typer.Option(min=0.0, max=1.0, help="exit 1 when any model's automatic pass rate (cases whose automatic criteria all pass / cases with automatic criteria) is below this")] = None,
    case: Annotated[Optional[list[str]], typer.Option("--case", "-c", help="only cases whose id matches this glob, repeatable")] = None,
    max_steps: Annotated[Optional[int], typer.Option(min=1, help="override every case's step cap")] = None,
    simulator: Annotated[str, typer.Option(help="the simulated user for cases with a persona: scripted, or a model spec for an LLM user")] = "scripted",
    judge: Annotated[Optional[str], typer.Option(help="model spec of the LLM judge for rubric criteria (without one they stay unjudged)")] = None,
    judge_samples: Annotated[int, typer.Option(min=1, help="ask the judge this many times per criterion and report agreement")] = 1,
    guards: Annotated[Optional[list[str]], typer.Option("--guards", "-g", help="guard stack: off, on (the reference stack), or a comma list such as loop,budget; repeat to compare stacks side by side")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="summary only, no per-case tables")] = False,
    sweep: Annotated[Optional[str], typer.Option("--sweep", help="run once per value of one guard setting, side by side: loop.max_identical=3,5,10 (on the --guards stack, default on)")] = None,
) -> None:
    models = model or CALIBRATION
    with user_errors():
        cases = load_suite(suite)
        if case:
            cases = [c for c in cases if any(fnmatch.fnmatch(c.id, pat) for pat in case)]
            if not cases:
                err_console.print(f"no case matches {case}")
                raise typer.Exit(2)
        from ..models import resolve_model
        for m in models:
            resolve_model(m)   # fail fast on an unknown spec
        stacks = {spec: guard_stack(spec) for spec in (guards or ["off"])}
        if sweep:
            from ..evals.sweep import parse_sweep, sweep_stacks
            stacks = sweep_stacks(*parse_sweep(sweep), base=guards[0] if guards else "on")
        config = EvalConfig(trials=trials, concurrency=concurrency, out_dir=out, max_steps=max_steps,
                            guard_stacks=stacks, simulator=simulator)
        total = len(models) * len(cases) * trials * len(config.guard_stacks)
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=False) as progress:
            task = progress.add_task(f"{Path(suite).name if suite != 'c4' else 'c4'}: {len(cases)} cases x {len(models)} model(s)", total=total)

            def tick(label: str, case_id: str, trial: int, tr) -> None:
                progress.advance(task)

            results = asyncio.run(run_suite(cases, models, config, suite=suite if suite == "c4" else Path(suite).name,
                                            progress=tick))
        judging = None
        if judge:
            from ..evals.judge import Judge
            from ..evals.rescore import rescore_results

            judging = Judge(resolve_model(judge), samples=judge_samples)
            results = asyncio.run(rescore_results(results, cases, judging, out_dir=out))
    render_summary(results, console)
    if not quiet:
        for run in results.runs:
            render_cases(run, console)
            render_attributions(run, console)
    for run in results.runs:
        if run.simulator_faults:
            console.print(f"simulator faults · {run.model} · guards {run.guards}: {run.simulator_faults} trial(s), "
                          "kept out of the agent's score", style="yellow", highlight=False)
            for f in run.simulator_fault_trials:
                console.print(f"  {f.case_id} trial {f.trial}: {f.reason}", highlight=False)
    if sweep:
        from ..evals.sweep import render_sweep
        render_sweep(results, console, list(stacks))
    elif len(config.guard_stacks) > 1:
        render_guard_comparison(results, console)
    if judging is not None:
        from .score import render_judging

        render_judging(results, console, judging)
    console.print(f"traces: {out}/")
    if json_path:
        results.save(json_path)
        console.print(f"results: {json_path}")
    if fail_under is not None:
        _check_fail_under(results, fail_under)


def _check_fail_under(results: Results, threshold: float) -> None:
    failing = []
    for run in results.runs:
        scored = [c for c in run.cases if any(cr.kind == "auto" for t in c.trials for cr in t.criteria)]
        rate = sum(1 for c in scored if c.auto_verdict == "pass") / len(scored) if scored else 0.0
        if rate < threshold:
            failing.append(f"{run.model} (guards {run.guards}): automatic pass rate {rate:.0%} < {threshold:.0%}")
    if failing:
        for line in failing:
            err_console.print(f"fail-under: {line}", highlight=False)
        raise typer.Exit(1)
