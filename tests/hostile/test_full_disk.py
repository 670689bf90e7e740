"""Issue 19 finding 9: a full disk is its own error, never "move the store aside".

SQLITE_FULL is real SQLite's: the store's connection gets a page limit
(``PRAGMA max_page_count``) so the next write finds the database full; ENOSPC
is the kernel's, writing to /dev/full."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .records import cli

SRC = Path(__file__).resolve().parents[2] / "src"
FULL = ("import tether.store.opening as o\n"
        "connect = o.connect\n"
        "def small(path, *, read_only):\n"
        "    con, ro = connect(path, read_only=read_only)\n"
        "    pages = con.execute('PRAGMA page_count').fetchone()[0]\n"
        "    con.execute(f'PRAGMA max_page_count={max(pages, 1)}')\n"
        "    return con, ro\n"
        "o.connect = small\n"
        "from tether.cli import main\nmain()\n")


def _run(tmp_path: Path, *argv: str) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    env.pop("TETHER_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", FULL, *argv], cwd=tmp_path, env=env, capture_output=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "replace")


def test_sqlite_full_is_a_full_disk_not_a_damaged_store(tmp_path):
    db = tmp_path / "t.db"
    assert cli("run", "C4-LD-01", "--run-id", "one", "--store", str(db)).exit_code in (0, 3)
    code, out = _run(tmp_path, "run", "C4-LD-01", "--run-id", "two", "--store", str(db))
    assert code == 74, (code, out)
    assert "full" in out and "Traceback" not in out, out
    assert ".damaged" not in out and "recover" not in out and "move it aside" not in out, out
    # and the store is fine afterwards
    assert cli("runs", "show", "one", "--store", str(db)).exit_code == 0


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_enospc_writing_a_file_is_a_full_disk(tmp_path):
    db = str(tmp_path / "t.db")
    assert cli("run", "C4-LD-01", "--run-id", "one", "--store", db).exit_code in (0, 3)
    for argv in (["runs", "export", "one", "--store", db, "-o", "/dev/full"],
                 ["run", "C4-LD-01", "--store", db, "--trace", "/dev/full"]):
        res = cli(*argv)
        assert res.exit_code == 74, (argv, res.exit_code, res.output)
        assert "full" in res.output and "/dev/full" in res.output, res.output
        assert ".damaged" not in res.output
