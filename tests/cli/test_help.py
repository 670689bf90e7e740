"""Help as a new user reads it through a pipe: every option spelled exactly, no
placeholder after a flag, no completion options below the root."""

import os
import subprocess
import sys

import pytest


def _piped_help(*args: str) -> str:
    """``tether ARGS --help | cat`` at 80 columns: a real process, its stdout a pipe."""
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "tether.cli", *args, "--help"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _help(*args: str) -> str:
    """The same through the CLI app in-process (no terminal either): the rest of the checks."""
    from typer.testing import CliRunner

    from tether.cli import app

    res = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    return res.stdout


def test_eval_help_keeps_extras_literal():
    out = _piped_help("eval")
    assert "tether[otel]" in out and "tether[ray]" in out
    assert "<bool>" not in out and "--install-completion" not in out


@pytest.mark.parametrize("args", [("eval",), ("runs",), ("runs", "list"), ("run",), ("case", "validate")])
def test_no_bool_placeholder_and_no_completion_below_root(args):
    out = _help(*args)
    assert "<bool>" not in out
    assert "--install-completion" not in out and "--show-completion" not in out


def test_root_help_still_offers_completion():
    assert "--install-completion" in _help()
