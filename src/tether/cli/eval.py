"""``tether eval``: run a suite against models and report per failure mode."""

from __future__ import annotations

import asyncio
import fnmatch
import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from ..errors import ToolResultsUnseen, UsageError
from ..evals import EvalConfig, load_suite, run_suite
from ..evals.results import Results
from ..evals.runner import new_eval_id, open_store, resolve_agent
from ..guards.stacks import guard_stack
from ..report import (
    render_attributions,
    render_cases,
    render_guard_comparison,
    render_summary,
)
from ..report.terminal import render_errors
from ._common import (
    MAX_CONCURRENCY,
    MAX_JUDGE_SAMPLES,
    MAX_RUNS,
    MAX_STEPS,
    MAX_TRIALS,
    Lang,
    console,
    err_console,
    user_errors,
)

CALIBRATION = ["policy:stubborn", "policy:quitter", "policy:steady"]

HELP = """Run an evaluation suite (the built-in [bold]c4[/] or a directory of case YAML files) against models or agents.

Without --model or --agent, runs the three offline calibration agents (policy:stubborn,
policy:quitter, policy:steady). Every trial is a run in the store (--store, default
$TETHER_STORE or .tether/tether.db) under its own run id; the evaluation gets an id
(ev-YYYYMMDD-xxxxxx) printed at the start and the end. Prints a summary per model and
dimension, a table per model with verdicts and key counts, and failure attributions.

A trial whose run ended in error (the model could not be reached, a harness error) says
nothing about the agent: it is shown as error, listed separately and left out of every
verdict and rate.

Exit codes: 0 done; 1 --fail-under not met; 2 usage error; 4 more trials errored than
--max-errors allows (default 0: any error).

Examples:

  tether eval c4

  tether eval c4 --model policy:steady --trials 5 --json results.json --fail-under 0.8

  tether eval c4 --model policy:stubborn --guards off --guards on   # what the guards change

  tether eval c4 --model policy:stubborn --sweep loop.max_identical=3,5,10   # a threshold, side by side

  tether eval c4 --model openai:gpt-4.1-mini --judge openai:gpt-4.1 --judge-samples 3

  tether eval c4 --agent my_agents.py:make_agent --json mine.json   # your own agent

  tether eval ./my-cases --model policy:steady --case 'MY-*' --store runs.db

  tether eval --resume ev-20261130-ab12cd   # finish an interrupted eval (Ctrl-C, a killed process)

  tether eval c4 --model policy:steady --trials 5 --executor ray   # trials as Ray tasks (tether\\[ray])

  tether eval c4 --model 'openai-compat:http://127.0.0.1:8080/v1#qwen' --max-connections 1 --timeout 300

  tether eval c4 --model 'openai-compat:http://127.0.0.1:8080/v1#qwen' --model-arg max_tokens=256 --model-arg temperature=0 --model-arg tool_choice=auto
"""

EXIT_ERRORS = 4


def eval_command(
    suite: Annotated[str, typer.Argument(help="built-in suite name (c4) or a directory / YAML file of cases")] = "c4",
    model: Annotated[Optional[list[str]], typer.Option("--model", "-m", help="model spec for tether's own loop, repeatable (policy:steady, openai:gpt-4.1-mini, mypkg.models:make, ...)")] = None,
    agent: Annotated[Optional[list[str]], typer.Option("--agent", "-a", help="your agent: module:factory, path/to/file.py:factory or a tether.agents entry point name, repeatable")] = None,
    trials: Annotated[int, typer.Option(min=1, max=MAX_TRIALS, help="trials per case; pass^k is reported per case")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, max=MAX_CONCURRENCY, help="trials running at once")] = 8,
    store: Annotated[Optional[Path], typer.Option(help="the run store (default $TETHER_STORE or .tether/tether.db)")] = None,
    out: Annotated[Optional[Path], typer.Option(help="also export every run here as <run_id>.jsonl (a copy; score and diff read the store)")] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="write the versioned results document here")] = None,
    fail_under: Annotated[Optional[float], typer.Option(min=0.0, max=1.0, help="exit 1 when any model's automatic pass rate (cases whose automatic criteria all pass / cases with automatic criteria) is below this")] = None,
    max_errors: Annotated[int, typer.Option(min=0, max=MAX_RUNS, help="trials allowed to end in error (unreachable model, harness error) before the exit code is 4")] = 0,
    case: Annotated[Optional[list[str]], typer.Option("--case", "-c", help="only cases whose id matches this glob, repeatable")] = None,
    max_steps: Annotated[Optional[int], typer.Option(min=1, max=MAX_STEPS, help="override every case's step cap")] = None,
    simulator: Annotated[str, typer.Option(help="the simulated user for cases with a persona: scripted, or a model spec for an LLM user")] = "scripted",
    judge: Annotated[Optional[str], typer.Option(help="model spec of the LLM judge for rubric criteria (without one they stay unjudged)")] = None,
    judge_samples: Annotated[int, typer.Option(min=1, max=MAX_JUDGE_SAMPLES, help="ask the judge this many times per criterion and report agreement")] = 1,
    guards: Annotated[Optional[list[str]], typer.Option("--guards", "-g", help="guard stack: off, on (the reference stack), or a comma list such as loop,budget; repeat to compare stacks side by side")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="summary only, no per-case tables")] = False,
    sweep: Annotated[Optional[str], typer.Option("--sweep", help="run once per value of one guard setting, side by side: loop.max_identical=3,5,10 (on the --guards stack, default on)")] = None,
    lang: Annotated[Lang, typer.Option("--lang", help="the language of the failure attribution's labels and tether's own wording in it (a case's fix suggestion stays in the case's language)")] = Lang.en,
    otel: Annotated[bool, typer.Option("--otel", help="export every trial live as OpenTelemetry GenAI spans over OTLP/HTTP (or TETHER_OTEL=1; needs tether[otel])")] = False,
    executor: Annotated[str, typer.Option(help="where trials run: local (this process) or ray (Ray tasks; pip install 'tether\\[ray]')")] = "local",
    ray_address: Annotated[Optional[str], typer.Option(help="with --executor ray: the cluster to join (default: start a local Ray instance)")] = None,
    resume: Annotated[Optional[str], typer.Option(help="continue this interrupted eval (its suite, models, guards, trials and options come from the store); finished trials are kept", metavar="EVAL_ID")] = None,
    max_connections: Annotated[Optional[int], typer.Option(min=1, help="requests in flight at once per provider model (default 16; 1 for a server on this machine)")] = None,
    timeout: Annotated[Optional[float], typer.Option(min=0.1, help="seconds one provider request may take on the wire (default 60; waiting for a connection slot not counted)")] = None,
    model_arg: Annotated[Optional[list[str]], typer.Option("--model-arg", help="a request parameter for provider models, key=value, repeatable: max_tokens=256, temperature=0, tool_choice=auto (a JSON value is taken as JSON); recorded on every request event")] = None,
) -> None:
    models = model or ([] if agent else CALIBRATION)
    agents = agent or []
    case_ids: list[str] | None = None
    with user_errors():
        from ..report.otel import enable_live
        enable_live(otel)              # --otel / TETHER_OTEL=1: spans exported live, flushed at exit
        db, store_label = open_store(store)
        if resume:
            from ..evals.resume import stored_eval

            stored = stored_eval(db, resume)
            opts = {**_options_of(stored), "executor": executor, "ray_address": ray_address}
            suite, models, agents = opts["suite"], opts["models"], opts["agents"]
            trials, guards, sweep = opts["trials"], opts["guards"], opts["sweep"]
            max_steps, simulator, case_ids = opts["max_steps"], opts["simulator"], opts["cases"]
            judge, judge_samples = opts.get("judge"), opts.get("judge_samples") or 1
            max_connections, timeout = opts.get("max_connections"), opts.get("timeout")
            model_arg = [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in (opts.get("model_args") or {}).items()]
            concurrency = opts.get("concurrency") or concurrency
        cases = load_suite(suite)
        if case_ids is not None:
            cases = [c for c in cases if c.id in set(case_ids)]
        elif case:
            cases = [c for c in cases if any(fnmatch.fnmatch(c.id, pat) for pat in case)]
            if not cases:
                err_console.print(f"no case matches {case}")
                raise typer.Exit(2)
        from ..models import resolve_model
        from ..models.registry import parse_model_args, with_limits
        model_args = parse_model_args(model_arg)
        limits = {k: v for k, v in (("max_connections", max_connections), ("timeout", timeout),
                                    ("args", model_args or None)) if v is not None}
        for m in models:
            with_limits(resolve_model(m), **limits)   # fail fast on an unknown spec or a limit it cannot take
        for a in agents:
            resolve_agent(a)
        eval_id = resume or new_eval_id()
        stacks = {spec: guard_stack(spec) for spec in (guards or ["off"])}
        if sweep:
            from ..evals.sweep import parse_sweep, sweep_stacks
            stacks = sweep_stacks(*parse_sweep(sweep), base=guards[0] if guards else "on")
        options = {"suite": suite, "models": models, "agents": agents, "trials": trials, "guards": guards,
                   "sweep": sweep, "max_steps": max_steps, "simulator": simulator, "cases": [c.id for c in cases],
                   "judge": judge, "judge_samples": judge_samples, "max_connections": max_connections,
                   "timeout": timeout, "concurrency": concurrency, "model_args": model_args}
        config = EvalConfig(trials=trials, concurrency=concurrency, export_dir=out, max_steps=max_steps,
                            guard_stacks=stacks, simulator=simulator, store=db, eval_id=eval_id,
                            executor=executor, ray_address=ray_address, model_limits=limits, options=options,
                            resume=resume is not None)
        judging = None
        if judge:
            from ..evals.judge import Judge

            judging = Judge(resolve_model(judge), samples=judge_samples)
        console.print(f"eval {eval_id} · store {store_label}" + (f" · executor {executor}" if executor != "local" else ""),
                      highlight=False, soft_wrap=True)
        total = (len(models) + len(agents)) * len(cases) * trials * len(config.guard_stacks)
        if total > MAX_RUNS:
            raise UsageError(f"this evaluation would make {total:,} runs ({len(models) + len(agents)} subject(s) x "
                             f"{len(cases)} case(s) x --trials {trials} x {len(config.guard_stacks)} guard stack(s)); "
                             f"at most {MAX_RUNS:,} in one eval: fewer --trials or --case")
        suite_name = suite if suite == "c4" else Path(suite).name
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=False) as progress:
            task = progress.add_task(f"{suite_name}: {len(cases)} cases x {len(models) + len(agents)} subject(s)",
                                     total=total)

            def tick(label: str, case_id: str, trial: int, tr) -> None:
                progress.advance(task)

            def resumed(plan) -> None:
                progress.console.print(f"resuming {plan.eval_id}: {plan.describe()}", highlight=False, soft_wrap=True)
                progress.advance(task, len(plan.kept))

            config = replace(config, on_resume=resumed)
            try:
                results = asyncio.run(run_suite(cases, models, config, suite=suite_name, progress=tick,
                                                agents=agents))
            except ToolResultsUnseen as exc:
                err_console.print(f"infrastructure: {exc}. The eval stopped before any trial: nothing was "
                                  f"scored: exit {EXIT_ERRORS}", highlight=False, soft_wrap=True)
                raise typer.Exit(EXIT_ERRORS) from None
        results = results.model_copy(update={"store": store_label})
        _note_unseen_tools(db, eval_id)
        if judging is not None:
            from ..evals.rescore import rescore_results
            from ..evals.stored import StoreSource

            results = asyncio.run(rescore_results(results, cases, judging, runs=StoreSource(db)))
            db.finish_eval(eval_id, results.model_dump(mode="json"))
    render_summary(results, console)
    if not quiet:
        for run in results.runs:
            render_cases(run, console)
            render_attributions(run, console, Lang(lang).value)
    for run in results.runs:
        if run.simulator_faults:
            console.print(f"simulator faults · {run.model} · guards {run.guards}: {run.simulator_faults} trial(s), "
                          "kept out of the agent's score", style="yellow", highlight=False)
            for f in run.simulator_fault_trials:
                console.print(f"  {f.case_id} trial {f.trial}: {f.reason}", highlight=False)
    if sweep:
        from ..evals.sweep import render_sweep
        render_sweep(results, console, list(stacks), store=db)
    elif len(config.guard_stacks) > 1:
        render_guard_comparison(results, console)
    if judging is not None:
        from .score import render_judging

        render_judging(results, console, judging)
    errors = render_errors(results, console)
    if out:
        console.print(f"exported runs: {out}/", highlight=False)
    if json_path:
        results.save(json_path)
        console.print(f"results: {json_path}", highlight=False)
    console.print(f"eval {eval_id} · {sum(1 for _ in results.trials())} run(s) in {store_label}"
                  + (f" · e.g. tether runs show {next(results.trials())[2].run_id}" if results.runs else ""),
                  highlight=False, soft_wrap=True)
    if errors > max_errors:
        err_console.print(f"{errors} trial(s) ended in error (allowed: {max_errors}); their verdicts and rates are "
                          f"left out: exit {EXIT_ERRORS}", highlight=False)
        raise typer.Exit(EXIT_ERRORS)
    if fail_under is not None:
        _check_fail_under(results, fail_under)


def _note_unseen_tools(db, eval_id: str) -> None:
    """Say so when the probe found a model's prompt shows no tool list (evals/probe.py)."""
    stored = db.get_eval(eval_id) or {}
    for label, probe in ((stored.get("config") or {}).get("probes") or {}).items():
        if probe.get("tools_seen") is False:
            console.print(f"note: {label} sees tool results but not the tool list (offering a tool added "
                          f"{probe.get('tools_added_tokens')} prompt tokens): its chat template has no place for "
                          "tools, so its tool use (or the lack of it) says little about the agent; see "
                          "docs/local-model.md", style="yellow", highlight=False, soft_wrap=True)


def _options_of(stored: dict) -> dict:
    """The options an eval was started with (tether eval --resume), from its stored config."""
    config = stored.get("config") or {}
    opts = dict(config.get("options") or {})
    opts.setdefault("suite", stored.get("suite") or "c4")
    opts.setdefault("models", config.get("models", config.get("subjects", [])))
    opts.setdefault("agents", config.get("agents", []))
    opts.setdefault("trials", config.get("trials", 1))
    opts.setdefault("guards", config.get("guards"))
    opts.setdefault("sweep", None)
    opts.setdefault("max_steps", config.get("max_steps"))
    opts.setdefault("simulator", config.get("simulator", "scripted"))
    opts.setdefault("cases", config.get("cases"))
    return opts


def _check_fail_under(results: Results, threshold: float) -> None:
    failing = []
    for run in results.runs:
        scored = [c for c in run.cases if c.verdict != "error" and any(cr.kind == "auto" for t in c.trials
                                                                        for cr in t.criteria)]
        rate = sum(1 for c in scored if c.auto_verdict == "pass") / len(scored) if scored else 0.0
        if rate < threshold:
            failing.append(f"{run.model} (guards {run.guards}): automatic pass rate {rate:.0%} < {threshold:.0%}")
    if failing:
        for line in failing:
            err_console.print(f"fail-under: {line}", highlight=False)
        raise typer.Exit(1)
