"""kill -9 a plan-mode run and a pydantic-ai agent run at 20+ points each,
continue each with `tether resume RUN --agent ... --tools ...`, and count the
external world: every intended side effect (two identical refunds, one
e-mail, one ticket) happened exactly once: 0 duplicated, 0 lost."""

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

pytest.importorskip("pydantic_ai")

AGENT = Path(__file__).with_name("_crash_durable.py")
SRC = Path(__file__).resolve().parents[2] / "src"
WANT = {"refunds": 2, "emails": 1, "tickets": 1}

_EFFECTS = ("create_refund#1", "create_refund#2", "send_email#1", "create_ticket#1")
_TOOLS = ([f"{t}:{w}" for t in _EFFECTS for w in ("before", "after")]       # inside side-effecting calls
          + [f"layer:{t}" for t in _EFFECTS]                                # returned, not yet recorded
          + ["get_order:before", "check_refund:after"])                    # inside read-only calls
KILL_POINTS = {
    "plan": ["model:1"] + _TOOLS + [f"event:{n}" for n in (3, 7, 11, 15, 19, 23)],
    "pydantic": [f"model:{k}" for k in range(1, 8)] + _TOOLS + [f"event:{n}" for n in (4, 12, 20, 28)],
}
FACTORY = {"plan": "plan_agent", "pydantic": "pydantic_agent"}
DONE = {"plan": "succeeded", "pydantic": "completed"}
FEW = {"plan": ["create_refund#2:after"], "pydantic": ["create_refund#2:after"]}     # the default suite's


def _env(tmp: Path, kill_at: str = "") -> dict:
    path = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "KILL_AT": kill_at, "WORLD_DB": str(tmp / "world.db"),
            "TETHER_STORE": str(tmp / "store.db"), "NO_COLOR": "1", "COLUMNS": "200"}


def start(kind: str, tmp: Path, kill_at: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(AGENT), kind, str(tmp / "store.db"), "run-1"], env=_env(tmp, kill_at),
                          capture_output=True, text=True, timeout=120)


def resume(kind: str, tmp: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tether.cli", "resume", "run-1", "--agent", f"{AGENT}:{FACTORY[kind]}",
                           "--tools", f"{AGENT}:tools"], env=_env(tmp), capture_output=True, text=True, timeout=120)


def world(tmp: Path) -> dict[str, int]:
    db = sqlite3.connect(tmp / "world.db")
    return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in WANT}


def kill_and_resume(kind: str, point: str, tmp: Path) -> dict:
    killed = start(kind, tmp, point)
    resumed = resume(kind, tmp)
    store = SQLiteStore(tmp / "store.db")
    events = store.events("run-1")
    return {"point": point, "killed_rc": killed.returncode, "resume_rc": resumed.returncode,
            "resume_out": (resumed.stdout + resumed.stderr)[-600:], "world": world(tmp),
            "effects": [e["status"] for e in store.effects("run-1")],
            "status": store.get_run("run-1")["status"], "resumed_events": sum(e["type"] == "run_resumed" for e in events),
            "finished": sum(e["type"] == "run_finished" for e in events)}


def check(kind: str, points: list[str], tmp_path: Path) -> None:
    dirs = []
    for i, _ in enumerate(points):
        d = tmp_path / f"{kind}{i}"
        d.mkdir()
        dirs.append(d)
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(kill_and_resume, [kind] * len(points), points, dirs))
    problems = []
    for o in outcomes:
        if o["killed_rc"] != -signal.SIGKILL:
            problems.append(f"{o['point']}: never reached (exit {o['killed_rc']})")
        elif o["resume_rc"] != 0 or o["status"] != DONE[kind]:
            problems.append(f"{o['point']}: resume ended {o['status']} (exit {o['resume_rc']}): {o['resume_out']!r}")
        elif o["world"] != WANT:
            problems.append(f"{o['point']}: external effects {o['world']} (want {WANT})")
        elif o["effects"] != ["done"] * 4 or o["resumed_events"] != 1 or o["finished"] != 1:
            problems.append(f"{o['point']}: ledger {o['effects']}, {o['resumed_events']} resume event(s), "
                            f"{o['finished']} run_finished")
    duplicated = sum(max(0, o["world"][t] - n) for o in outcomes for t, n in WANT.items())
    lost = sum(max(0, n - o["world"][t]) for o in outcomes for t, n in WANT.items())
    print(f"{kind}: {len(outcomes)} kill points: {duplicated} duplicated, {lost} lost side effects")
    assert problems == [], "\n".join(problems)
    assert (duplicated, lost) == (0, 0)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["plan", "pydantic"])
def test_a_clean_run_makes_each_effect_once(kind, tmp_path):
    assert start(kind, tmp_path).stdout.strip() == DONE[kind]
    assert world(tmp_path) == WANT


@pytest.mark.parametrize("kind", ["plan", pytest.param("pydantic", marks=pytest.mark.slow)])  # pydantic-ai: 2 s a process
def test_a_few_kill_points_resume_with_exactly_once_effects(kind, tmp_path):
    check(kind, FEW[kind], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["plan", "pydantic"])
def test_every_kill_point_resumes_with_exactly_once_effects(kind, tmp_path):
    assert len(KILL_POINTS[kind]) >= 20
    check(kind, KILL_POINTS[kind], tmp_path)
