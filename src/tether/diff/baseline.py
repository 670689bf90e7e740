"""Accepted baselines: a results document, its runs, and why it was accepted.

Seed 004, section 14: every accepted difference needs a reason, a review
record and a new baseline; failing cases are never just deleted from CI.

A baseline is self-contained: the results document and an export of every
run it references (read from the store, checked against the pinned digests),
so later diffs do not depend on the store. Layout under the baselines
directory (default ``tether-baselines``)::

    history.jsonl                           one JSON object per accepted baseline, append-only
    <name>/<accepted-at>/results.json       the results document ("store": null)
    <name>/<accepted-at>/runs/<run_id>.jsonl each run, as ``tether runs export`` writes it

``tether diff --baseline NAME NEW`` compares against the latest entry named NAME.
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ..errors import CaseFileError, FileLocation, UsageError
from ..evals.stored import RUNS_DIR, ExportDirSource, RunMissing, StoreSource, load_trial
from .loading import ResultsFile, load_results

HISTORY_FILE = "history.jsonl"
BASELINE_FORMAT = "tether.baseline"
DEFAULT_DIR = Path("tether-baselines")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class BaselineEntry(BaseModel):
    format: str = BASELINE_FORMAT
    version: int = 2
    name: str
    suite: str
    models: list[str] = Field(default_factory=list)   # "policy:steady (guards off)"
    reason: str
    accepted_at: str
    git_commit: str | None = None
    git_dirty: bool | None = None
    source: str                       # the results file accepted, as given
    path: str                         # results.json of this baseline, relative to the baselines directory
    eval_id: str | None = None        # the eval the results came from
    runs: int = 0                     # runs exported into the baseline
    missing_runs: list[str] = Field(default_factory=list)   # why a referenced run could not be copied


def accept_baseline(results_path: str | Path, *, reason: str, name: str | None = None,
                    directory: str | Path = DEFAULT_DIR, now: datetime | None = None,
                    store: Any = None) -> BaselineEntry:
    """Copy a results document and an export of each of its runs (from the store
    the results name, or ``store``) under ``directory``, and record why."""
    if not reason or not reason.strip():
        raise UsageError("a baseline needs a reason: say why these differences are accepted (--reason '...')")
    if name is not None and not name.strip():
        raise UsageError("baseline name '': give a name (or leave --name out to use the suite's)")
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"baselines folder {directory} is a file, not a folder (--dir)")
    source = load_results(results_path, store=store)
    name = name or source.results.suite
    if not _NAME.match(name) or ".." in name:
        raise UsageError(f"baseline name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)")
    directory = Path(directory)
    now = now or datetime.now(timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    target = directory / name / stamp
    n = 1
    while target.exists():
        n += 1
        target = directory / name / f"{stamp}-{n}"
    copied, missing = _export_runs(source, target / RUNS_DIR)
    doc = source.results.model_copy(update={"store": None})
    doc.save(target / "results.json")
    commit, dirty = _git_state()
    entry = BaselineEntry(
        name=name, suite=source.results.suite,
        models=[f"{r.model} (guards {r.guards})" for r in source.results.runs],
        reason=reason.strip(), accepted_at=now.isoformat(timespec="seconds"),
        git_commit=commit, git_dirty=dirty, source=str(results_path),
        path=(target / "results.json").relative_to(directory).as_posix(), eval_id=source.results.eval_id,
        runs=copied, missing_runs=missing,
    )
    with (directory / HISTORY_FILE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry.model_dump(mode="json"), ensure_ascii=False) + "\n")
    return entry


def list_baselines(directory: str | Path = DEFAULT_DIR) -> list[BaselineEntry]:
    """Every accepted baseline, oldest first (an absent directory has none)."""
    if Path(directory).exists() and not Path(directory).is_dir():
        raise UsageError(f"baselines folder {directory} is a file, not a folder (--dir)")
    path = Path(directory) / HISTORY_FILE
    if not path.exists():
        return []
    from ..inputs import capped, loads_json, read_text

    entries, problems = [], []
    for lineno, line in enumerate(read_text(path, "baseline history").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            entries.append(BaselineEntry.model_validate(loads_json(line, str(path), line=lineno)))
        except CaseFileError as exc:
            problems.extend(exc.problems)
        except ValidationError as exc:
            problems.append((FileLocation(str(path), lineno), f"not a baseline entry: {exc.errors()[0].get('msg')}"))
    if problems:
        raise CaseFileError(capped(problems))
    return entries


def find_baseline(name: str, directory: str | Path = DEFAULT_DIR) -> tuple[BaselineEntry, ResultsFile]:
    """The latest baseline accepted under ``name``, with its results document."""
    entries = [e for e in list_baselines(directory) if e.name == name]
    if not entries:
        known = sorted({e.name for e in list_baselines(directory)})
        raise UsageError(f"no baseline named {name!r} in {directory}"
                         + (f"; known: {', '.join(known)}" if known else "; accept one with `tether baseline accept`"))
    entry = entries[-1]
    from ..ids import inside

    try:
        path = inside(directory, entry.path, what="baseline results")
    except UsageError as exc:
        raise CaseFileError([(FileLocation(str(Path(directory) / HISTORY_FILE), field="path"),
                              f"baseline {name!r}: {exc}")]) from None
    found = load_results(path)
    found.runs = ExportDirSource(path.parent / RUNS_DIR)    # the baseline's own copy, never a store
    return entry, found


def _export_runs(source: ResultsFile, dest: Path) -> tuple[int, list[str]]:
    """Write each referenced run (checked against its digest) to ``dest/<run_id>.jsonl``."""
    from ..store.export import export_run

    runs = source.source()
    if runs is None:
        raise UsageError(f"cannot accept {source.path} as a baseline: {source.problem}")
    dest.mkdir(parents=True, exist_ok=True)
    copied, missing = 0, []
    for _, case, trial in source.results.trials():
        if not trial.run_id:
            continue
        try:
            trajectory = load_trial(runs, trial, label=f"{case.case_id} ")
        except RunMissing as exc:
            missing.append(str(exc))
            continue
        if not re.fullmatch(r"[A-Za-z0-9._-]+", trial.run_id):
            missing.append(f"{case.case_id} trial {trial.trial}: run id {trial.run_id!r} is not a safe file name")
            continue
        text = export_run(runs.store, trial.run_id) if isinstance(runs, StoreSource) else trajectory.to_jsonl()
        (dest / f"{trial.run_id}.jsonl").write_text(text, encoding="utf-8")
        copied += 1
    return copied, missing


def _git_state() -> tuple[str | None, bool | None]:
    """The commit the working directory is at, and whether it has uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return None, None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=5)
        return head.stdout.strip() or None, (bool(status.stdout.strip()) if status.returncode == 0 else None)
    except (OSError, subprocess.SubprocessError):
        return None, None
