"""Help as a new user reads it through a pipe: every option spelled exactly, no
placeholder after a flag, no completion options below the root."""

import os
import subprocess
import sys

import pytest


def _help(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "tether.cli", *args, "--help"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_eval_help_keeps_extras_literal():
    out = _help("eval")
    assert "tether[otel]" in out and "tether[ray]" in out


@pytest.mark.parametrize("args", [("eval",), ("runs",), ("runs", "list"), ("run",), ("case", "validate")])
def test_no_bool_placeholder_and_no_completion_below_root(args):
    out = _help(*args)
    assert "<bool>" not in out
    assert "--install-completion" not in out and "--show-completion" not in out


def test_root_help_still_offers_completion():
    assert "--install-completion" in _help()
