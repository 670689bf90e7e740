"""``tether store``: the store itself: info, check, prune, vacuum, copy."""

from __future__ import annotations

import datetime as dt
import time
from typing import Annotated, List, Optional

import typer

from ..errors import UsageError
from ._common import console, user_errors
from ._listing import Column, FormatOpt, Listing, emit

app = typer.Typer(
    help=("The store itself (a SQLite file or a postgresql:// URL; default $TETHER_STORE or .tether/tether.db): "
          "its size and span, a full integrity check, pruning old runs, compacting, copying to another "
          "backend.\n\n"
          "Examples:\n\n  tether store info\n\n  tether store check\n\n"
          "  tether store prune --older-than 90d --keep-evals 'e-2026*'\n\n  tether store vacuum\n\n"
          "  tether store copy .tether/tether.db postgresql://tether@db.internal/tether"),
    no_args_is_help=True,
)
StoreOpt = Annotated[Optional[str], typer.Option(help="the store: a file or a postgresql:// URL "
                                                      "(default $TETHER_STORE or .tether/tether.db)")]
StoreArg = Annotated[Optional[str], typer.Argument(metavar="STORE", show_default=False,
                                                   help="the store, as --store gives it (either one)")]


def _which(path: str | None, store: str | None) -> str | None:
    """The store a command names: positionally (tether store check my.db) or with --store."""
    if path is not None and store is not None and path != store:
        raise UsageError(f"the store is named twice ({path} and --store {store}): give it once")
    return path if path is not None else store


def _when(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts is not None else "-"


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _older_than(text: str) -> float:
    from ..report.metrics import parse_since

    try:
        cutoff = parse_since(text)
    except UsageError:
        cutoff = None
    if cutoff is None:  # an empty --older-than is no age at all, not "prune everything"
        raise UsageError(f"--older-than {text!r}: give an age (90d, 12h, 30m) or a date (2026-01-31)")
    return cutoff


@app.command("info", help="The store's backend, size, runs and evals, and its oldest and newest run.\n\n"
                          "Example:\n\n  tether store info --store runs.db")
def info_command(path: StoreArg = None, store: StoreOpt = None, fmt: FormatOpt = None) -> None:
    from ..store import open_store

    with user_errors():
        i = open_store(_present(_which(path, store)), read_only=True).info()
    shown = {"where": i["where"], "backend": i["backend"], "schema": i["schema"], "size": _size(i["size"]),
             "runs": i["runs"], "evals": i["evals"], "oldest": _when(i["oldest"]), "newest": _when(i["newest"])}
    doc = {"kind": "store", "where": i["where"], "backend": i["backend"], "schema": i["schema"], "size": i["size"],
           "runs": i["runs"], "evals": i["evals"], "oldest": _iso(i["oldest"]), "newest": _iso(i["newest"])}
    emit(Listing("store", [Column("field"), Column("value")], [{"field": k, "value": v} for k, v in shown.items()],
                 document=doc), fmt)


def _iso(ts: float | None) -> str | None:
    return dt.datetime.fromtimestamp(ts).isoformat(sep=" ", timespec="seconds") if ts else None


@app.command("check", help="Check the whole store: every page of a SQLite file (PRAGMA integrity_check; opening "
                           "a store only checks its header and schema), every row of a PostgreSQL store. Exit 0: "
                           "sound; exit 2: damaged, with what is wrong and how to recover.\n\n"
                           "Example:\n\n  tether store check --store runs.db")
def check_command(path: StoreArg = None, store: StoreOpt = None) -> None:
    from ..store import open_store
    from ..store.opening import StoreError, recovery

    with user_errors():
        db = open_store(_present(_which(path, store)), read_only=True)
        started = time.perf_counter()
        problems = db.check()
        if problems:
            hint = f"; {recovery(db.path)}" if db.backend == "sqlite" else ""
            raise StoreError(f"store {db.where} is damaged: " + "; ".join(problems)[:400] + hint)
    console.print(f"store {db.where}: ok (checked whole in {time.perf_counter() - started:.1f} s)", highlight=False)


@app.command("prune", help="Delete the runs older than an age, with their events, checkpoints, ledger and "
                           "approvals; then the evals older than it with no run left. Runs still running, and "
                           "the trials of evals matching --keep-evals, are kept. A SQLite store is pruned in transactions "
                           "of 500 runs, so other processes go on writing meanwhile; stopped half way, pruning again "
                           "finishes. `tether store vacuum` then gives the space back.\n\n"
                           "Examples:\n\n  tether store prune --older-than 90d\n\n"
                           "  tether store prune --older-than 2026-01-01 --keep-evals 'e-2025*' --keep-evals e-base")
def prune_command(
    older_than: Annotated[str, typer.Option("--older-than", help="an age (90d, 12h, 30m) or a date (2026-01-31)")],
    keep_evals: Annotated[Optional[List[str]], typer.Option("--keep-evals", help="keep this eval and its runs "
                                                                                  "(a glob; repeatable)")] = None,
    path: StoreArg = None,
    store: StoreOpt = None,
) -> None:
    from ..store import open_store

    with user_errors():
        cutoff = _older_than(older_than)
        where = _which(path, store)
        _an_existing_store(where, "prune")       # upkeep: never makes a store where there was none
        db = open_store(where)
        done = _prune_with_progress(db, cutoff, tuple(keep_evals or ()))
        left = db.info()
    console.print(f"pruned {done['runs']} run(s) and {done['evals']} eval(s) created before {_when(cutoff)} from "
                  f"{db.where}; {left['runs']} run(s) left (tether store vacuum gives the space back)",
                  highlight=False, soft_wrap=True)


def _prune_with_progress(db, cutoff: float, keep_evals: tuple[str, ...]) -> dict:
    """The prune, with a bar on a terminal (a year of runs: a minute or more; gone when it ends, leaving
    the one line that says what was pruned). Interrupted, it says how far it got: the runs deleted are
    gone whole, the rest all there, and pruning again finishes."""
    import sys

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    so_far = [0, 0]

    def note(done: int, total: int) -> None:
        so_far[:] = [done, total]

    try:
        if not console.is_terminal:         # a pipe or a log: only the closing line
            return db.prune(cutoff, keep_evals, progress=note)
        with Progress(TextColumn("pruning runs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=True) as bar:
            task = None

            def tick(done: int, total: int) -> None:
                nonlocal task
                note(done, total)
                if task is None:
                    task = bar.add_task("prune", total=total)
                bar.update(task, completed=done)

            return db.prune(cutoff, keep_evals, progress=tick)
    except KeyboardInterrupt:
        print(f"interrupted: {so_far[0]} of the runs to prune were deleted, whole"
              + (f" (of {so_far[1]})" if so_far[1] else "") + "; the others are all there: prune again to finish",
              file=sys.stderr)
        raise typer.Exit(130) from None


@app.command("vacuum", help="Rewrite the store compactly, giving the space of deleted rows back (SQLite VACUUM; "
                            "PostgreSQL VACUUM FULL). Takes a write lock for as long as it runs.\n\n"
                            "Example:\n\n  tether store vacuum --store runs.db")
def vacuum_command(path: StoreArg = None, store: StoreOpt = None) -> None:
    from ..store import open_store

    with user_errors():
        where = _which(path, store)
        _an_existing_store(where, "vacuum")      # upkeep: never makes a store where there was none
        db = open_store(where)
        before = db.info()["size"]
        db.vacuum()
        now = db.info()
        after, wal = now["size"], now.get("wal") or 0
    # the sizes count the file and its write-ahead log; a log another process's read kept from being
    # emptied holds the rewritten store a second time until that read ends: said, not hidden in the total
    kept = (f" ({_size(wal)} of it a write-ahead log another process's open read keeps; it is given back when "
            "that read ends)") if wal > 1024 * 1024 else ""
    console.print(f"vacuumed {db.where}: {_size(before)} -> {_size(after)}{kept}", highlight=False, soft_wrap=True)


@app.command("copy", help="Copy a whole store into an empty one, either way between SQLite and PostgreSQL: every "
                          "run, event, checkpoint, ledger entry, approval and eval, as is; then every finished "
                          "run's digest is recomputed from the copied events and checked.\n\n"
                          "Examples:\n\n  tether store copy .tether/tether.db postgresql://tether@db.internal/tether"
                          "\n\n  tether store copy postgresql://tether@db.internal/tether backup.db")
def copy_command(
    src: Annotated[str, typer.Argument(help="the store to copy: a file or a postgresql:// URL")],
    dst: Annotated[str, typer.Argument(help="an empty store to copy into (a new file, or a URL)")],
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="recompute every digest in the copy")] = True,
) -> None:
    from ..store import open_store
    from ..store.copy import copy_store

    with user_errors():
        _an_existing_store(src, "copy from")   # a copy reads its source: never make a store where there was none
        source = open_store(src, read_only=True)
        target = open_store(dst)
        started = time.perf_counter()
        done = copy_store(source, target, verify=verify)
    console.print(f"copied {source.where} -> {target.where}: " + ", ".join(f"{n} {t}" for t, n in done["rows"].items())
                  + (f"; {done['checked']} digest(s) recomputed, all equal" if verify else "")
                  + f" ({time.perf_counter() - started:.1f} s)", highlight=False, soft_wrap=True)


def _present(where: str | None) -> str | None:
    """A store that info and check inspect must be there: they never make one (a URL is its backend's to say)."""
    from ..store.connect import store_spec

    spec = store_spec(where)
    if not isinstance(spec, str) and not spec.exists():
        raise UsageError(f"no store at {spec} (nothing to inspect; a command that records runs makes one)")
    return where


def _an_existing_store(where: str | None, doing: str) -> None:
    """A store file a command upkeeps or copies from must already be an SQLite file (opening an
    empty or missing one would create a store there); a URL is checked by its backend."""
    from ..store.connect import store_spec

    spec = store_spec(where)
    if isinstance(spec, str):
        return
    if spec.is_dir():
        raise UsageError(f"store {spec} is a directory; give the store's file to {doing}")
    if not spec.is_file():
        raise UsageError(f"store {spec}: no such file to {doing}")
    from ..store.opening import held

    if held(spec):          # a store open in this process (tether called from Python): reading the file with a
        return              # descriptor of our own would drop that store's locks when it closed
    from ..store.opening import made_meanwhile

    if made_meanwhile(spec, spec.stat()).st_size == 0:      # (a store being made gets its header in a moment)
        head = b""
    else:
        with spec.open("rb") as f:
            head = f.read(16)
    if head != b"SQLite format 3\x00":
        raise UsageError(f"store {spec} is not a tether store ({'an empty file' if not head else 'not an SQLite file'}); "
                         f"nothing to {doing}")

