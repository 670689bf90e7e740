"""Issue 19 finding 8: `--approver cli` after the approval timed out ends cleanly.

A real process, its stdin a pipe nobody writes to: the prompt waits, the
approval times out (a rejection), the run ends, and the process exits with its
code, not with "Fatal Python error" (exit 134) from a thread blocked on stdin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def test_cli_approver_timeout_exits_cleanly(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "120"}
    env.pop("TETHER_DEBUG", None)
    # the CLI's gate with a 1 s approval timeout instead of 300 s (the product code path unchanged)
    code = ("import tether.runtime.approvals as a\n"
            "init = a.ApprovalGate.__init__\n"
            "def short(self, *args, **kw):\n"
            "    kw.setdefault('timeout_s', 1.0)\n"
            "    init(self, *args, **kw)\n"
            "a.ApprovalGate.__init__ = short\n"
            "from tether.cli import main\nmain()\n")
    sink = (tmp_path / "out").open("wb")
    proc = subprocess.Popen([sys.executable, "-c", code, "run", "C4-PA-02", "--approve", "zhihu_get_answers",
                             "--approver", "cli", "--store", str(tmp_path / "t.db"), "--run-id", "cli1"],
                            stdin=subprocess.PIPE, stdout=sink, stderr=subprocess.STDOUT,
                            cwd=tmp_path, env=env)
    try:
        proc.wait(timeout=120)                       # stdin stays open: nobody answers
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
        sink.close()
    text = (tmp_path / "out").read_text(encoding="utf-8", errors="replace")
    assert "Fatal Python error" not in text, text
    # a timed-out approval is a rejection (docs/durable.md): the agent goes on, and the exit code is the
    # one `tether run` documents for how the run ended (0 clean, 3 guard or approval, 1 otherwise)
    from tether.store import SQLiteStore

    store = SQLiteStore(tmp_path / "t.db")
    run = store.get_run("cli1")
    decided = store.approvals("cli1")
    assert decided and all(a["status"] == "rejected" and a["decided_by"] == "timeout" for a in decided), decided
    expected = {"completed": 0, "needs_human": 3}.get(run["status"], 1)
    assert proc.returncode == expected, (proc.returncode, run["status"], text)


def test_approver_names_are_checked(tmp_path):
    from .records import cli

    res = cli("run", "C4-PA-02", "--approve", "zhihu_get_answers", "--approver", "bogus", "--store",
              str(tmp_path / "t.db"))
    assert res.exit_code == 2 and "--approver" in res.output and "bogus" in res.output, res.output
    assert not (tmp_path / "t.db").exists() or "bogus" not in res.output.split("error", 1)[0]
    res = cli("run", "C4-PA-02", "--approver", "bogus", "--store", str(tmp_path / "t2.db"))
    assert res.exit_code == 2 and "--approver" in res.output, res.output
