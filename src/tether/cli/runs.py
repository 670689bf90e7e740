"""``tether runs``: list and show stored runs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich import box
from rich.table import Table

from ..errors import UsageError
from ..events import EVENT_ADAPTER, Trajectory
from ..store import SQLiteStore
from ._common import console, user_errors
from .run import render_trajectory

app = typer.Typer(
    help=("Runs recorded in the embedded store (.tether/tether.db, or $TETHER_STORE).\n\n"
          "Examples:\n\n  tether runs list\n\n  tether runs show C4-PA-01-3f2a1c"),
    no_args_is_help=True,
)

StoreOpt = Annotated[Optional[Path], typer.Option(help="the run store (default $TETHER_STORE or .tether/tether.db)")]


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


@app.command("list", help="List recent runs, newest first.\n\nExample:  tether runs list --limit 20")
def list_runs(store: StoreOpt = None, limit: Annotated[int, typer.Option(min=1)] = 30) -> None:
    db = SQLiteStore(store)
    runs = db.list_runs(limit)
    if not runs:
        console.print(f"no runs in {db.path}")
        return
    console.print(f"runs in {db.path}", highlight=False)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("run", "status", "case", "model", "updated", "ckpts", "waiting"):
        table.add_column(col, no_wrap=col in ("run", "status", "updated", "waiting"), overflow="fold",
                         min_width=len(col))
    for r in runs:
        waiting = len(db.approvals(r["run_id"], "pending"))
        table.add_row(r["run_id"], r["status"], r["case_id"] or "-", r["model"], _when(r["updated"])[5:16],
                      str(db.checkpoint_count(r["run_id"])), f"{waiting} approval(s)" if waiting else "")
    console.print(table)


@app.command("show", help="Show one run: status, the side-effect ledger, approvals and every step.\n\n"
                          "Example:  tether runs show C4-PA-01-3f2a1c")
def show_run(run_id: Annotated[str, typer.Argument(help="the run id")], store: StoreOpt = None) -> None:
    with user_errors():
        db = SQLiteStore(store)
        run = db.get_run(run_id)
        if run is None:
            raise UsageError(f"no run {run_id!r} in {db.path} (tether runs list)")
    ckpt = db.latest_checkpoint(run_id)
    console.print(f"run {run_id} · {run['status']} · case {run['case_id'] or '-'} · model {run['model']}\n"
                  f"created {_when(run['created'])} · updated {_when(run['updated'])} · "
                  f"{db.checkpoint_count(run_id)} checkpoint(s)"
                  + (f", last at step {ckpt['step']} ({ckpt['phase']})" if ckpt else ""), highlight=False)
    if run["reason"]:
        console.print(f"reason: {run['reason']}", highlight=False)
    effects = db.effects(run_id)
    if effects:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title="side-effect ledger")
        for col in ("step", "tool", "status", "key", "arguments"):
            table.add_column(col, overflow="fold")
        for e in effects:
            table.add_row(str(e["step"]), e["tool"], e["status"], e["key"], str(e["arguments"]))
        console.print(table)
    approvals = db.approvals(run_id)
    if approvals:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title="approvals")
        for col in ("id", "tool", "status", "by", "arguments", "reason"):
            table.add_column(col, overflow="fold")
        for a in approvals:
            table.add_row(a["id"], a["tool"], a["status"], a["decided_by"] or "", str(a["arguments"]), a["reason"])
        console.print(table)
    render_trajectory(Trajectory(EVENT_ADAPTER.validate_python(e) for e in db.events(run_id)))


# -- OpenTelemetry (tether.report.otel) ------------------------------------------------
@app.command("export-otel", help="Export a stored run as OpenTelemetry GenAI spans: over OTLP/HTTP to "
                                 "OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, or as OTLP JSON with --file. Message "
                                 "contents only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.\n\n"
                                 "Examples:\n\n  tether runs export-otel C4-LD-01-3f2a1c\n\n"
                                 "  tether runs export-otel C4-LD-01-3f2a1c --file spans.json")
def export_otel_command(
    run_id: Annotated[str, typer.Argument(help="the run id (tether runs list)")],
    store: StoreOpt = None,
    file: Annotated[Optional[Path], typer.Option("--file", help="write OTLP JSON here instead of sending it")] = None,
) -> None:
    from ..report.otel import export_stored_run

    with user_errors():
        console.print(export_stored_run(SQLiteStore(store), run_id, file), highlight=False, soft_wrap=True)


@app.command("import", help="Load runs into the store. With --otel: OTLP JSON spans written by any GenAI "
                            "instrumentation (one run per trace, kind import).\n\n"
                            "Example:  tether runs import --otel spans.json")
def import_command(
    file: Annotated[Path, typer.Argument(help="the file to import")],
    otel: Annotated[bool, typer.Option("--otel", help="the file is OTLP JSON (OpenTelemetry GenAI spans)")] = False,
    store: StoreOpt = None,
) -> None:
    with user_errors():
        db = SQLiteStore(store)
        if not file.is_file():
            raise UsageError(f"no such file: {file}")
        text = file.read_text(encoding="utf-8")
        if otel:
            from ..report.otel import import_otlp
            done = import_otlp(db, text, path=str(file))
        else:
            from ..store.export import import_run
            done = [import_run(db, text, path=str(file))]
    for run_id, new in done:
        console.print(f"{'imported' if new else 'already there'}: run {run_id} · store {db.path}", highlight=False,
                      soft_wrap=True)
