"""``tether runs``: list, show, export and import the runs in the store."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from ..ids import check_id
from ._common import console, data_json, err_console, user_errors
from ._listing import Column, Format, FormatOpt, Listing, emit, resolve

app = typer.Typer(
    help=("Runs recorded in the embedded store (.tether/tether.db, or $TETHER_STORE): `tether run` runs, "
          "eval trials, replays, cassette runs and imports.\n\n"
          "Examples:\n\n  tether runs list --eval 'e-*' --status error\n\n  tether runs show C4-PA-01-3f2a1c\n\n"
          "  tether runs export C4-PA-01-3f2a1c > run.jsonl\n\n  tether runs import run.jsonl --store other.db"),
    no_args_is_help=True,
)

StoreOpt = Annotated[Optional[str], typer.Option(help="the run store: a file or a postgresql:// URL (default $TETHER_STORE or .tether/tether.db)")]
_GLOB = "(a glob: * and ? match)"
_COUNT_UPTO = 1_000      # a listing counts its matches up to this many (stats and store info give exact totals)


def _model(run: dict) -> str:
    """The run's model, and the spec its resume recipe names when that is another one
    (a user model named otherwise, or an edited record: both are shown, never one for the other)."""
    cli = run.get("meta", {}).get("cli")
    recipe = cli.get("model") if isinstance(cli, dict) else None
    return run["model"] if recipe in (None, run["model"]) else f"{run['model']} (resumes as {recipe})"


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


@app.command("list", help="List runs, newest first: every kind (run, eval trial, replay, cassette, import), "
                          "filtered by any of eval, model, case, status and kind.\n\n"
                          "Examples:\n\n  tether runs list --limit 20\n\n"
                          "  tether runs list --eval e-20250101-1a2b --status error\n\n"
                          "  tether runs list --model 'policy:*' --case 'C4-LD-*' --kind eval")
def list_runs(
    store: StoreOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=1_000_000, help="show at most this many")] = 50,
    eval_id: Annotated[Optional[str], typer.Option("--eval", help=f"runs of this eval {_GLOB}")] = None,
    model: Annotated[Optional[str], typer.Option(help=f"runs of this model spec {_GLOB}")] = None,
    case: Annotated[Optional[str], typer.Option(help=f"runs of this case {_GLOB}")] = None,
    status: Annotated[Optional[str], typer.Option(help=f"running, completed, error, ... {_GLOB}")] = None,
    kind: Annotated[Optional[str], typer.Option(help=f"run, eval, replay, cassette, import, mcp, plan {_GLOB}")] = None,
    before: Annotated[Optional[str], typer.Option(help="the next page: the runs older than this run (the last "
                                                       "line names it)", metavar="RUN")] = None,
    fmt: FormatOpt = None,
) -> None:
    filters = {"eval_id": eval_id, "model": model, "case_id": case, "status": status, "kind": kind}
    with user_errors():
        db = _store_to_read(store)
        if db is None:
            return emit(_none_yet("runs", RUN_COLUMNS, store, {"total": 0, "counted_upto": _COUNT_UPTO,
                                                              "next": None}), fmt)
        try:
            cursor = None
            if before is not None:
                cursor = db.run_cursor(before)
                if cursor is None:
                    raise UsageError(f"--before {before!r}: no such run in {db.where} (tether runs list)")
            runs, total = db.run_page(limit + 1, before=cursor, upto=_COUNT_UPTO, **filters)   # one round trip
        finally:
            db.close()          # before printing: a server's process for this connection ends meanwhile
        more = len(runs) > limit
        runs = runs[:limit]
    said = ", ".join(f"{k.removesuffix('_id')} {v}" for k, v in filters.items() if v is not None)
    for why in db.skipped:
        err_console.print(f"warning: store {db.path}: {why}", highlight=False, soft_wrap=True)
    rows = [{"run": r["run_id"], "kind": r["kind"], "status": r["status"], "error_kind": r.get("error_kind"),
             "eval": r["eval_id"], "trial": r["trial"] if r["eval_id"] else None, "case": r["case_id"],
             "model": _model(r), "guards": r["guards"], "updated": _iso(r["updated"]),
             "checkpoints": int(r["checkpoints"]), "approvals_waiting": int(r["approvals_waiting"])} for r in runs]
    listed = len(runs) + len(db.skipped)
    of = f"more than {_COUNT_UPTO:,}" if total > _COUNT_UPTO else f"{total}"
    shown = f"{len(runs)} of {of} run(s)" if total > listed or before else f"{len(runs)} run(s)"
    note = (f"{shown} in {db.where}" + (f" matching {said}" if said else "")
            + (f"; older ones: --before {runs[-1]['run_id']}" if more else ""))
    if not runs:
        note = f"no runs in {db.where}" + (f" matching {said}" if said else "")
    emit(Listing("runs", RUN_COLUMNS, rows, notes=[note],
                 extra={"store": db.where, "total": total if total <= _COUNT_UPTO else None,     # null: more than
                        "counted_upto": _COUNT_UPTO, "next": runs[-1]["run_id"] if more else None}), fmt)


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).isoformat(sep=" ", timespec="seconds")


RUN_COLUMNS = [
    Column("run", whole=True), Column("kind"),
    Column("status"), Column("error_kind", "error"),
    Column("eval", whole=True), Column("trial", right=True),
    Column("case", whole=True), Column("model", whole=True), Column("guards"),
    Column("updated", show=lambda v: v[5:16]),
    Column("checkpoints", "ckpts", right=True),
    Column("approvals_waiting", "waiting", show=lambda n: f"{n} approval(s)" if n else "-"),
]


@app.command("evals", help="List the evals in the store, newest first: their models, guard settings, rate per "
                           "dimension of each subject (model x guards; `auto` over automatic criteria only, "
                           "`unjudged` when only a judge decides), runs and errors.\n\n"
                           "Examples:\n\n  tether runs evals\n\n  tether runs evals --format json\n\n"
                           "  tether runs evals --limit 20 --before ev-20260101-1a2b3c")
def list_evals(
    store: StoreOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="show at most this many")] = 20,
    before: Annotated[Optional[str], typer.Option(help="the next page: the evals older than this eval (the last "
                                                       "line names it)", metavar="EVAL")] = None,
    fmt: FormatOpt = None,
) -> None:
    from ..report.overview import eval_rows

    with user_errors():
        db = _store_to_read(store)
        if db is None:
            return emit(_none_yet("evals", EVAL_COLUMNS, store, {"next": None}), fmt)
        if before is not None and db.get_eval(before) is None:
            raise UsageError(f"--before {before!r}: no such eval in {db.where} (tether runs evals)")
        found = db.list_evals(limit + 1, before=before)
        more = len(found) > limit
        found = found[:limit]
        rows = eval_rows(found, db.eval_overview([e["eval_id"] for e in found]))
    note = (f"{len(rows)} eval(s) in {db.where}" + (f"; older ones: --before {rows[-1]['eval']}" if more else "")
            if rows else f"no evals in {db.where}")
    if resolve(fmt) is Format.table:          # for a person: one line per subject, a column per dimension
        emit(_evals_table(rows, note), Format.table)
        return
    emit(Listing("evals", EVAL_COLUMNS, rows, notes=[note],
                 extra={"store": db.where, "next": rows[-1]["eval"] if more else None}), fmt)


def _subjects(subjects: list) -> str:
    from ..report.overview import subject_line

    return "\n".join(subject_line(x) for x in subjects) or "-"


EVAL_COLUMNS = [Column("eval", whole=True), Column("suite"), Column("status"), Column("created", show=lambda v: v[:16]),
                Column("models", show=", ".join), Column("guards", show=", ".join),
                Column("runs", right=True), Column("errors", right=True),
                Column("subjects", "rate per dimension", show=_subjects)]


def _store_to_read(store: str | None):
    """The store a listing reads, or None when there is none there yet (a read makes none)."""
    from ..store import open_store
    from ..store.opening import NoStore

    try:
        return open_store(store, read_only=True)
    except NoStore:
        return None


def _none_yet(kind: str, columns: list[Column], store: str | None, extra: dict) -> Listing:
    """An empty listing of a store that is not there yet: it says so, and the command exits 0."""
    from ..store.connect import store_spec
    from ..store.opening import no_store_yet

    where = str(store_spec(store))
    return Listing(kind, columns, [], notes=[no_store_yet(where, kind)], extra={"store": where, **extra})


def _evals_table(rows: list[dict], note: str) -> Listing:
    """The evals as a table: each subject (model x guards) on its own line under its eval,
    its rate per dimension in a column of its own (the suite's order)."""
    from ..evals.metrics import in_suite_order

    suites = {r["suite"] for r in rows}
    dims = in_suite_order(next(iter(suites)) if len(suites) == 1 else "",
                          (d for r in rows for x in r["subjects"] for d in x["rates"]))
    lines = []
    for r in rows:
        first = {"eval": r["eval"] + ("" if r["status"] == "finished" else f" ({r['status']})"),
                 "created": r["created"][5:16], "errors": r["errors"]}
        for i, x in enumerate(r["subjects"] or [{"model": ", ".join(r["models"]), "guards": ", ".join(r["guards"]),
                                                  "rates": {}}]):
            lines.append((first if i == 0 else {}) | {"model": x["model"], "guards": x["guards"],
                                                      **{d: x["rates"].get(d, {}).get("text", "") for d in dims}})
    blank = lambda v: "" if v is None else str(v)   # noqa: E731 (a continuation line leaves the eval's cells empty)
    columns = [Column("eval", whole=True, show=blank), Column("created", show=blank),
               Column("model", whole=True), Column("guards"), *(Column(d, right=True) for d in dims),
               Column("errors", right=True, show=blank)]
    return Listing("evals", columns, lines, notes=[note])


@app.command("approvals", help="List approvals, newest first: the calls waiting for a person (`--status pending`, "
                               "the default) or every decision (`--status all`), with the run, tool and arguments "
                               "each decision is bound to. `tether approve RUN` decides one.\n\n"
                               "Examples:\n\n  tether runs approvals\n\n  tether runs approvals --status all "
                               "--format json\n\n  tether runs approvals --run shoes")
def list_approvals(
    store: StoreOpt = None,
    status: Annotated[str, typer.Option(help="pending, approved, rejected, modified, escalated, terminated, "
                                             "expired, consumed, or all")] = "pending",
    run: Annotated[Optional[str], typer.Option("--run", help="only this run's approvals", metavar="RUN")] = None,
    limit: Annotated[int, typer.Option(min=1, max=100_000, help="show at most this many")] = 200,
    fmt: FormatOpt = None,
) -> None:
    statuses = ("pending", "approved", "rejected", "modified", "escalated", "terminated", "expired", "consumed")
    with user_errors():
        if status != "all" and status not in statuses:
            raise UsageError(f"--status {status!r}: use one of {', '.join(statuses)} or all")
        if run is not None:
            check_id(run, "--run")
        db = _store_to_read(store)
        if db is None:
            return emit(_none_yet("approvals", APPROVAL_COLUMNS, store, {}), fmt)
        found = db.approvals(run, None if status == "all" else status, limit=limit)
    rows = [{"approval": a["id"], "run": a["run_id"], "tool": a["tool"], "arguments": a["arguments"],
             "status": a["status"], "reason": a["reason"], "asked": _iso(a["created"]),
             "decided_by": a["decided_by"], "expires": _iso(a["expires"]) if a.get("expires") else None}
            for a in found]
    said = f"{status} " if status != "all" else ""
    note = (f"{len(rows)} {said}approval(s) in {db.where}" + (f" for run {run}" if run else "")
            + ("; decide with: tether approve RUN" if status == "pending" and rows else ""))
    emit(Listing("approvals", APPROVAL_COLUMNS, rows, notes=[note], extra={"store": db.where}), fmt)


APPROVAL_COLUMNS = [Column("approval", whole=True), Column("run", whole=True), Column("tool"),
                    Column("arguments", show=data_json), Column("status"), Column("reason"),
                    Column("asked", show=lambda v: v[5:16]), Column("decided_by", "by"),
                    Column("expires", show=lambda v: v[5:16] if v else "-")]


@app.command("show", help="Show one run whole: its status, the side-effect ledger, approvals, then every event: "
                          "each model request with the full message list it sent (judge, simulated-user and "
                          "drift-check requests marked), decisions, tool calls and results, guard trips, "
                          "usage, cost and latency.\n\n"
                          "Examples:\n\n  tether runs show C4-PA-01-3f2a1c\n\n"
                          "  tether runs show C4-PA-01-3f2a1c --messages new     # only what each request added")
def show_run(
    run_id: Annotated[str, typer.Argument(help="the run id (tether runs list)")],
    store: StoreOpt = None,
    messages: Annotated[str, typer.Option(help="request messages: full (the whole list sent), new (what each "
                                                "request added), none")] = "full",
) -> None:
    with user_errors():
        if messages not in ("full", "new", "none"):
            raise UsageError(f"--messages {messages!r}: use full, new or none")
        from ..store import open_store
        db = open_store(store, read_only=True)
        run = db.get_run(run_id)
        if run is None:
            raise UsageError(f"no run {run_id!r} in {db.path} (tether runs list)")
        from ..schemas import shipped
        from ..store.records import run_records

        # every event checked against the trace schema; no pydantic model built
        events = run_records(db, run_id, shipped("trace.schema.json"))
    ckpt = db.latest_checkpoint(run_id)
    console.print(f"run {run_id} · {run['kind']} · {run['status']}"
                  + (f" ({run['error_kind']})" if run.get("error_kind") else "")
                  + f" · case {run['case_id'] or '-'} · model {_model(run)} · guards {run['guards']}"
                  + (f" · eval {run['eval_id']} trial {run['trial']}" if run["eval_id"] else ""), highlight=False)
    console.print(f"created {_when(run['created'])} · updated {_when(run['updated'])} · "
                  f"{db.checkpoint_count(run_id)} checkpoint(s)"
                  + (f", last at step {ckpt['step']} ({ckpt['phase']})" if ckpt else "")
                  + f" · {len(events)} event(s)" + (f" · digest {run['digest']}" if run.get("digest") else ""),
                  highlight=False)
    if run["reason"]:
        console.print(f"reason: {run['reason']}", highlight=False)
    effects = db.effects(run_id)
    approvals = db.approvals(run_id)
    if effects or approvals:
        from rich import box
        from rich.table import Table
    from ._transcript import calls_by_key, render_transcript

    if effects:
        calls = calls_by_key(events)
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title="side-effect ledger")
        for col in ("step", "tool", "status", "calls", "key", "arguments"):
            table.add_column(col, overflow="fold")
        for e in effects:
            how = ", ".join(f"{label} {n}" for label, n in calls.get(e["key"], {}).items()) or "-"
            table.add_row(str(e["step"]), e["tool"], e["status"], how, e["key"], data_json(e["arguments"]))
        console.print(table)
    if approvals:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title="approvals")
        for col in ("id", "tool", "status", "by", "arguments", "reason"):
            table.add_column(col, overflow="fold")
        for a in approvals:
            table.add_row(a["id"], a["tool"], a["status"], a["decided_by"] or "", data_json(a["arguments"]), a["reason"])
        console.print(table)
    render_transcript(events, console, messages=messages)  # type: ignore[arg-type]  (a str of three values)


@app.command("export", help="Write a run as self-contained JSON Lines (the trace format, docs/events.md) to "
                            "stdout or --output.\n\n"
                            "Examples:\n\n  tether runs export C4-PA-01-3f2a1c > run.jsonl\n\n"
                            "  tether runs export C4-PA-01-3f2a1c | tether runs import - --store other.db")
def export_command(
    run_id: Annotated[str, typer.Argument(help="the run id (tether runs list)")],
    store: StoreOpt = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write here instead of stdout")] = None,
) -> None:
    with user_errors():
        from ..store import open_store
        from ..store.export import export_run
        text = export_run(open_store(store, read_only=True), run_id)
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        with user_errors():
            from ..inputs import write_text

            write_text(output, text, "--output")
        console.print(f"wrote {output}", highlight=False)


@app.command("import", help="Load an exported run (a file, or - for stdin) into the store; prints its run id and "
                            "digest. Importing the same run twice changes nothing; another run under an id "
                            "already stored is refused.\n\n"
                            "Examples:\n\n  tether runs import run.jsonl\n\n"
                            "  tether runs export RUN --store a.db | tether runs import - --store b.db\n\n"
                            "  tether runs import --otel spans.json      # OpenTelemetry GenAI spans")
def import_command(
    file: Annotated[str, typer.Argument(help="an export (JSON Lines), or - for stdin")],
    otel: Annotated[bool, typer.Option("--otel", help="the file is OTLP JSON spans from any GenAI instrumentation "
                                                      "(one run per trace, kind import)")] = False,
    store: StoreOpt = None,
) -> None:
    with user_errors():
        from ..inputs import read_stdin, read_text

        if file == "-":
            text, where = read_stdin("run export"), "<stdin>"
        else:
            text, where = read_text(Path(file), "run export"), file
        from ..store import open_store
        db = open_store(store)
        if otel:
            from ..report.otel import import_otlp

            done = import_otlp(db, text, path=where)
        else:
            from ..store.export import import_run

            done = [import_run(db, text, path=where)]
        from ..store.export import load_run

        lines = [(run_id, new, db.get_run(run_id)["digest"] or load_run(db, run_id).digest()) for run_id, new in done]
    for run_id, new, digest in lines:
        console.print(f"{'imported' if new else 'already there (same digest)'}: run {run_id} · digest {digest} · "
                      f"store {db.path}", highlight=False, soft_wrap=True)


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
        from ..store import open_store
        console.print(export_stored_run(open_store(store, read_only=True), run_id, file), highlight=False, soft_wrap=True)
