"""Two ``tether approve RUN`` at once, one approving and one rejecting: exactly one
decision is recorded (compare-and-set), its process exits 0 and resumes the run;
the other is told it lost, exits non-zero and resumes nothing. Real processes,
started together, on a copy of one paused run each repetition.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from .harness import SRC, invoke


@pytest.fixture(scope="module")
def paused_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("approve-race")
    res = invoke(["run", "C4-PA-02", "--approve", "zhihu_get_answers", "--run-id", "p1", "--store", "base.db"], root)
    assert res.code == 3 and "awaiting approval" in res.output, res.output
    con = sqlite3.connect(root / "base.db")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return root / "base.db"


def _events(db: Path) -> Counter:
    from tether.store import SQLiteStore

    store = SQLiteStore(db)
    try:
        return Counter(e["type"] for e in store.events("p1"))
    finally:
        store.close()


def _race(base: Path, work: Path) -> tuple[list[subprocess.CompletedProcess], Path]:
    db = work / "s.db"
    shutil.copy2(base, db)
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    env.pop("TETHER_DEBUG", None)
    # --approver allow: calls after the decided one are approved, so the winner's run completes (exit 0)
    argvs = [["approve", "p1", "--by", "alice", "--approver", "allow", "--store", str(db)],
             ["approve", "p1", "--reject", "--by", "bob", "--approver", "allow", "--store", str(db)]]
    procs = [subprocess.Popen([sys.executable, "-m", "tether.cli", *a], cwd=work, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL) for a in argvs]
    done = []
    for p, a in zip(procs, argvs):
        out, _ = p.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(a, p.returncode, out.decode("utf-8", "replace")))
    return done, db


def _check_race(base: Path, tmp: Path, repetitions: int) -> dict[str, int]:
    before = _events(base)
    wins: Counter = Counter()
    for i in range(repetitions):
        work = tmp / f"rep{i}"
        work.mkdir()
        (alice, bob), db = _race(base, work)
        codes = (alice.returncode, bob.returncode)
        assert sorted(c == 0 for c in codes) == [False, True], f"rep {i}: exits {codes}\n{alice.stdout}\n{bob.stdout}"
        winner, loser = (alice, bob) if alice.returncode == 0 else (bob, alice)
        assert "Traceback" not in loser.stdout + winner.stdout
        assert loser.returncode == 2 and ("decided meanwhile" in loser.stdout or "no pending approval" in loser.stdout
                                          or "being driven" in loser.stdout), loser.stdout
        assert "status" not in loser.stdout.splitlines()[-1], f"the loser resumed the run: {loser.stdout}"
        con = sqlite3.connect(db)
        decided = con.execute("SELECT status, decided_by FROM approvals WHERE decided_by IN ('alice', 'bob')"
                              ).fetchall()
        con.close()
        # one decision, the winner's (a decision used by the resumed run reads "consumed")
        expected = ({"approved", "consumed"}, "alice") if winner is alice else ({"rejected", "consumed"}, "bob")
        assert len(decided) == 1 and decided[0][0] in expected[0] and decided[0][1] == expected[1], \
            (decided, winner.stdout)
        after = _events(db)
        assert after["run_resumed"] - before["run_resumed"] == 1, after      # resumed once, by the winner
        assert after["run_finished"] == 1, after
        wins["alice" if winner is alice else "bob"] += 1
    return dict(wins)


@pytest.mark.slow        # the default suite races two approvals once per backend: tests/store/test_guarantees.py
def test_two_approvals_racing_one_wins(paused_store, tmp_path):
    _check_race(paused_store, tmp_path, 3)


@pytest.mark.slow
def test_two_approvals_racing_twenty_times(paused_store, tmp_path):
    wins = _check_race(paused_store, tmp_path, 20)
    print(f"approve race over 20 repetitions: wins {wins}")
