"""``tether guard-check``: run saved traces through a guard stack: one run
(where each guard would have tripped) or many (the per-rule trip table)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Optional

import typer

from .._terminal import plural
from ..errors import UsageError
from ..events import Trajectory, trip_name
from ..guards.offline import RunCheck, check_many, check_trace, rule_table
from ..guards.stacks import guard_stack
from ..store.export import load_trace_or_run
from ._common import MAX_RUNS, console, err_console, user_errors
from ._listing import Column, Format, FormatOpt, Listing, emit, resolve

HELP = """Feed recorded runs through a guard stack: "would my guards have caught this?", and
"what would this setting have done to our history?" The guards are asked by the same code
as in a live run, with the requests as recorded (messages included).

One run (a run id in the store, or a trace / export file): where each guard would have
tripped, with its numbers. Exit code 0 when no guard would have stopped the run, 3 when
one would have.

Many runs (a folder of JSON Lines traces, searched recursively, or every run of a store
when no run is named): the per-rule trip table (runs tripped, hints, blocks, stops) and
the runs that would have been stopped, so a team can check a guard setting against its
own history before turning it on. Trips after the point a run would have been stopped
are not counted. Exit code 0 (it is a report).

Examples:

  tether guard-check C4-LD-01-3f2a1c                   # a run in the store (tether runs list)

  tether guard-check C4-LD-01-3f2a1c --store other.db --guards loop,budget

  tether guard-check tether-runs/policy_stubborn/off/C4-LD-01/trial-0.jsonl

  tether guard-check run.jsonl --guards loop

  tether guard-check run.jsonl --json      # every trip as JSON, for other tools

  tether guard-check --store runs.db --guards on            # every run in the store: the trip table

  tether guard-check --store runs.db --eval ev-20261201-ab12cd --json

  tether guard-check traces/ --guards loop                  # a folder of traces
"""


def guard_check_command(
    trace: Annotated[Optional[str], typer.Argument(help="a run id in the store (tether runs list), a trace / export "
                                                        "file (JSON Lines), or a folder of traces; none: every "
                                                        "run in the store")] = None,
    guards: Annotated[str, typer.Option("--guards", "-g", help="guard stack: on, or a comma list such as loop,budget")] = "on",
    show_all: Annotated[bool, typer.Option("--all", help="also list every trip after the point the run would have stopped")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="the same as --format json: every trip (call index, rule, "
                                                        "numbers, verdict) as one JSON document")] = False,
    store: Annotated[Optional[str], typer.Option(help="the run store for a run id (default $TETHER_STORE or .tether/tether.db)")] = None,
    eval_id: Annotated[Optional[str], typer.Option("--eval", help="with a store and no run: only the runs of this evaluation")] = None,
    limit: Annotated[int, typer.Option(help="with many runs: at most this many (the newest first in a store)")] = 10_000,
    fmt: FormatOpt = None,
) -> None:
    if as_json:
        fmt = Format.json
    if trace is None or Path(trace).is_dir():
        with user_errors():
            if not 1 <= limit <= MAX_RUNS:
                raise UsageError(f"--limit must be between 1 and {MAX_RUNS:,}, not {limit}")
            make = guard_stack(guards)
            runs, where = _many(trace, store, eval_id, limit)
            checks = asyncio.run(check_many(runs, make))
        _print_many(where, guards, checks, fmt)
        return
    with user_errors():
        t, source = load_trace_or_run(trace, store)
        stack = guard_stack(guards)()
        trips = asyncio.run(check_trace(t, stack))
    stops = any(trip.verdict.action in ("stop", "escalate") for trip in trips)
    chosen = resolve(fmt)
    if chosen is Format.json:
        _print_json(trace, guards, t, trips)
        if stops:
            raise typer.Exit(3)
        return
    started = t.started
    calls = len(t.tool_calls(executed_only=True))
    head = (f"{source}: {started.model if started else '?'} · case {started.case_id if started else '-'} · "
            f"{plural(len(t), 'event')}, {plural(calls, 'tool call')} executed ({outcome_line(t)}), ended {t.status}")
    shown = [trip for trip in trips if show_all or not trip.after_stop]
    hidden = [trip for trip in trips if trip.after_stop and not show_all]
    first_stop = next((trip for trip in trips if trip.verdict.action in ("stop", "escalate")), None)
    notes = []
    if hidden:
        rules = sorted({trip_name(t.guard, t.verdict.rule) for t in hidden})
        notes.append(f"  ... {len(hidden)} more trip(s) after that point ({', '.join(rules)}); --all lists them")
    if not trips:
        notes.append(f"guards {guards}: no trip.")
    elif first_stop is None:
        notes.append(f"guards {guards}: {len(trips)} trip(s), none would have stopped the run.")
    else:
        steps = t.finished.steps if t.finished else first_stop.step
        calls_after = sum(1 for c in t.tool_calls(executed_only=True) if c.seq > first_stop.seq)
        notes.append(f"guards {guards} would have stopped this run at step {first_stop.step} (event "
                     f"{first_stop.seq}): {first_stop.verdict.message}. The original run went on to step {steps}, "
                     f"making {calls_after} more tool call(s).")
    rows = [{"event": trip.seq, "step": trip.step, "guard": trip.guard, "rule": trip.verdict.rule,
             "verdict": trip.verdict.action + (" (after stop)" if trip.after_stop else ""),
             "numbers": ", ".join(f"{k}={val}" for k, val in trip.verdict.numbers.items()),
             "message": trip.verdict.message if len(trip.verdict.message) <= 140 or chosen is Format.plain
             else trip.verdict.message[:137] + "..."} for trip in shown]
    if chosen is Format.table:
        console.print(head, highlight=False)
    else:
        err_console.print(head, highlight=False)
    if trips:
        emit(Listing("trips", [Column("event", right=True), Column("step", right=True), Column("guard"),
                               Column("rule"), Column("verdict"), Column("numbers"), Column("message")],
                     rows, notes=notes), chosen)
    else:
        (console if chosen is Format.table else err_console).print(notes[0], highlight=False)
    if first_stop is not None:
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
           "tool_calls": len(t.tool_calls(executed_only=True)),
           "outcomes": {k: n for k, n in t.outcome_counts().items() if n},
           "trips": [{"event": trip.seq, "call": calls_at.get(trip.seq, 0), "step": trip.step, "guard": trip.guard,
                      "rule": trip.verdict.rule, "verdict": trip.verdict.action, "after_stop": trip.after_stop,
                      "numbers": dict(trip.verdict.numbers), "message": trip.verdict.message} for trip in trips]}
    from .._terminal import json_text

    print(json_text(json.dumps(doc, ensure_ascii=False, indent=2)))


def outcome_line(t: Trajectory) -> str:
    """Tool calls by outcome, the vocabulary every command shares (tether.events.Outcome)."""
    from ..events import Outcome

    labels = {o.value: o.label for o in Outcome}
    return ", ".join(f"{labels.get(k, k)} {n}" for k, n in t.outcome_counts().items() if n) or "no tool calls"


def _many(trace: str | None, store: str | None, eval_id: str | None, limit: int) -> tuple[list, str]:
    """(source, load) pairs for a folder of traces or a store's runs (either backend), and what they were
    read from."""
    from ..inputs import read_text
    from ..store import open_store
    from ..store.connect import store_label, store_spec
    from ..store.export import load_run, read_trace

    if trace is not None:
        folder = Path(trace)
        files = sorted(p for p in folder.rglob("*") if p.suffix in (".jsonl", ".ndjson") and p.is_file())[:limit]
        if not files:
            raise UsageError(f"no traces (*.jsonl) under {folder}")
        return [(str(p), lambda p=p: read_trace(read_text(p, "trace file"), path=str(p))) for p in files], str(folder)
    spec = store_spec(store)
    if isinstance(spec, Path) and not spec.exists():
        if store is None and eval_id is None:
            raise UsageError(f"name a run, a trace or a folder of traces, or give --store (no store at {spec})")
        raise UsageError(f"there is no store at {spec} (--store)")
    db = open_store(spec, read_only=True)
    where = store_label(db)
    ids = [r["run_id"] for r in db.list_runs(limit, eval_id=eval_id)]
    if not ids:
        db.close()
        raise UsageError(f"no runs in {where}" + (f" for evaluation {eval_id}" if eval_id else ""))
    return [(rid, lambda rid=rid: load_run(db, rid)) for rid in ids], where


def _print_many(where: str, guards: str, checks: list[RunCheck], fmt: Format | None) -> None:
    rows = rule_table(checks)
    read = [c for c in checks if not c.error]
    stopped = [c for c in read if c.stopped is not None]
    tripped = [c for c in read if c.trips]
    doc = {"source": where, "guards": guards, "runs": len(read), "unreadable": [
               {"run": c.source, "error": c.error} for c in checks if c.error],
           "runs_tripped": len(tripped), "runs_stopped": len(stopped),
           "rules": [{"guard": r.guard, "rule": r.rule, "runs": r.runs, "hint": r.hint, "block": r.block,
                      "stop": r.stop, "escalate": r.escalate, "trips": r.trips} for r in rows],
           "stopped": [{"run": c.source, "guard": c.stopped.guard, "rule": c.stopped.verdict.rule,
                        "verdict": c.stopped.verdict.action, "step": c.stopped.step, "calls": c.calls}
                       for c in stopped]}
    notes = [f"  stopped: {c.source} at step {c.stopped.step} by "
             f"{trip_name(c.stopped.guard, c.stopped.verdict.rule)} ({c.stopped.verdict.action})" for c in stopped[:20]]
    if len(stopped) > 20:
        notes.append(f"  ... and {len(stopped) - 20} more (--format json lists them all)")
    notes += [f"  unreadable: {c.source}: {c.error}" for c in checks if c.error]
    chosen = resolve(fmt)
    head = (f"{where}: {len(read)} run(s), guards {guards}: {len(tripped)} with a trip, "
            f"{len(stopped)} would have been stopped")
    if chosen is not Format.json:
        (console if chosen is Format.table else err_console).print(head, highlight=False, soft_wrap=True)
    emit(Listing("rules", [Column("guard"), Column("rule"), *(Column(k, right=True) for k in
                                                             ("runs", "hint", "block", "stop", "escalate"))],
                 doc["rules"], notes=notes, document=doc), chosen)
