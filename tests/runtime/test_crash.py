"""Kill a durable run with SIGKILL at every step boundary and inside tool calls,
resume it, and check the external world: every intended side effect happened
exactly once (none duplicated, none lost)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tether.store import SQLiteStore


AGENT = Path(__file__).with_name("_crash_agent.py")
SRC = Path(__file__).resolve().parents[2] / "src"

SIDE_EFFECTS = ("create_refund", "send_email", "create_ticket")
KILL_POINTS = (
    [f"model:{k}" for k in range(1, 7)]                                       # step boundaries: before each decision
    + [f"{t}:{w}" for t in SIDE_EFFECTS for w in ("before", "after")]         # inside side-effecting calls
    + [f"layer:{t}" for t in SIDE_EFFECTS]                                    # returned, but not yet recorded
    + ["get_order:before", "check_refund:after"]                              # inside read-only calls
    + [f"event:{n}" for n in (4, 9, 14, 19, 24, 29)]                          # mid-step, right after an event persisted
)


def run(mode: str, tmp: Path, kill_at: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC), "KILL_AT": kill_at}
    return subprocess.run([sys.executable, str(AGENT), mode, str(tmp / "store.db"), str(tmp / "world.db"), "run-1"],
                          env=env, capture_output=True, text=True, timeout=60)


def world(tmp: Path) -> dict[str, int]:
    db = sqlite3.connect(tmp / "world.db")
    return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("refunds", "emails", "tickets")}


def kill_and_resume(point: str, tmp: Path) -> dict:
    killed = run("start", tmp, point)
    resumed = run("resume", tmp)
    store = sqlite3.connect(tmp / "store.db")
    statuses = [r[0] for r in store.execute("SELECT status FROM effects ORDER BY created")]
    resumes = sum(1 for e in SQLiteStore(tmp / "store.db").events("run-1") if e["type"] == "run_resumed")
    return {"point": point, "killed_rc": killed.returncode, "resume_rc": resumed.returncode,
            "resume_out": resumed.stdout.strip() + resumed.stderr[-400:], "world": world(tmp),
            "effects": statuses, "resumed_events": resumes}


def test_a_clean_run_makes_each_effect_once(tmp_path):
    assert run("start", tmp_path).stdout.strip() == "completed"
    assert world(tmp_path) == {"refunds": 1, "emails": 1, "tickets": 1}


@pytest.mark.slow        # 23 kill points x 2 processes; the default suite kills a few: tests/store/test_guarantees.py
def test_every_kill_point_resumes_with_exactly_once_effects(tmp_path):
    assert len(KILL_POINTS) >= 20
    dirs = []
    for i, _ in enumerate(KILL_POINTS):
        d = tmp_path / f"k{i}"
        d.mkdir()
        dirs.append(d)
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(kill_and_resume, KILL_POINTS, dirs))
    problems = []
    for o in outcomes:
        if o["killed_rc"] != -signal.SIGKILL:
            problems.append(f"{o['point']}: never reached (exit {o['killed_rc']})")
        elif o["resume_rc"] != 0 or o["resume_out"].split()[0] != "completed":
            problems.append(f"{o['point']}: resume ended {o['resume_out']!r}")
        elif o["world"] != {"refunds": 1, "emails": 1, "tickets": 1}:
            problems.append(f"{o['point']}: external effects {o['world']} (want exactly one of each)")
        elif o["effects"] != ["done", "done", "done"] or o["resumed_events"] != 1:
            problems.append(f"{o['point']}: ledger {o['effects']}, {o['resumed_events']} resume event(s)")
    duplicated = sum(max(0, n - 1) for o in outcomes for n in o["world"].values())
    lost = sum(1 for o in outcomes for n in o["world"].values() if n == 0)
    print(f"{len(outcomes)} kill points: {duplicated} duplicated, {lost} lost side effects")
    assert problems == [], "\n".join(problems)
    assert (duplicated, lost) == (0, 0)
