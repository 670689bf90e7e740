"""Loading what ``tether diff`` compares: results documents (with their runs) and traces."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CaseFileError, FileLocation, UsageError
from ..events import Trajectory
from ..evals.results import ModelRunResult, Results, TrialResult
from ..evals.stored import RunMissing, RunSource, load_trial, open_runs


@dataclass
class ResultsFile:
    """A results document, where it was read from, and where its runs are."""

    results: Results
    path: Path | None = None
    runs: RunSource | None = None
    store: Any = None                   # an explicit store (--store) for the runs
    problem: str | None = None          # why the runs cannot be read, when they cannot
    _opened: bool = field(default=False, repr=False)

    def source(self) -> RunSource | None:
        if self.runs is None and not self._opened:
            self._opened = True
            try:
                self.runs = open_runs(self.results, self.path, store=self.store)
            except UsageError as exc:
                self.problem = str(exc)
        return self.runs

    def trajectory(self, trial: TrialResult) -> Trajectory:
        """The trial's run, checked against its digest (RunMissing says which and how to fix)."""
        source = self.source()
        if source is None:
            raise RunMissing(self.problem or "no runs")
        return load_trial(source, trial)


def load_results(path: str | Path, *, store: Any = None) -> ResultsFile:
    path = Path(path)
    return ResultsFile(Results.load(path), path, store=store)


def load_input(path: str | Path, *, store: Any = None) -> ResultsFile | Trajectory:
    """A results document (``tether eval --json``) or a single JSONL trace (a run export)."""
    from ..inputs import loads_json, read_text
    from ..store.export import read_trace

    path = Path(path)
    text = read_text(path, "results or trace file")
    head = text.lstrip()
    if not head:
        raise CaseFileError([(FileLocation(str(path), 1), "empty: neither a results document nor a trace")])
    doc: Any = None
    if head.startswith("{") and "\n{" not in head.rstrip():       # one JSON document, not JSON Lines
        doc = loads_json(text, str(path))
    if isinstance(doc, dict) and ("format" in doc or ("runs" in doc and "type" not in doc)):
        return ResultsFile(Results.parse(text, path=str(path)), path, store=store)
    trajectory = read_trace(text, path=str(path))
    if trajectory.started is None:
        raise CaseFileError([(FileLocation(str(path), 1), "neither a results document nor a trace (no run_started event)")])
    from ..evals.stored import check_closed

    check_closed(trajectory, trajectory.started.run_id, str(path))
    return trajectory


def select_run(results: Results, model: str | None, guards: str | None, *, side: str) -> ModelRunResult:
    runs = [r for r in results.runs if (model is None or r.model == model) and (guards is None or r.guards == guards)]
    if len(runs) == 1:
        return runs[0]
    known = ", ".join(f"{r.model} (guards {r.guards})" for r in results.runs) or "none"
    if not runs:
        raise UsageError(f"{side}: no run for model {model or 'any'} guards {guards or 'any'}; runs: {known}")
    flags = f"--{side}-model" + (f" / --{side}-guards" if len({r.guards for r in runs}) > 1 else "")
    raise UsageError(f"{side}: {len(runs)} runs match; choose one with {flags}; runs: {known}")
