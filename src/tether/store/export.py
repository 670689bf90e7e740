"""A stored run as a self-contained file, and back.

An export is the run's events as JSON Lines, exactly the trace format
(``tether.events``, version 2): the first line is ``run_started`` (run id,
model, case, kind, eval id, tool specs), the run's own record ends with
``run_finished``; judge events appended after it come last. Loading an
export into another store gives the same run with the same digest.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..errors import CaseFileError, FileLocation, UsageError
from ..events import RunFinished, RunStarted, Trajectory
from ..status import TerminalStatus


def export_run(store: Any, run_id: str) -> str:
    """The run's events as UTF-8 JSON Lines (raises UsageError for an unknown run)."""
    if store.get_run(run_id) is None:
        raise UsageError(f"no run {run_id!r} in {store.path} (tether runs list)")
    from .._terminal import json_text

    # C1 controls and DEL as \u escapes: the same strings read back, and a terminal shown the export obeys none
    return json_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in store.events(run_id)))


def load_run(store: Any, run_id: str) -> Trajectory:
    """A stored run's events as a Trajectory."""
    from ..events import EVENT_ADAPTER

    if store.get_run(run_id) is None:
        raise UsageError(f"no run {run_id!r} in {store.path} (tether runs list)")
    from pydantic import ValidationError

    events = store.events(run_id)
    try:
        return Trajectory(EVENT_ADAPTER.validate_python(e) for e in events)
    except ValidationError as exc:
        raise _damaged(store, run_id, exc) from None


def validated_event(store: Any, run_id: str, raw: Any) -> Any:
    """One stored event read by its model (DamagedRun, as :func:`load_run`, when it is not a valid event)."""
    from pydantic import ValidationError

    from ..events import EVENT_ADAPTER

    try:
        return EVENT_ADAPTER.validate_python(raw)
    except ValidationError as exc:
        raise _damaged(store, run_id, exc) from None


def _damaged(store: Any, run_id: str, exc: Any) -> Exception:
    from .opening import DamagedRun

    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(p) for p in first.get("loc", ()))
    return DamagedRun(f"run {run_id} in {store.path} is damaged: a stored event is not a valid event "
                      f"({where}: {first.get('msg', exc)}); the other runs are fine")


def read_trace(text: str, *, path: str = "<trace>") -> Trajectory:
    """A trace or export (JSON Lines) as a Trajectory, with one clear error for
    what is plainly not a trace (an empty file, a results document, a JSON
    file that is not JSON Lines) instead of one error per line."""
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        raise CaseFileError([(FileLocation(path), "empty: not a trace (a trace is JSON Lines, one event per line; "
                                                  "tether runs export RUN writes one)")])
    from ..inputs import loads_json

    try:
        first = loads_json(lines[0], path, line=1)
    except CaseFileError:
        first = None
    if not (isinstance(first, dict) and "type" in first):
        whole = _json_document(text) if first is None or len(lines) == 1 else first
        if isinstance(whole, dict) and whole.get("format") == "tether.results":
            what = "a results document (tether.results), not a trace; its trials are runs in the store: " \
                   "give a run id (tether runs list) or a trace (tether runs export RUN)"
        else:
            what = "not a trace: the first line is not an event (a JSON object with a \"type\"); " \
                   "a trace is JSON Lines, one event per line (docs/events.md)"
        raise CaseFileError([(FileLocation(path, 1), what)])
    try:
        return Trajectory.from_jsonl(text, path=path)
    except CaseFileError as exc:
        if len(exc.problems) > 5:           # say the first few, count the rest
            more = (exc.problems[5][0], f"... and {len(exc.problems) - 5} more problem(s)")
            raise CaseFileError([*exc.problems[:5], more]) from None
        raise


def _json_document(text: str) -> Any:
    from ..inputs import loads_json

    try:
        return loads_json(text, "<document>")
    except CaseFileError:
        return None


def import_run(store: Any, text: str, *, path: str = "<export>") -> tuple[str, bool]:
    """Store an exported run; returns (run id, whether it was new). The same run
    imported twice is a no-op; another run under an id already stored is an error."""
    trajectory = read_trace(text, path=path)
    started = trajectory.started
    if started is None or not trajectory.events or not isinstance(trajectory.events[0], RunStarted):
        raise CaseFileError([(FileLocation(path, 1), "not a tether run export: the first event must be run_started")])
    from ._checks import check_joins_no_eval, check_started

    check_started(started, path)
    digest = trajectory.digest()
    finished = next((e for e in trajectory.events if isinstance(e, RunFinished)), None)
    existing = store.get_run(started.run_id)
    if existing is None:
        check_joins_no_eval(store, started, path)
        # one transaction: an import killed half way leaves nothing, not a run "running" for ever that
        # every later import of it would take for a run still being written
        if finished is not None:
            end = {"status": str(finished.status), "reply": finished.reply, "reason": finished.reason,
                   "digest": digest, "error_kind": finished.error_kind}
        else:           # nothing runs it here: not "running" for ever (never pruned, never imported again)
            end = {"status": str(TerminalStatus.ENDED), "reply": "", "reason": UNFINISHED, "digest": digest,
                   "error_kind": None}
        try:
            store.add_whole_run(started.run_id, {"model": started.model, "case_id": started.case_id,
                                                 "meta": started.meta, "kind": started.kind,
                                                 "eval_id": started.eval_id, "trial": started.trial,
                                                 "guards": started.guards},
                                [(i, e.model_dump(mode="json")) for i, e in enumerate(trajectory.events)], end)
        except UsageError:          # made meanwhile: by another process importing it too (CI jobs, one store)
            existing = store.get_run(started.run_id)
            if existing is None:
                raise
        else:
            return started.run_id, True
    if finished is not None and not existing.get("digest"):
        existing = _written(store, started.run_id, existing)
    if existing.get("digest") == digest:
        return started.run_id, False
    if finished is not None and not existing.get("digest") and existing.get("status") == "running":
        raise UsageError(f"run {started.run_id!r} is in {store.path} but still being written (by a run going on, "
                         "or another import of it): try again once it has finished; a run is never overwritten")
    raise UsageError(f"run {started.run_id!r} is already in {store.path} with other events "
                     f"(digest {str(existing.get('digest'))[:12]} vs {digest[:12]}); a run is never overwritten")


# The reason an export that stops before its run ended is stored with (its events as they are, its row "ended").
UNFINISHED = ("imported without an end: the export stops before the run ended (exported while it ran, or the "
              "run crashed)")
IMPORT_WAIT_S = 10.0        # how long an import waits for another process writing the same run to finish it


def _written(store: Any, run_id: str, row: dict) -> dict:
    """The run's row once the process writing it has finished it (it has a digest), or as it is
    after :data:`IMPORT_WAIT_S`: an import of a run another process is importing at the same
    moment waits for that one instead of taking its half-written run for another run."""
    deadline = time.monotonic() + IMPORT_WAIT_S
    while not row.get("digest") and row.get("status") == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
        row = store.get_run(run_id) or row
    return row


def load_trace_or_run(ref: str, store_path: Any = None) -> tuple[Trajectory, str]:
    """A trace / export file, or else a run id in the store (``store_path``, default
    the default store): (trajectory, what it was read from)."""
    from pathlib import Path

    from .sqlite import SQLiteStore, default_store_path

    from ..inputs import read_text

    path = Path(ref)
    if path.is_file() or path.exists() or ref.startswith("/dev/"):
        return read_trace(read_text(path, "trace file"), path=ref), ref
    if path.suffix in (".jsonl", ".json", ".ndjson") or "/" in ref or "\\" in ref:
        raise UsageError(f"trace not found: {ref}")
    from .connect import is_url, open_store, store_spec

    if is_url(store_spec(store_path)):
        store = open_store(store_path, read_only=True)
        if store.get_run(ref) is None:
            raise UsageError(f"{ref!r} is neither a file nor a run in {store.where} (tether runs list)")
        return load_run(store, ref), f"run {ref}"
    where = Path(store_path) if store_path is not None else default_store_path()
    if not where.exists():
        raise UsageError(f"{ref!r} is neither a file nor a run: there is no store at {where} (--store)")
    store = SQLiteStore(where, read_only=True)
    try:
        if store.get_run(ref) is None:
            raise UsageError(f"{ref!r} is neither a file nor a run in {where} (tether runs list)")
        return load_run(store, ref), f"run {ref}"
    finally:
        store.close()
