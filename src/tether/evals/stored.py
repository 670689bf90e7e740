"""Where a results document's runs are, and reading them back checked.

Every trial of a results document names a run (``run_id``) and pins it by the
``digest`` of its events. The runs are read from:

1. the store given explicitly (``--store PATH``);
2. the store the results name (``store``), as written, then relative to the
   results file;
3. a ``runs/`` folder beside the results file holding one export per run
   (``<run_id>.jsonl``, as ``tether baseline accept`` writes it).

Each run read is checked against its digest; a run that is missing or does
not match is reported with what to do about it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from ..errors import UsageError
from ..events import Trajectory
from .results import Results, TrialResult

RUNS_DIR = "runs"


class RunMissing(UsageError):
    """A trial's run cannot be read (absent, or not the run the results pinned)."""


class RunSource(Protocol):
    where: str

    def has(self, run_id: str) -> bool: ...

    def load(self, run_id: str) -> Trajectory: ...

    def append_judge_events(self, run_id: str, events: list) -> None: ...


class StoreSource:
    """Runs in a SQLite store."""

    def __init__(self, store):
        self.store = store
        self.where = f"store {getattr(store, 'where', store.path)}"

    def has(self, run_id: str) -> bool:
        return self.store.get_run(run_id) is not None

    def load(self, run_id: str) -> Trajectory:
        from ..store.export import load_run

        return load_run(self.store, run_id)

    def append_judge_events(self, run_id: str, events: list) -> None:
        if events:
            self.store.append_events(run_id, [(e.seq, e.model_dump(mode="json")) for e in events])


class ExportDirSource:
    """Runs exported one per file: ``<dir>/<run_id>.jsonl`` (a baseline's copy).
    Judge events are not written back: a baseline is a frozen copy."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.where = f"folder {self.directory}"

    def _path(self, run_id: str) -> Path:
        from ..ids import check_id, inside

        return inside(self.directory, f"{check_id(run_id, 'run id')}.jsonl", what="run export")

    def has(self, run_id: str) -> bool:
        from ..ids import is_id

        return is_id(run_id) and self._path(run_id).is_file()

    def load(self, run_id: str) -> Trajectory:
        return Trajectory.load(self._path(run_id))

    def append_judge_events(self, run_id: str, events: list) -> None:
        return None


def _store_candidates(results: Results, results_path: str | Path | None) -> list[Path]:
    if not results.store or results.store == ":memory:":
        return []
    named = Path(results.store)
    out = [named]
    if results_path is not None and not named.is_absolute():
        out.append(Path(results_path).resolve().parent / named)
    return out


def open_runs(results: Results, results_path: str | Path | None = None, *,
              store: str | os.PathLike[str] | object | None = None) -> RunSource:
    """The runs of ``results`` (see the module docstring for the order); a
    UsageError saying what to pass when none is found."""
    from ..store import SQLiteStore
    from ..store.connect import is_url, open_store

    if store is not None and not isinstance(store, (str, os.PathLike)):
        return StoreSource(store)                          # an open store
    if is_url(store):
        return StoreSource(open_store(store, read_only=True))
    if store is None and is_url(results.store):
        return StoreSource(open_store(results.store, read_only=True))
    if store is not None:
        path = Path(store)
        if not path.is_file():
            raise UsageError(f"store not found: {path}")
        return StoreSource(SQLiteStore(path))
    for path in _store_candidates(results, results_path):
        if path.is_file():
            return StoreSource(SQLiteStore(path))
    if results_path is not None:
        beside = Path(results_path).resolve().parent / RUNS_DIR
        if beside.is_dir():
            return ExportDirSource(beside)
    where = (f"the store it names ({results.store}) is not there" if results.store
             else f"it names no store and there is no {RUNS_DIR}/ folder beside it")
    raise UsageError(f"cannot find the runs of {results_path or 'these results'}: {where}; "
                     "pass the store the evaluation wrote to (--store PATH), or import the runs "
                     "(tether runs import FILE)")


def check_closed(t: Trajectory, run_id: str, who: str = "") -> None:
    """Refuse a run with events after its ``run_finished`` (other than judge records):
    a record ends there, and scoring what was appended would flip its verdict."""
    extra = t.after_finish()
    if extra:
        first = extra[0]
        raise RunMissing(f"{who + ': ' if who else ''}run {run_id} has {len(extra)} event(s) after run_finished "
                         f"(first: {first.type} at seq {first.seq}); a run's record ends with run_finished, "
                         "so it is refused (was it edited or imported from elsewhere?)")


def load_trial(source: RunSource, trial: TrialResult, *, label: str = "") -> Trajectory:
    """The trial's run, checked against the digest the results pinned.
    Raises RunMissing saying which run and how to fix it."""
    who = f"{label}trial {trial.trial}" if label else f"trial {trial.trial}"
    if not trial.run_id:
        raise RunMissing(f"{who}: the results name no run for it")
    from ..ids import is_id, shown

    if not is_id(trial.run_id):
        raise RunMissing(f"{who}: run id {shown(trial.run_id)} in the results is not a valid id; refused")
    if not source.has(trial.run_id):
        raise RunMissing(f"{who}: run {trial.run_id} is not in the {source.where}; point at the store the "
                         "evaluation wrote to (--store PATH) or import the run there "
                         f"(tether runs export {trial.run_id} > run.jsonl, then tether runs import run.jsonl)")
    t = source.load(trial.run_id)
    check_closed(t, trial.run_id, who)
    if trial.digest and t.digest() != trial.digest:
        raise RunMissing(f"{who}: run {trial.run_id} in the {source.where} is not the run these results "
                         f"were made from (digest {t.digest()[:12]}, the results pinned {trial.digest[:12]}); "
                         "use the store the evaluation wrote to (--store PATH)")
    return t
