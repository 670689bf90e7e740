"""``tether run``: one case against one model, with guards; the exit code says how it ended."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from ..errors import UsageError
from ..evals import EvalConfig, load_suite
from ..evals.loader import load_case
from ..evals.runner import run_trial
from ..events import (
    AgentMessage,
    GuardTripped,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
    UserMessage,
)
from ..guards.budget import Budget, BudgetGuard
from ..guards.stacks import guard_stack
from ..models import resolve_model
from ..status import TerminalStatus
from ._common import console, user_errors

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
"""

CLEAN = {TerminalStatus.COMPLETED, TerminalStatus.AWAITING_USER, TerminalStatus.SUBMITTED, TerminalStatus.SUCCEEDED}
GUARDED = {TerminalStatus.LOOP_ABORTED, TerminalStatus.BUDGET_EXCEEDED, TerminalStatus.NEEDS_HUMAN,
           TerminalStatus.PARTIAL, TerminalStatus.INVENTED_COMPLETION}

_BUDGET_KEYS = {"tool_calls": "max_tool_calls", "model_calls": "max_model_calls", "seconds": "max_seconds",
                "tokens": "max_total_tokens", "input_tokens": "max_input_tokens", "output_tokens": "max_output_tokens",
                "cost": "max_cost"}


def parse_budget(text: str) -> Budget:
    values: dict[str, float | int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, raw = part.partition("=")
        if not sep or key.strip() not in _BUDGET_KEYS:
            raise UsageError(f"--budget {text!r}: expected key=value pairs with keys {', '.join(_BUDGET_KEYS)}")
        try:
            number = float(raw)
        except ValueError:
            raise UsageError(f"--budget {text!r}: {key}={raw!r} is not a number") from None
        field = _BUDGET_KEYS[key.strip()]
        values[field] = number if field in ("max_seconds", "max_cost") else int(number)
    return Budget(**values)


def run_command(
    case: Annotated[str, typer.Argument(help="a case id of the built-in suite (C4-LD-01) or a case YAML file")],
    model: Annotated[str, typer.Option("--model", "-m", help="model spec")] = "policy:steady",
    guards: Annotated[str, typer.Option("--guards", "-g", help="off, on, or a comma list such as loop,budget")] = "on",
    budget: Annotated[Optional[str], typer.Option(help="budget limits, e.g. tool_calls=5,seconds=60,tokens=20000,cost=0.05 (replaces the stack's budget guard)")] = None,
    trace: Annotated[Optional[Path], typer.Option(help="save the trace (JSON Lines) here")] = None,
    max_steps: Annotated[Optional[int], typer.Option(min=1, help="override the case's step cap")] = None,
) -> None:
    with user_errors():
        path = Path(case)
        if path.suffix in (".yaml", ".yml") or path.exists():
            the_case = load_case(path)
        else:
            found = [c for c in load_suite("c4") if c.id == case]
            if not found:
                raise UsageError(f"no case {case!r} in the built-in suite; give a case id (tether case list) or a file")
            the_case = found[0]
        stack = list(guard_stack(guards)())
        label = guards
        if budget:
            stack = [g for g in stack if not isinstance(g, BudgetGuard)]
            stack.insert(0, BudgetGuard(parse_budget(budget)))
            label = f"{guards}+budget"
        m = resolve_model(model)
        config = replace(EvalConfig(), max_steps=max_steps)
        tr, result = asyncio.run(run_trial(the_case, m, config=config, guards=stack, guards_label=label,
                                           model_label=model))
    render_trajectory(result.trajectory)
    if trace:
        result.trajectory.save(trace)
        console.print(f"trace: {trace}")
    console.print(Text.assemble(("status ", "bold"), (str(result.status), _status_style(result.status)),
                                f" · verdict {tr.verdict} (auto {tr.auto_verdict})"), highlight=False)
    if result.status in CLEAN:
        return
    raise typer.Exit(3 if result.status in GUARDED else 1)


def _status_style(status: TerminalStatus) -> str:
    return "green" if status in CLEAN else ("yellow" if status in GUARDED else "red")


def render_trajectory(t: Trajectory) -> None:
    for e in t:
        if isinstance(e, UserMessage):
            console.print(Text.assemble(("user", "bold cyan"), f" ({e.source}): {e.content}"), highlight=False)
        elif isinstance(e, AgentMessage):
            console.print(Text.assemble(("agent", "bold"), f" ({e.kind}): {e.content}"), highlight=False)
        elif isinstance(e, ToolCallEvent):
            args = ", ".join(f"{k}={v!r}" for k, v in e.arguments.items())
            console.print(Text.assemble((f"  [{e.step}] ", "dim"), (e.tool, "bold"), f"({args})"), highlight=False)
        elif isinstance(e, ToolResultEvent):
            body = e.error if not e.ok else str(e.data)
            body = body if len(body) <= 160 else body[:157] + "..."
            console.print(Text.assemble("      -> ", ("ok " if e.ok else "error ", "green" if e.ok else "red"),
                                        (f"[{e.source}] ", "dim"), body), highlight=False)
        elif isinstance(e, GuardTripped):
            console.print(Text.assemble("  ", (f"guard {e.guard}.{e.rule} {e.verdict}", "bold yellow"),
                                        f": {e.message}"), highlight=False)
    if t.finished:
        console.print(Text.assemble(("reply", "bold"), f": {t.final_reply}"), highlight=False)
