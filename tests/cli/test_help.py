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


# What --help must not load: pydantic (Typer coerces an absent flag through a pydantic
# TypeAdapter when its value is None) and tether's event models. The cost itself is
# measured by benchmarks/help_cost.py; this pins the cause, which a timing cannot.
_HEAVY = ("pydantic", "typer._adapters", "tether.events", "tether.store.export")


@pytest.mark.parametrize("args", [(), ("eval",), ("runs",), ("runs", "list"), ("case", "validate")])
def test_help_loads_no_models(args):
    probe = ("import sys\n"
             f"sys.argv = ['tether', *{list(args)!r}, '--help']\n"
             "from tether.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             f"sys.stderr.write(repr(sorted(m for m in {_HEAVY!r} if m in sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Usage:" in proc.stdout
    assert proc.stderr.strip() == "[]", f"tether {' '.join(args)} --help loaded {proc.stderr.strip()}"


def _as_tether(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The console script in a fresh process (its program name is tether)."""
    probe = f"import sys\nsys.argv = ['tether', *{list(args)!r}]\nfrom tether.cli import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def test_completion_options_still_work_at_the_root(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "SHELL": "/bin/bash"}
    shown = _as_tether("--show-completion", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "_TETHER_COMPLETE=complete_bash" in shown.stdout
    installed = _as_tether("--install-completion", env=env)
    assert installed.returncode == 0, installed.stderr
    assert "_TETHER_COMPLETE" in (tmp_path / ".bash_completions" / "tether.sh").read_text()
    completed = _as_tether(env={**env, "_TETHER_COMPLETE": "complete_bash", "COMP_WORDS": "tether --",
                                "COMP_CWORD": "1"})
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["--install-completion", "--show-completion", "--help"]
    commands = _as_tether(env={**env, "_TETHER_COMPLETE": "complete_bash", "COMP_WORDS": "tether ru",
                               "COMP_CWORD": "1"})
    assert commands.stdout.split() == ["run", "runs"]
