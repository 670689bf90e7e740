"""``tether guard-check``: run a saved trace through a guard stack."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from ..events import Trajectory
from ..guards.offline import check_trace
from ..guards.stacks import guard_stack
from ..store.export import load_trace_or_run
from ._common import console, user_errors

HELP = """Feed a recorded run (a run id in the store, or a trace / export file) through a guard
stack and print where each guard would have tripped, with its numbers: "would my guards
have caught this?" The guards are asked by the same code as in a live run, with the
requests as recorded (messages included).

Exit code 0 when no guard would have stopped the run, 3 when one would have.

Examples:

  tether guard-check C4-LD-01-3f2a1c                   # a run in the store (tether runs list)

  tether guard-check C4-LD-01-3f2a1c --store other.db --guards loop,budget

  tether guard-check tether-runs/policy_stubborn/off/C4-LD-01/trial-0.jsonl

  tether guard-check run.jsonl --guards loop

  tether guard-check run.jsonl --json      # every trip as JSON, for other tools
"""


def guard_check_command(
    trace: Annotated[str, typer.Argument(help="a run id in the store (tether runs list), or a trace / export file "
                                              "(JSON Lines)")],
    guards: Annotated[str, typer.Option("--guards", "-g", help="guard stack: on, or a comma list such as loop,budget")] = "on",
    show_all: Annotated[bool, typer.Option("--all", help="also list every trip after the point the run would have stopped")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print every trip (call index, rule, numbers, verdict) as JSON")] = False,
    store: Annotated[Optional[Path], typer.Option(help="the run store for a run id (default $TETHER_STORE or .tether/tether.db)")] = None,
) -> None:
    with user_errors():
        t, source = load_trace_or_run(trace, store)
        stack = guard_stack(guards)()
        trips = asyncio.run(check_trace(t, stack))
    if as_json:
        _print_json(trace, guards, t, trips)
        if any(trip.verdict.action in ("stop", "escalate") for trip in trips):
            raise typer.Exit(3)
        return
    started = t.started
    calls = len(t.tool_calls(executed_only=True))
    console.print(f"{source}: {started.model if started else '?'} · case {started.case_id if started else '-'} · "
                  f"{len(t)} events, {calls} tool calls, ended {t.status}", highlight=False)
    if not trips:
        console.print(f"guards {guards}: no trip.")
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("event", "step", "guard", "rule", "verdict", "numbers / message"):
        table.add_column(col, overflow="fold", no_wrap=col in ("event", "step", "verdict"))
    first_stop = None
    hidden: list = []
    for trip in trips:
        v = trip.verdict
        if trip.after_stop and not show_all:
            hidden.append(trip)
            continue
        style = {"hint": "yellow", "block": "magenta", "stop": "bold red", "escalate": "bold red"}[v.action]
        verdict = Text(v.action + (" (after stop)" if trip.after_stop else ""), style=style)
        numbers = ", ".join(f"{k}={val}" for k, val in v.numbers.items())
        message = v.message if len(v.message) <= 140 else v.message[:137] + "..."
        table.add_row(str(trip.seq), str(trip.step), trip.guard, v.rule, verdict, f"{numbers}\n{message}")
        if first_stop is None and v.action in ("stop", "escalate"):
            first_stop = trip
    console.print(table)
    if hidden:
        rules = sorted({f"{t.guard}.{t.verdict.rule}" for t in hidden})
        console.print(f"  ... {len(hidden)} more trip(s) after that point ({', '.join(rules)}); --all lists them",
                      style="dim", highlight=False)
    if first_stop is None:
        console.print(f"guards {guards}: {len(trips)} trip(s), none would have stopped the run.")
        return
    steps = t.finished.steps if t.finished else first_stop.step
    calls_after = sum(1 for c in t.tool_calls(executed_only=True) if c.seq > first_stop.seq)
    console.print(f"guards {guards} would have stopped this run at step {first_stop.step} (event {first_stop.seq}): "
                  f"{first_stop.verdict.message}. The original run went on to step {steps}, "
                  f"making {calls_after} more tool call(s).", highlight=False, soft_wrap=True)
    raise typer.Exit(3)


def _print_json(trace: Path, guards: str, t: Trajectory, trips: list) -> None:
    """Every trip, in order, for other tools: the tool call it happened at
    (1-based count of tool calls so far; 0 before the first), rule, verdict, numbers."""
    import json

    from ..events import ToolCallEvent

    calls_at: dict[int, int] = {}
    n = 0
    for event in t:
        n += isinstance(event, ToolCallEvent)
        calls_at[event.seq] = n
    doc = {"trace": str(trace), "guards": guards, "events": len(t), "status": str(t.status) if t.status else None,
           "trips": [{"event": trip.seq, "call": calls_at.get(trip.seq, 0), "step": trip.step, "guard": trip.guard,
                      "rule": trip.verdict.rule, "verdict": trip.verdict.action, "after_stop": trip.after_stop,
                      "numbers": dict(trip.verdict.numbers), "message": trip.verdict.message} for trip in trips]}
    from .._terminal import json_text

    print(json_text(json.dumps(doc, ensure_ascii=False, indent=2)))
