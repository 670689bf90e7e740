"""The store's guarantees, on both backends (one suite, parametrised by
``store_url``: tests/store/conftest.py): append-only events, compare-and-set
approvals, lease take-over, the side-effect ledger, digests; across processes:
the crash test (SIGKILL at step boundaries and inside tool calls, then resume:
every side effect exactly once), two resumes racing, two ``tether approve``
racing."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tether.errors import RunBusy, RunFailure
from tether.store import open_store

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "tests" / "runtime" / "_crash_agent.py"
SRC = ROOT / "src"
SIDE_EFFECTS = ("create_refund", "send_email", "create_ticket")
KILL_POINTS = (                                    # as tests/runtime/test_crash.py
    [f"model:{k}" for k in range(1, 7)]
    + [f"{t}:{w}" for t in SIDE_EFFECTS for w in ("before", "after")]
    + [f"layer:{t}" for t in SIDE_EFFECTS]
    + ["get_order:before", "check_refund:after"]
    + [f"event:{n}" for n in (4, 9, 14, 19, 24, 29)]
)
A_FEW = ["model:2", "create_refund:after", "layer:send_email"]    # a step boundary, inside and right after a call
ONCE = {"refunds": 1, "emails": 1, "tickets": 1}


# -- in one process, two connections ------------------------------------------------------
def test_events_are_append_only_across_connections(store_url):
    a, b = open_store(store_url), open_store(store_url)
    a.create_run("r1", model="m")
    a.append_events("r1", [(0, {"type": "run_started", "text": "中文"}), (1, {"type": "x"})])
    with pytest.raises(RunFailure, match="append-only"):
        b.append_events("r1", [(1, {"type": "again"})])
    with pytest.raises(RunFailure, match="append-only"):
        b.save_checkpoint("r1", 1, "step", 2, {"messages": []}, [(0, {"type": "again"})])
    b.append_events("r1", [(2, {"type": "y"})])
    assert [e["type"] for e in a.events("r1")] == ["run_started", "x", "y"]
    assert a.events("r1")[0]["text"] == "中文"


def test_racing_appends_one_chunk_wins_each_sequence_number(store_url):
    setup = open_store(store_url)
    setup.create_run("r1")
    stores = [open_store(store_url) for _ in range(4)]
    won = []

    def writer(i: int) -> None:
        for seq in range(20):
            try:
                stores[i].append_events("r1", [(seq, {"type": "e", "by": i})])
                won.append(seq)
            except RunFailure:
                pass

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == list(range(20))           # each seq written exactly once
    assert len(setup.events("r1")) == 20


def test_an_approval_is_decided_once_by_racing_deciders(store_url):
    first = open_store(store_url)
    first.create_run("r1")
    first.create_approval("a1", "r1", "create_refund", {"amount": 1}, "d" * 64, "over the limit")
    stores = [open_store(store_url) for _ in range(6)]
    barrier = threading.Barrier(6)
    results: list[bool] = [False] * 6

    def decide(i: int) -> None:
        barrier.wait()
        results[i] = stores[i].decide_approval("a1", "approved" if i % 2 else "rejected", f"user-{i}")

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 1
    winner = results.index(True)
    got = first.get_approval("a1")
    assert got["decided_by"] == f"user-{winner}"
    assert first.consume_approval("a1") is True and first.consume_approval("a1") is False


def test_a_lease_is_held_then_taken_over_when_it_expires(store_url):
    a, b = open_store(store_url), open_store(store_url)
    a.create_run("r1")
    a.acquire_lease("r1", "holder-a", ttl=0.3)
    with pytest.raises(RunBusy):
        b.acquire_lease("r1", "holder-b", ttl=5)
    b.acquire_lease("r1", "holder-b", ttl=5, stale=lambda row: row["holder"] == "holder-a")   # its holder is gone
    assert a.renew_lease("r1", "holder-a") is False                                          # a lost it
    b.release_lease("r1", "holder-b")
    a.acquire_lease("r1", "holder-a", ttl=0.2)
    time.sleep(0.3)
    b.acquire_lease("r1", "holder-b")                                                        # expired: taken over
    assert b.lease("r1")["holder"] == "holder-b"


def test_the_ledger_keeps_one_intent_per_key(store_url):
    a, b = open_store(store_url), open_store(store_url)
    a.create_run("r1")
    a.record_intent("k1", "r1", "create_refund:{}", "create_refund", {"amount": 1}, 1)
    b.record_intent("k1", "r1", "create_refund:{}", "create_refund", {"amount": 2}, 1)
    b.record_outcome("k1", "done", {"ok": True})
    effects = a.effects("r1")
    assert len(effects) == 1 and effects[0]["arguments"] == {"amount": 1} and effects[0]["status"] == "done"
    assert a.effect("k1")["result"] == {"ok": True} and b.effect("k2") is None


# -- across processes: the crash test, racing resumes, racing approvals ----------------------
def _agent(mode: str, store_url: str, world: Path, kill_at: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC), "KILL_AT": kill_at}
    return subprocess.run([sys.executable, str(AGENT), mode, store_url, str(world), "run-1"], env=env,
                          capture_output=True, text=True, timeout=120)


def _world(path: Path) -> dict[str, int]:
    db = sqlite3.connect(path)
    try:
        return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("refunds", "emails", "tickets")}
    finally:
        db.close()


def _kill_and_resume(point: str, store_url: str, world: Path) -> str:
    killed = _agent("start", store_url, world, point)
    if killed.returncode != -signal.SIGKILL:
        return f"{point}: never reached (exit {killed.returncode}) {killed.stderr[-300:]}"
    resumed = _agent("resume", store_url, world)
    if resumed.returncode != 0 or resumed.stdout.split()[:1] != ["completed"]:
        return f"{point}: resume ended {resumed.stdout.strip()!r} {resumed.stderr[-300:]}"
    if _world(world) != ONCE:
        return f"{point}: external effects {_world(world)} (want exactly one of each)"
    store = open_store(store_url)
    statuses = [e["status"] for e in store.effects("run-1")]
    resumes = sum(1 for e in store.events("run-1") if e["type"] == "run_resumed")
    store.close()
    if statuses != ["done"] * 3 or resumes != 1:
        return f"{point}: ledger {statuses}, {resumes} resume event(s)"
    return ""


def _crash(backend, new_store_url, tmp_path, points):
    jobs = [(p, new_store_url(backend), tmp_path / f"world-{i}.db") for i, p in enumerate(points)]
    with ThreadPoolExecutor(max_workers=3) as pool:
        problems = [p for p in pool.map(lambda j: _kill_and_resume(*j), jobs) if p]
    assert problems == [], "\n".join(problems)


def test_killed_runs_resume_with_every_side_effect_once(backend, new_store_url, tmp_path):
    _crash(backend, new_store_url, tmp_path, A_FEW)


@pytest.mark.slow
def test_killed_runs_resume_with_every_side_effect_once_at_every_kill_point(backend, new_store_url, tmp_path):
    _crash(backend, new_store_url, tmp_path, KILL_POINTS)


def _race_resumes(point: str, store_url: str, world: Path) -> str:
    killed = _agent("start", store_url, world, point)
    if killed.returncode != -signal.SIGKILL:
        return f"{point}: never reached (exit {killed.returncode})"
    env = {**os.environ, "PYTHONPATH": str(SRC), "KILL_AT": ""}
    cmd = [sys.executable, str(AGENT), "resume", store_url, str(world), "run-1"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    store = open_store(store_url)
    finished = [e["type"] for e in store.events("run-1")].count("run_finished")
    status = store.get_run("run-1")["status"]
    store.close()
    problems = []
    if _world(world) != ONCE:
        problems.append(f"{point}: external effects {_world(world)}")
    if finished != 1 or status != "completed":
        problems.append(f"{point}: {finished} run_finished, status {status}")
    rcs = [p.returncode for p in procs]
    if 0 not in rcs:
        problems.append(f"{point}: no resume succeeded {rcs} {[o[1][-300:] for o in outs]}")
    for rc, (_, err) in zip(rcs, outs):
        if rc != 0 and "RunBusy" not in err and "already ended" not in err:
            problems.append(f"{point}: the losing resume said {err[-300:]!r}")
    return "\n".join(problems)


def _resumes(backend, new_store_url, tmp_path, points):
    jobs = [(p, new_store_url(backend), tmp_path / f"world-{i}.db") for i, p in enumerate(points)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        problems = [p for p in pool.map(lambda j: _race_resumes(*j), jobs) if p]
    assert problems == [], "\n".join(problems)


def test_two_racing_resumes_drive_the_run_once(backend, new_store_url, tmp_path):
    _resumes(backend, new_store_url, tmp_path, ["create_refund:after"])      # every kill point: -m slow


@pytest.mark.slow
def test_two_racing_resumes_drive_the_run_once_at_every_kill_point(backend, new_store_url, tmp_path):
    _resumes(backend, new_store_url, tmp_path, KILL_POINTS)


def _cli(args: list[str], cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    env.pop("TETHER_DEBUG", None)
    return subprocess.Popen([sys.executable, "-m", "tether.cli", *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)


@pytest.mark.parametrize("repetition", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_two_racing_approvals_one_decision_one_resume(store_url, tmp_path, repetition):
    paused = _cli(["run", "C4-PA-02", "--approve", "zhihu_get_answers", "--run-id", "p1", "--store", store_url],
                  tmp_path)
    out, _ = paused.communicate(timeout=120)
    assert paused.returncode == 3 and "awaiting approval" in out, out
    procs = [_cli(["approve", "p1", "--by", "alice", "--approver", "allow", "--store", store_url], tmp_path),
             _cli(["approve", "p1", "--reject", "--by", "bob", "--approver", "allow", "--store", store_url], tmp_path)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(c == 0 for c in codes) == [False, True], f"exits {codes}\n{outs}"
    winner = "alice" if codes[0] == 0 else "bob"
    loser_out = outs[1] if winner == "alice" else outs[0]
    assert "Traceback" not in "".join(outs)
    assert ("decided meanwhile" in loser_out or "no pending approval" in loser_out or "being driven" in loser_out), \
        loser_out
    store = open_store(store_url)
    decided = [a for a in store.approvals("p1") if a["decided_by"] in ("alice", "bob")]
    assert len(decided) == 1 and decided[0]["decided_by"] == winner
    assert [e["type"] for e in store.events("p1")].count("run_finished") >= 1


@pytest.mark.slow
def test_ray_workers_write_their_runs_into_a_shared_postgresql_store(new_store_url, tmp_path):
    """``tether eval c4 --executor ray --store postgresql://...``: each worker writes its
    runs to the store itself; the driver checks every one is there with its digest."""
    pytest.importorskip("ray")
    url = new_store_url("postgresql")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-m", "tether.cli", "eval", "c4", "--model", "policy:steady",
                           "--executor", "ray", "--store", url, "--json", "results.json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stdout[-800:] + done.stderr[-800:]
    store = open_store(url)
    runs = store.list_runs(100)
    assert len(runs) == 16 and all(r["digest"] and r["steps"] is not None for r in runs)
    from tether.evals.results import Results

    results = Results.model_validate_json((tmp_path / "results.json").read_text(encoding="utf-8"))
    pinned = {t.run_id: t.digest for _, _, t in results.trials()}
    assert pinned == {r["run_id"]: r["digest"] for r in runs}
    report = subprocess.run([sys.executable, "-m", "tether.cli", "report", "results.json", "--html", "r.html"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0 and (tmp_path / "r.html").stat().st_size > 10_000, report.stdout + report.stderr
