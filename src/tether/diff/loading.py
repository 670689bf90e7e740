"""Loading what ``tether diff`` compares: results documents and traces."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import CaseFileError, FileLocation, UsageError
from ..events import Trajectory
from ..evals.results import ModelRunResult, Results

@dataclass
class ResultsFile:
    """A results document and where it was read from (to find its traces)."""

    results: Results
    path: Path | None = None

    def trace_path(self, rel: str) -> Path | None:
        """Traces are relative to the document's ``out_dir``, which is itself
        relative to where ``tether eval`` ran: try that, then next to the file."""
        out = Path(self.results.out_dir) if self.results.out_dir else None
        candidates: list[Path] = []
        if out is not None and out.is_absolute():
            candidates.append(out / rel)
        else:
            if self.path is not None:
                if out is not None:
                    candidates.append(self.path.parent / out / rel)
                candidates.append(self.path.parent / rel)
            if out is not None:
                candidates.append(out / rel)
        return next((p for p in candidates if p.is_file()), None)


def load_results(path: str | Path) -> ResultsFile:
    path = Path(path)
    try:
        return ResultsFile(Results.model_validate_json(path.read_text(encoding="utf-8")), path)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise CaseFileError([(FileLocation(str(path), field=where or None),
                              f"not a tether results document: {err.get('msg')}")]) from None


def load_input(path: str | Path) -> ResultsFile | Trajectory:
    """A results document (``tether eval --json``) or a single JSONL trace."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory; give a results JSON or a trace JSONL file") from None
    try:
        doc: Any = json.loads(text)
    except json.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and doc.get("format") == "tether.results":
        return load_results(path)
    if isinstance(doc, dict) and "runs" in doc and "type" not in doc:
        return load_results(path)
    trajectory = Trajectory.from_jsonl(text, path=str(path))
    if trajectory.started is None:
        raise CaseFileError([(FileLocation(str(path), 1), "neither a results document nor a trace (no run_started event)")])
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
