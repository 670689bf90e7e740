"""Two processes resume the same killed run at once: one drives it, the other is
told the run is busy. Side effects happen exactly once; one run_finished."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tether.store import SQLiteStore

from .test_crash import AGENT, KILL_POINTS, SRC, run, world


def race(point: str, tmp: Path) -> dict:
    killed = run("start", tmp, point)
    env = {**os.environ, "PYTHONPATH": str(SRC), "KILL_AT": ""}
    cmd = [sys.executable, str(AGENT), "resume", str(tmp / "store.db"), str(tmp / "world.db"), "run-1"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    store = SQLiteStore(tmp / "store.db")
    types = [e["type"] for e in store.events("run-1")]
    status = store.get_run("run-1")["status"]
    return {"point": point, "killed_rc": killed.returncode, "rcs": [p.returncode for p in procs],
            "errs": [o[1][-300:] for o in outs], "world": world(tmp), "finished": types.count("run_finished"),
            "status": status}


def _race_all(tmp_path, points):
    dirs = []
    for i, _ in enumerate(points):
        d = tmp_path / f"k{i}"
        d.mkdir()
        dirs.append(d)
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(race, points, dirs))
    problems = []
    for o in outcomes:
        if o["world"] != {"refunds": 1, "emails": 1, "tickets": 1}:
            problems.append(f"{o['point']}: external effects {o['world']}")
        if o["finished"] != 1 or o["status"] != "completed":
            problems.append(f"{o['point']}: {o['finished']} run_finished, status {o['status']}")
        if 0 not in o["rcs"]:
            problems.append(f"{o['point']}: no resume succeeded {o['rcs']} {o['errs']}")
        for rc, err in zip(o["rcs"], o["errs"]):     # the loser was told, not silently ignored
            if rc != 0 and "RunBusy" not in err and "already ended" not in err:
                problems.append(f"{o['point']}: the losing resume said {err!r}")
    duplicated = sum(max(0, n - 1) for o in outcomes for n in o["world"].values())
    print(f"{len(outcomes)} kill points, two racing resumes each: {duplicated} duplicated side effects")
    assert problems == [], "\n".join(problems)


@pytest.mark.slow        # the default suite races resumes at 3 points on both backends: tests/store/test_guarantees.py
def test_racing_resumes_at_a_few_kill_points(tmp_path):
    _race_all(tmp_path, [p for p in KILL_POINTS if p in ("model:2", "create_refund:after", "layer:create_ticket",
                                                        "event:9")])


@pytest.mark.slow
def test_racing_resumes_at_every_kill_point(tmp_path):
    """All 23 kill points (about 80 s on 2 cores): pytest -m slow."""
    assert len(KILL_POINTS) >= 20
    _race_all(tmp_path, KILL_POINTS)
