"""``tether eval``: run a suite against models and report per failure mode."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from .._terminal import plural
from ._common import (
    SystemPromptMode,
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

EXIT_ERRORS = 4      # trials in error, or an eval stopped before any trial (docs/limits.md)

CALIBRATION = ["policy:stubborn", "policy:quitter", "policy:steady"]

HELP = """Run an evaluation suite (the built-in [bold]c4[/] or a directory of case YAML files) against models or agents.

Without --model or --agent, runs the three offline calibration agents (policy:stubborn,
policy:quitter, policy:steady). Every trial is a run in the store (--store, default
$TETHER_STORE or .tether/tether.db) under its own run id; the evaluation gets an id
(ev-YYYYMMDD-xxxxxx) printed at the start and the end. Prints a summary per model and
dimension, then every case's verdict per subject (--verbose adds the counts, the failing
criteria with their evidence and the failure attribution; tether report draws it all).

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

def eval_command(
    suite: Annotated[str, typer.Argument(help="built-in suite name (c4) or a directory / YAML file of cases")] = "c4",
    model: Annotated[Optional[list[str]], typer.Option("--model", "-m", help="model spec for tether's own loop, repeatable (policy:steady, openai:gpt-4.1-mini, mypkg.models:make, ...)")] = None,
    agent: Annotated[Optional[list[str]], typer.Option("--agent", "-a", help="your agent: path/to/file.py (its `agent`: a pydantic-ai, Agents SDK or LangChain agent, or a tether agent), module:attr, path/to/file.py:attr or a tether.agents entry point name, repeatable")] = None,
    system_prompt: Annotated[SystemPromptMode, typer.Option("--system-prompt", help="a framework agent's prompt: agent (its own instructions; the case's reference prompt only where it has none), case (the case's instead), both")] = SystemPromptMode.agent,
    trials: Annotated[int, typer.Option(min=1, max=MAX_TRIALS, help="trials per case; pass^k is reported per case")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, max=MAX_CONCURRENCY, help="trials running at once")] = 8,
    store: Annotated[Optional[str], typer.Option(help="the run store: a file or a postgresql:// URL (default $TETHER_STORE or .tether/tether.db)")] = None,
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
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="the summary only, no case table")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="also each subject's counts per case, every failing criterion with its evidence, and the failure attribution of every failed trial")] = False,
    sweep: Annotated[Optional[str], typer.Option("--sweep", help="run once per value of one guard setting, side by side: loop.max_identical=3,5,10 (on the --guards stack, default on)")] = None,
    lang: Annotated[Lang, typer.Option("--lang", help="the language of the failure attribution's labels and tether's own wording in it (a case's fix suggestion stays in the case's language)")] = Lang.en,
    otel: Annotated[bool, typer.Option("--otel", help="export every trial live as OpenTelemetry GenAI spans over OTLP/HTTP (or TETHER_OTEL=1; needs tether\\[otel])")] = False,
    executor: Annotated[str, typer.Option(help="where trials run: local (this process) or ray (Ray tasks; pip install 'tether\\[ray]')")] = "local",
    ray_address: Annotated[Optional[str], typer.Option(help="with --executor ray: the cluster to join (default: start a local Ray instance)")] = None,
    resume: Annotated[Optional[str], typer.Option(help="continue this interrupted eval (its suite, models, guards, trials and options come from the store); finished trials are kept", metavar="EVAL_ID")] = None,
    max_connections: Annotated[Optional[int], typer.Option(min=1, help="requests in flight at once per provider model (default 16; 1 for a server on this machine)")] = None,
    timeout: Annotated[Optional[float], typer.Option(min=0.1, help="seconds one provider request may take on the wire (default 60; waiting for a connection slot not counted)")] = None,
    model_arg: Annotated[Optional[list[str]], typer.Option("--model-arg", help="a request parameter for provider models, key=value, repeatable: max_tokens=256, temperature=0, tool_choice=auto (a JSON value is taken as JSON); recorded on every request event")] = None,
) -> None:
    # Imported here, not at the top: `tether eval --help` needs none of it.
    import asyncio
    from dataclasses import replace

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..errors import ToolResultsUnseen, UsageError
    from ..evals import EvalConfig, load_suite, run_suite
    from ..evals.runner import new_eval_id, open_store, resolve_agent
    from ..guards.stacks import guard_stack
    from ..report import render_attributions, render_cases, render_guard_comparison, render_summary
    from ..report.terminal import render_errors, render_matrix, subject_labels

    models = model or ([] if agent else CALIBRATION)
    agents = agent or []
    case_ids: list[str] | None = None
    with user_errors():
        from ..report.otel import enable_live
        enable_live(otel)              # --otel / TETHER_OTEL=1: spans exported live, flushed at exit
        if resume:
            from ..evals.resume import a_store_to_resume_in

            a_store_to_resume_in(store, resume)
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
            system_prompt = SystemPromptMode(opts.get("system_prompt") or "agent")
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
                   "timeout": timeout, "concurrency": concurrency, "system_prompt": SystemPromptMode(system_prompt).value,
                   "model_args": model_args}
        config = EvalConfig(trials=trials, concurrency=concurrency, export_dir=out, max_steps=max_steps,
                            system_prompt_mode=SystemPromptMode(system_prompt).value,
                            guard_stacks=stacks, simulator=simulator, store=db, eval_id=eval_id,
                            executor=executor, ray_address=ray_address, model_limits=limits, options=options,
                            resume=resume is not None)
        from ..evals.gates import EvalGateFailed, make_judge

        judging = make_judge(judge, judge_samples)
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
            phrase = _trials_phrase(len(cases), len(models) + len(agents), len(config.guard_stacks), trials)
            task = progress.add_task(f"{suite_name}: {phrase}", total=total)

            def tick(label: str, case_id: str, trial: int, tr) -> None:
                progress.advance(task)

            def resumed(plan) -> None:
                progress.console.print(f"resuming {plan.eval_id}: {plan.describe()}", highlight=False, soft_wrap=True)
                progress.advance(task, len(plan.kept))

            config = replace(config, on_resume=resumed)
            gate: EvalGateFailed | None = None
            try:
                results = asyncio.run(run_suite(cases, models, config, suite=suite_name, progress=tick, agents=agents,
                                                judge=judging, fail_under=fail_under, max_errors=max_errors))
            except EvalGateFailed as exc:      # reported after the results, as the exit code
                gate, results = exc, exc.results
            except ToolResultsUnseen as exc:
                err_console.print(f"infrastructure: {exc}. The eval stopped before any trial: nothing was "
                                  f"scored: exit {EXIT_ERRORS}", highlight=False, soft_wrap=True)
                raise typer.Exit(EXIT_ERRORS) from None
        results = results.model_copy(update={"store": store_label})
        _note_unseen_tools(db, eval_id)
    render_summary(results, console)
    if not quiet:
        render_matrix(results, console)
    if verbose:
        for run, label in zip(results.runs, subject_labels(results)):
            render_cases(run, console, label)
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
    render_errors(results, console)
    if out:
        console.print(f"exported runs: {out}/", highlight=False)
    if json_path:
        results.save(json_path)
        console.print(f"results: {json_path}", highlight=False)
    console.print(f"eval {eval_id} · {sum(1 for _ in results.trials())} run(s) in {store_label}"
                  + (f" · e.g. tether runs show {next(results.trials())[2].run_id}" if results.runs else ""),
                  highlight=False, soft_wrap=True)
    if gate is not None:
        for line in gate.lines:
            err_console.print(line, highlight=False)
        raise typer.Exit(gate.exit_code)


def _trials_phrase(cases: int, subjects: int, stacks: int, trials: int) -> str:
    """``32 trials: 16 cases x 1 subject x 2 guard stacks`` (factors of 1 past the subject left out)."""
    parts = [plural(cases, "case"), plural(subjects, "subject")]
    if stacks > 1:
        parts.append(plural(stacks, "guard stack"))
    if trials > 1:
        parts.append(f"{trials} trials each")
    return f"{plural(cases * subjects * stacks * trials, 'trial')}: " + " x ".join(parts)


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
