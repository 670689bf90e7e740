"""``tether run``: one case against one model, with guards; the exit code says how it ended."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from ..errors import UsageError
from ..evals import EvalConfig
from ..evals.runner import run_trial
from ..events import (
    AgentMessage,
    GuardTripped,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
    UserMessage,
)
from ..runtime import RunConfig
from ..store import open_store
from ..store.protocol import Store
from ..status import TerminalStatus
from ._common import MAX_STEPS, console, data_json, user_errors
from ._harness import RunSpec, find_case

HELP = """Run one case against one model and print what happened, step by step.

The exit code says how the run ended: 0 a clean ending (completed, awaiting_user,
submitted, succeeded), 3 a guard ended it (loop_aborted, budget_exceeded,
needs_human, partial, invented_completion), 1 anything else (step_limit, failed,
error, ...). Unlike tools that exit 0 on a detected loop, a guard trip is never
silent. The whole history is saved with --trace.

Examples:

  tether run C4-LD-01 --model policy:stubborn --guards on

  tether run C4-PA-01 --model policy:steady --budget tool_calls=2 --trace run.jsonl

  tether run ./my-case.yaml --model policy:steady --guards loop --budget seconds=30,tokens=20000

  tether run C4-PA-01 --approve 'taobao_*'      # pauses for approval; then: tether approve RUN_ID

  tether run C4-DR-03 --agent my_agents.py:build    # your own agent (pydantic-ai, Agents SDK, LangChain, ...)

  tether run C4-LD-01 --model 'openai-compat:http://127.0.0.1:8080/v1#qwen' --model-arg temperature=0

Every run is recorded in the embedded store (.tether/tether.db): see `tether runs list`.
"""

CLEAN = {TerminalStatus.COMPLETED, TerminalStatus.AWAITING_USER, TerminalStatus.SUBMITTED, TerminalStatus.SUCCEEDED}
GUARDED = {TerminalStatus.LOOP_ABORTED, TerminalStatus.BUDGET_EXCEEDED, TerminalStatus.NEEDS_HUMAN,
           TerminalStatus.PARTIAL, TerminalStatus.INVENTED_COMPLETION}

def run_command(
    case: Annotated[str, typer.Argument(help="a case id of the built-in suite (C4-LD-01) or a case YAML file")],
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="model spec, run by tether's own loop (default policy:steady)")] = None,
    agent: Annotated[Optional[str], typer.Option("--agent", "-a", help="your agent instead of a model: path/to/file.py (its `agent`), path/to/file.py:attr, module:attr or a tether.agents entry point name; run unchanged")] = None,
    model_arg: Annotated[Optional[list[str]], typer.Option("--model-arg", help="a request parameter for a provider model, key=value, repeatable: max_tokens=256, temperature=0 (a JSON value is taken as JSON)")] = None,
    guards: Annotated[str, typer.Option("--guards", "-g", help="off, on, or a comma list such as loop,budget")] = "on",
    budget: Annotated[Optional[str], typer.Option(help="budget limits, e.g. tool_calls=5,seconds=60,tokens=20000,cost=0.05 (replaces the stack's budget guard)")] = None,
    approve: Annotated[Optional[list[str]], typer.Option("--approve", help="tools (names or globs) that need human approval, repeatable")] = None,
    approver: Annotated[str, typer.Option(help="who approves: deferred (pause; decide with `tether approve`), cli (ask here), deny, allow")] = "deferred",
    trace: Annotated[Optional[Path], typer.Option(help="save the trace (JSON Lines) here")] = None,
    max_steps: Annotated[Optional[int], typer.Option(min=1, max=MAX_STEPS, help="override the case's step cap")] = None,
    store: Annotated[Optional[str], typer.Option(help="the run store: a file or a postgresql:// URL (default $TETHER_STORE or .tether/tether.db)")] = None,
    run_id: Annotated[Optional[str], typer.Option(help="run id (default: generated)")] = None,
    otel: Annotated[bool, typer.Option("--otel", help="export the run live as OpenTelemetry GenAI spans over OTLP/HTTP (or TETHER_OTEL=1; needs tether\\[otel])")] = False,
) -> None:
    with user_errors():
        from ..report.otel import enable_live
        enable_live(otel)              # --otel / TETHER_OTEL=1: spans exported live, flushed at exit
        if agent is not None and (model is not None or model_arg):
            raise UsageError("--agent runs your agent with its own model: drop --model / --model-arg, or drop --agent")
        from ..models.registry import parse_model_args

        spec = RunSpec(case=case, model=None if agent else (model or "policy:steady"), guards=guards, budget=budget,
                       approve=tuple(approve or ()), approver=approver, max_steps=max_steps, agent=agent,
                       model_args=parse_model_args(model_arg) or None)
        spec.gate()                    # --approver checked before anything starts
        the_case = find_case(case)
        stack = spec.guards_list()
        m, the_agent = spec.subject()
        db = open_store(store)
        run_cfg = RunConfig(store=db, approvals=spec.gate(), meta=spec.meta())
        if run_id is not None:
            from ..ids import check_id

            check_id(run_id, "--run-id")
        rid = run_id or f"{the_case.id}-{uuid.uuid4().hex[:6]}"
        tr, result = asyncio.run(run_trial(the_case, m, config=replace(EvalConfig(), max_steps=max_steps), guards=stack,
                                           guards_label=spec.label(), model_label=spec.agent or spec.model,
                                           run_config=run_cfg, run_id=rid, agent=the_agent))
    finish(result, db, trace, f"verdict {tr.verdict} (auto {tr.auto_verdict})")


def finish(result, db: Store, trace: Path | None, extra: str = "") -> None:
    """Print the run and exit with the code its ending calls for."""
    render_trajectory(result.trajectory)
    if trace:
        with user_errors():
            try:
                result.trajectory.save(trace)
            except OSError as exc:
                from ..inputs import write_failed

                raise write_failed(trace, exc, "--trace") from None
        console.print(f"trace: {trace}")
    pending = db.approvals(result.run_id, "pending")
    for a in pending:
        console.print(Text.assemble(("awaiting approval ", "bold yellow"), f"{a['id']}: {a['tool']}({data_json(a['arguments'])}) — "
                                    f"{a['reason']}\n  decide with: tether approve {result.run_id}"), highlight=False,
                      soft_wrap=True)
    console.print(Text.assemble(("run ", "bold"), result.run_id, " · status ",
                                (str(result.status), _status_style(result.status)), f" · {extra}" if extra else "",
                                f" · store {db.where}"), highlight=False)
    if result.status in CLEAN:
        return
    raise typer.Exit(3 if result.status in GUARDED else 1)


def _status_style(status: TerminalStatus) -> str:
    return "green" if status in CLEAN else ("yellow" if status in GUARDED else "red")


def render_trajectory(t: Trajectory) -> None:
    for e in t:
        if isinstance(e, UserMessage):
            console.print(Text.assemble(("user", "bold cyan"), f" ({e.source}): {e.content}"), highlight=False, soft_wrap=True)
        elif isinstance(e, AgentMessage):
            console.print(Text.assemble(("agent", "bold"), f" ({e.kind}): {e.content}"), highlight=False, soft_wrap=True)
        elif isinstance(e, ToolCallEvent):
            console.print(Text.assemble((f"  [{e.step}] ", "dim"), (e.tool, "bold"), f"({data_json(e.arguments)})"),
                          highlight=False, soft_wrap=True)
        elif isinstance(e, ToolResultEvent):
            body = (e.error or "") if not e.ok else data_json(e.data)
            body = body if len(body) <= 160 else body[:157] + "..."
            console.print(Text.assemble("      -> ", ("ok " if e.ok else "error ", "green" if e.ok else "red"),
                                        (f"[{e.outcome.label}] ", "dim"), body), highlight=False, soft_wrap=True)
        elif isinstance(e, GuardTripped):
            console.print(Text.assemble("  ", (f"guard {e.name} {e.verdict}", "bold yellow"),
                                        f": {e.message}"), highlight=False, soft_wrap=True)
    if t.finished:
        console.print(Text.assemble(("reply", "bold"), f": {t.final_reply}"), highlight=False, soft_wrap=True)
