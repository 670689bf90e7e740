"""Issue 19 finding 6: stdin is bounded like every file."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1536 * 1024 * 1024,) * 2)


@pytest.mark.slow
def test_yes_into_runs_import_stops_with_a_size_error(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SRC), "TETHER_STORE": str(tmp_path / "t.db")}
    env.pop("TETHER_DEBUG", None)
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        proc = subprocess.run([sys.executable, "-m", "tether.cli", "runs", "import", "-"], stdin=yes.stdout,
                              capture_output=True, env=env, cwd=tmp_path, timeout=60, preexec_fn=_limit)
    finally:
        yes.kill()
        yes.wait()
        yes.stdout.close()
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode == 2, out
    assert "stdin" in out and "MB" in out, out


def test_stdin_over_the_bound_is_refused_in_process(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from tether.cli import app
    from tether import inputs

    monkeypatch.setattr(inputs, "MAX_STDIN", 1000)
    res = CliRunner().invoke(app, ["runs", "import", "-", "--store", str(tmp_path / "t.db")], input="y\n" * 2000)
    assert res.exit_code == 2, res.output
    assert "stdin" in res.output
