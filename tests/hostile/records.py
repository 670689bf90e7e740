"""Run exports from elsewhere, made hostile: a real paused run, exported, then edited.

``paused_export(folder)`` runs ``tether run C4-PA-02 --approve zhihu_get_answers`` into a
store of its own and returns its export as a list of events (dicts), ready to be edited
and written back with :func:`write_export`.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tether.cli import app


def cli(*args: str, cwd: Path | None = None):
    import os

    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "TETHER_DEBUG": ""})
    finally:
        os.chdir(old)


def paused_export(folder: Path, run_id: str = "src1") -> list[dict]:
    folder.mkdir(parents=True, exist_ok=True)
    db = str(folder / "source.db")
    res = cli("run", "C4-PA-02", "--approve", "zhihu_get_answers", "--run-id", run_id, "--store", db)
    assert res.exit_code == 3, res.output
    res = cli("runs", "export", run_id, "--store", db)
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.stdout.splitlines() if line.strip()]


def finished_export(folder: Path, run_id: str = "done1") -> list[dict]:
    folder.mkdir(parents=True, exist_ok=True)
    db = str(folder / "source.db")
    res = cli("run", "C4-LD-01", "--model", "policy:steady", "--run-id", run_id, "--store", db)
    assert res.exit_code in (0, 3), res.output
    res = cli("runs", "export", run_id, "--store", db)
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.stdout.splitlines() if line.strip()]


def write_export(path: Path, events: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), encoding="utf-8")
    return path
