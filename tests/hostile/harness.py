"""Running a tether command on hostile input and checking what came back.

In-process (CliRunner, as ``tether`` itself: an exception that escapes a
command is turned into its one line by the same ``describe`` the console
script uses) for the cheap inputs; a subprocess with a memory limit
(``RLIMIT_AS``) and a timeout for the costly ones.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

SRC = Path(__file__).resolve().parents[2] / "src"
MEMORY_LIMIT = 1536 * 1024 * 1024      # bytes of address space a command may map
TIMEOUT = 60.0                         # seconds


@dataclass
class Outcome:
    code: int
    output: str


def invoke(argv: list[str], cwd: Path) -> Outcome:
    """``tether ARGV`` in-process, in ``cwd``; an escaping exception becomes what main() would print."""
    from tether.cli import app
    from tether.cli._common import describe

    old = Path.cwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(app, argv, env={"TETHER_STORE": str(cwd / ".tether" / "tether.db"),
                                                 "COLUMNS": "200", "TETHER_DEBUG": ""})
    finally:
        os.chdir(old)
    out = res.output
    exc = res.exception
    if exc is not None and not isinstance(exc, SystemExit):
        code, message = describe(exc)
        return Outcome(code, out + f"error {message}\n")
    return Outcome(res.exit_code, out)


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def invoke_subprocess(argv: list[str], cwd: Path, timeout: float = TIMEOUT) -> Outcome:
    """``python -m tether.cli ARGV`` with a memory limit and a timeout (exceeding either fails)."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "TETHER_STORE": str(cwd / ".tether" / "tether.db"),
           "COLUMNS": "200"}
    env.pop("TETHER_DEBUG", None)
    try:
        proc = subprocess.run([sys.executable, "-m", "tether.cli", *argv], cwd=cwd, env=env, capture_output=True,
                              timeout=timeout, preexec_fn=_limits, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Outcome(-9, f"TIMEOUT after {timeout:.0f} s")
    return Outcome(proc.returncode, proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace"))


def snapshot(root: Path, skip: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` but ``skip`` (the working folder): path -> (size, mtime_ns)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == skip:
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) != skip]
        for name in filenames + dirnames:
            p = Path(dirpath, name)
            st = p.lstat()
            out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def problems(outcome: Outcome, names: tuple[str, ...]) -> list[str]:
    """What is wrong with a command's answer to hostile input (empty: nothing)."""
    found = []
    if "Traceback" in outcome.output:
        found.append("printed a traceback")
    if outcome.code == 0:
        found.append("exited 0")
    if outcome.code == 70 or "internal error" in outcome.output:
        found.append("internal error (a bug)")
    if outcome.code < 0 or outcome.code in (137, -9):
        found.append(f"killed ({outcome.code})")
    if "MemoryError" in outcome.output or "TIMEOUT" in outcome.output:
        found.append("ran out of memory or time")
    if not any(n in outcome.output for n in names):
        found.append(f"does not name the input ({' or '.join(names)})")
    return found
