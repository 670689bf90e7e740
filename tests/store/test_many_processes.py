"""Many processes on one store at once, as users start them: several `tether eval` and `tether run`
writing runs (CI jobs, xdist workers), two resumes of one killed durable run, two `tether approve`
of one paused run, readers (`runs list`, `runs show`, `stats`, `store info`, the pages of a
running `tether view`) and upkeep (`store prune`, `store vacuum`, `store check`, `store copy`),
all started together against one SQLite file or one PostgreSQL schema.

Then: every process exited 0 (the loser of a race is told so, as docs/limits.md says; a writer
waits for the store's lock, it is never told "busy"), no output holds a traceback or speaks of a
damaged store or an I/O error, `store check` finds the store sound, every finished run's digest
verifies against its events, and the runs are exactly those made: the pruned ones gone, none lost,
none twice. The default suite runs a small crowd on each backend; `pytest -m slow` a large one."""

from __future__ import annotations

import datetime as dt
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tether.events import events_digest
from tether.store import open_store

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "tests" / "runtime" / "_crash_agent.py"
SRC = ROOT / "src"
# What no process may say: a traceback, a damaged store, an I/O error, a writer told the store is busy
# (tether's own wording: the cases' tools say "try again" to the agents, which is data).
BAD = re.compile(r"Traceback|is damaged|damaged run|disk I/O error|malformed|not a database|internal error|"
                 r"is busy \(|database is locked")
EVAL_ID = re.compile(r"\bev-\d{8}-[0-9a-f]{6}\b")


class Crowd:
    """Processes started one after another without waiting, each writing its output to a file:
    new interpreters (``python -m tether.cli``), or with ``forked`` the CLI in forks of this one
    (no interpreter to start nor modules to import: the small crowd of the default suite)."""

    def __init__(self, folder: Path, store: str, *, forked: bool = False):
        # a fork copies one thread only: with others running (left by earlier tests of the session: a
        # server, a writer), one of them may hold a lock the fork then waits for forever; new interpreters then
        self.folder, self.store, self.forked = folder, store, forked and threading.active_count() == 1
        self.started: list[tuple[str, Any, Path]] = []
        self.env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200", "KILL_AT": ""}
        for name in ("TETHER_DEBUG", "TETHER_STORE"):
            self.env.pop(name, None)

    def _start(self, name: str, argv: list[str], env: dict | None = None) -> None:
        out = self.folder / f"{name}.out"
        with out.open("w", encoding="utf-8") as fh:
            proc = subprocess.Popen(argv, cwd=self.folder, env=env or self.env, stdout=fh, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
        self.started.append((name, proc, out))

    def cli(self, name: str, *args: str) -> None:
        if not self.forked:
            self._start(name, [sys.executable, "-m", "tether.cli", *args])
            return
        import multiprocessing

        out = self.folder / f"{name}.out"
        proc = multiprocessing.get_context("fork").Process(target=_forked_cli, args=(list(args), out, self.folder,
                                                                                     self.env))
        proc.start()
        self.started.append((name, proc, out))

    def agent(self, name: str, mode: str, world: Path, kill_at: str = "") -> None:
        self._start(name, [sys.executable, str(AGENT), mode, self.store, str(world), "run-1"],
                    {**self.env, "KILL_AT": kill_at})

    def wait(self, timeout: float = 600) -> dict[str, tuple[int, str]]:
        deadline = time.monotonic() + timeout
        done = {}
        for name, proc, out in self.started:
            if isinstance(proc, subprocess.Popen):
                try:
                    rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    rc = proc.wait()
            else:
                proc.join(timeout=max(1.0, deadline - time.monotonic()))
                if proc.exitcode is None:
                    proc.kill()
                    proc.join()
                rc = proc.exitcode
            done[name] = (rc, out.read_text(encoding="utf-8", errors="replace"))
        self.started = []
        return done


def _forked_cli(args: list[str], out: Path, cwd: Path, env: dict) -> None:
    """In a fork: ``tether ARGS`` as the console script runs it, its output to ``out``; exits with its code."""
    import io
    import traceback

    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stdin = io.StringIO("")
    sys.argv = ["tether", *args]
    code = 0
    try:
        from tether.cli import main

        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:           # noqa: BLE001 - said in the output, which the test reads
        traceback.print_exc()
        code = 70
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _one(crowd: Crowd, name: str, *args: str) -> str:
    crowd.cli(name, *args)
    rc, out = crowd.wait()[name]
    assert rc == 0, f"{name}: exit {rc}\n{out[-1500:]}"
    return out


def _eval_id(out: str) -> str:
    found = EVAL_ID.findall(out)
    assert found, out[-800:]
    return found[-1]


class Pages(threading.Thread):
    """`tether view` serving the store while the crowd works: its pages, fetched over and over."""

    def __init__(self, crowd: Crowd, paths: list[str]):
        super().__init__(daemon=True)
        crowd.cli("view", "view", "--port", "0", "--store", crowd.store)
        self.proc, self.out = crowd.started.pop()[1:]
        self.paths, self.stop, self.problems, self.fetched = paths, threading.Event(), [], 0
        self.base = ""

    def run(self) -> None:
        import httpx

        deadline = time.monotonic() + 60
        while not self.base and time.monotonic() < deadline:
            m = re.search(r"http://127\.0\.0\.1:\d+/", self.out.read_text(encoding="utf-8", errors="replace"))
            if m:
                self.base = m.group(0)
            elif self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not self.base:
            self.problems.append("view: never served: " + self.out.read_text(encoding="utf-8", errors="replace"))
            return
        with httpx.Client(base_url=self.base, timeout=60) as client:
            while True:
                for path in self.paths:
                    r = client.get(path)
                    self.fetched += 1
                    if r.status_code != 200 or BAD.search(r.text):
                        self.problems.append(f"view {path}: {r.status_code} {BAD.findall(r.text)[:3]}")
                if self.stop.is_set():
                    return

    def finish(self) -> tuple[int, str]:
        self.stop.set()
        self.join(timeout=120)
        self.proc.terminate()
        rc = self.proc.wait(timeout=30)
        return (0 if rc in (0, -15) else rc), self.out.read_text(encoding="utf-8", errors="replace")


class Line(threading.Thread):
    """Commands run one after another, round after round, until the crowd's writers are done
    (one round at least); ``{copy}`` in a command is a new file each time."""

    def __init__(self, crowd: Crowd, commands: list[tuple[str, ...]]):
        super().__init__(daemon=True)
        self.crowd, self.commands, self.stop, self.done = crowd, commands, threading.Event(), {}
        self.start()

    def run(self) -> None:
        n = 0
        while n < len(self.commands) or not self.stop.is_set():
            name, *args = self.commands[n % len(self.commands)]
            args = [a.replace("{copy}", str(self.crowd.folder / f"copy-{n}.db")) for a in args]
            out = self.crowd.folder / f"{name}-{n}.out"
            with out.open("w", encoding="utf-8") as fh:
                rc = subprocess.run([sys.executable, "-m", "tether.cli", *args, *(() if name == "copy" else
                                                                                  ("--store", self.crowd.store))],
                                    cwd=self.crowd.folder, env=self.crowd.env, stdout=fh, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, timeout=600).returncode
            self.done[f"{name}-{n}"] = (rc, out.read_text(encoding="utf-8", errors="replace"))
            n += 1

    def finish(self) -> dict[str, tuple[int, str]]:
        self.stop.set()
        self.join(timeout=900)
        return self.done


class Gateway(threading.Thread):
    """`tether gateway` in front of a model API on loopback (tests/gateway/llm_upstream.py), recording
    the conversations an agent holds through it in the store while the crowd works."""

    TOOLS = [{"type": "function", "function": {"name": "fetch_report", "description": "Fetch a report by id.",
                                               "parameters": {"type": "object",
                                                              "properties": {"report_id": {"type": "string"}}}}}]

    def __init__(self, crowd: Crowd, conversations: int):
        super().__init__(daemon=True)
        up, port = _free_port(), _free_port()
        self.upstream = subprocess.Popen([sys.executable, str(ROOT / "tests" / "gateway" / "llm_upstream.py"),
                                          str(up)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        crowd.cli("gateway", "gateway", "--upstream", f"http://127.0.0.1:{up}/v1", "--port", str(port), "--store",
                  crowd.store, "--guards", "on")
        self.proc, self.out = crowd.started.pop()[1:]
        self.url, self.ports = f"http://127.0.0.1:{port}/v1", (up, port)
        self.runs = [f"g{i}" for i in range(conversations)]
        self.problems: list[str] = []

    def run(self) -> None:
        import httpx

        for port in self.ports:
            _wait_port(port)
        for run_id in self.runs:
            messages = [{"role": "user", "content": "Fetch report r-7."}]
            for _ in range(20):
                r = httpx.post(f"{self.url}/chat/completions", timeout=300, headers={"X-Tether-Run": run_id},
                               json={"model": "stubborn", "messages": messages, "tools": self.TOOLS})
                if r.status_code != 200:
                    self.problems.append(f"gateway {run_id}: {r.status_code} {r.text[:300]}")
                    break
                message = r.json()["choices"][0]["message"]
                if not message.get("tool_calls"):
                    break
                messages.append({"role": "assistant", "content": message.get("content"),
                                 "tool_calls": message["tool_calls"]})
                messages += [{"role": "tool", "tool_call_id": c["id"], "content": "Error: report r-7: access denied"}
                             for c in message["tool_calls"]]

    def finish(self) -> tuple[int, str]:
        self.join(timeout=600)
        self.proc.terminate()
        rc = self.proc.wait(timeout=120)
        self.upstream.terminate()
        self.upstream.wait(timeout=30)
        out = self.out.read_text(encoding="utf-8", errors="replace")
        return (0 if rc in (0, -15) else rc), out + "".join(f"\n{p}" for p in self.problems)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float = 60.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)


def _world(path: Path) -> dict[str, int]:
    db = sqlite3.connect(path)
    try:
        return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("refunds", "emails", "tickets")}
    finally:
        db.close()


def crowd_on_one_store(store_url: str, folder: Path, *, big: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if not big:         # what the CLI's commands import, imported once here for the forks
        import tether.cli.eval, tether.cli.runs, tether.cli.stats, tether.cli.store, tether.evals.runner  # noqa: E401,F401
    crowd = Crowd(folder, store_url, forked=not big)
    S = ("--store", store_url)
    steady = ("--model", "policy:steady")

    # -- before: runs to prune, an eval to keep, a paused run, a killed durable run -------------
    old = _eval_id(_one(crowd, "seed-old", "eval", "c4", *steady, "--case", "C4-AR-0[12]", *S))
    kept = _eval_id(_one(crowd, "seed-kept", "eval", "c4", *steady, "--case", "C4-AR-03", *S)) if big else None
    time.sleep(0.05)
    cutoff = dt.datetime.now().isoformat(timespec="microseconds")
    time.sleep(0.05)
    world = folder / "world.db"
    if big:
        crowd.cli("seed-paused", "run", "C4-PA-02", "--approve", "zhihu_get_answers", "--run-id", "p1", *S)
        crowd.agent("seed-killed", "start", world, kill_at="create_refund:after")
        seeded = crowd.wait()
        assert seeded["seed-paused"][0] == 3 and "awaiting approval" in seeded["seed-paused"][1], seeded
        assert seeded["seed-killed"][0] == -9, seeded
    db = open_store(store_url, read_only=True)
    before = {r["run_id"]: r for r in db.list_runs(1000)}
    db.close()
    old_runs = {k for k, r in before.items() if r["eval_id"] == old}
    kept_runs = sorted(k for k, r in before.items() if r["eval_id"] == kept)
    assert len(old_runs) == 2 and (not big or len(kept_runs) == 1), before

    # -- at once: writers, racers, readers, upkeep ----------------------------------------------
    evals = 4 if big else 2
    runs = 3 if big else 1
    pages = None
    if big:
        pages = Pages(crowd, ["/", f"/eval/{kept}", f"/run/{kept_runs[0]}", "/?kind=eval", "/run/p1"])
    for i in range(evals):
        crowd.cli(f"eval-{i}", "eval", "c4", *steady, *(("--trials", "3") if big else ("--case", "C4-PA-01")),
                  "--json", f"eval-{i}.json", *S)
    for i in range(runs):
        crowd.cli(f"run-{i}", "run", "C4-LD-01", *steady, "--run-id", f"r{i}", *S)
    if big:
        crowd.agent("resume-a", "resume", world)
        crowd.agent("resume-b", "resume", world)
        crowd.cli("approve-alice", "approve", "p1", "--by", "alice", "--approver", "allow", *S)
        crowd.cli("approve-bob", "approve", "p1", "--reject", "--by", "bob", "--approver", "allow", *S)
    # readers and upkeep, one after another in two lines, over and over until every writer is done
    readers = [("list", "runs", "list"), ("stats", "stats"), ("info", "store", "info")]
    upkeep = [("prune", "store", "prune", "--older-than", cutoff, *(("--keep-evals", kept) if big else ())),
              ("vacuum", "store", "vacuum"), ("check", "store", "check")]
    if big:
        readers += [("show", "runs", "show", kept_runs[0]), ("evals", "runs", "evals"),
                    ("approvals", "runs", "approvals"), ("list-json", "runs", "list", "--format", "json")]
        upkeep += [("copy", "store", "copy", store_url, "{copy}")]
    lines = []
    gateway = None
    if big:
        gateway = Gateway(crowd, 3)
        gateway.start()
        lines = [Line(crowd, readers), Line(crowd, upkeep)]
        pages.start()
    else:               # once each, at the same time as the writers (forks and threads do not mix)
        for name, *args in readers + upkeep:
            crowd.cli(name, *args, *S)
    done = crowd.wait()
    for line in lines:
        done.update(line.finish())
    if pages is not None:
        done["view"] = pages.finish()
    if gateway is not None:
        done["gateway"] = gateway.finish()

    # -- every process ended as it should -------------------------------------------------------
    # (the resume racers are a user's script: the loser is told by an exception, RunBusy while the other
    # drives the run or "already ended" after, which reaches that script with its traceback)
    problems = [f"{name}: {BAD.findall(out)[:3]}\n{out[-1200:]}" for name, (_, out) in done.items()
                if BAD.search(out) and not (name.startswith("resume-") and BAD.findall(out) == ["Traceback"]
                                            and ("RunBusy" in out or "already ended" in out))]
    racers = {"resume-a", "resume-b", "approve-alice", "approve-bob"}
    problems += [f"{name}: exit {rc}\n{out[-1200:]}" for name, (rc, out) in done.items()
                 if rc != 0 and name not in racers]
    if big:
        resumes = [done[n] for n in ("resume-a", "resume-b")]
        if [rc for rc, _ in resumes].count(0) < 1 or not any(out.split()[:1] == ["completed"] for _, out in resumes):
            problems.append(f"resumes: none completed the run {resumes}")
        problems += [f"a losing resume said {out[-400:]!r}" for rc, out in resumes
                     if rc != 0 and "RunBusy" not in out and "already ended" not in out]
        approvals = [done[n] for n in ("approve-alice", "approve-bob")]
        if sorted(rc == 0 for rc, _ in approvals) != [False, True]:
            problems.append(f"approvals: exits {[rc for rc, _ in approvals]} (one decides, one is told) {approvals}")
        problems += [f"the losing approve said {out[-400:]!r}" for rc, out in approvals if rc != 0 and not any(
            w in out for w in ("decided meanwhile", "no pending approval", "being driven"))]
        if pages.fetched < len(pages.paths):
            problems.append(f"view: only {pages.fetched} page(s) fetched")
        problems += pages.problems
    print(f"{len(done)} processes on one store, {sum(len(line.done) for line in lines)} of them readers and upkeep"
          + (f", {pages.fetched} pages fetched" if pages else ""))
    assert problems == [], "\n\n".join(problems)
    pruned = [int(m) for name, (_, out) in done.items() if name.startswith("prune")
              for m in re.findall(r"pruned (\d+) run", out)]
    assert sum(pruned) == 2, pruned

    # -- and the store holds exactly the runs made, each sound -----------------------------------
    out = _one(crowd, "check-after", "store", "check", *S)
    assert ": ok" in out, out
    db = open_store(store_url, read_only=True)
    try:
        after = db.list_runs(5000)
        ids = [r["run_id"] for r in after]
        assert len(ids) == len(set(ids)), "a run listed twice"
        have = set(ids)
        assert not have & old_runs, f"pruned runs still there: {sorted(have & old_runs)}"
        expect = set(kept_runs) | {f"r{i}" for i in range(runs)} | ({"p1", "run-1", *gateway.runs} if big else set())
        assert expect <= have, f"runs lost: {sorted(expect - have)}"
        cases_per_eval = 16 * 3 if big else 1
        made_evals = {r["eval_id"] for r in after if r["eval_id"] not in (None, kept)}
        assert len(made_evals) == evals, made_evals
        for eval_id in made_evals:
            trials = [(r["case_id"], r["trial"]) for r in after if r["eval_id"] == eval_id]
            assert len(trials) == len(set(trials)) == cases_per_eval, (eval_id, sorted(trials))
        assert have == expect | {r["run_id"] for r in after if r["eval_id"] in made_evals}, sorted(have)
        unsound = []
        for r in after:
            run = db.get_run(r["run_id"])
            if run["status"] == "running":
                unsound.append(f"{r['run_id']}: still running")
                continue
            events = db.events(r["run_id"])
            end = next((i for i, e in enumerate(events) if e.get("type") == "run_finished"), len(events) - 1)
            if not run.get("digest") or events_digest(events[:end + 1]) != run["digest"]:
                unsound.append(f"{r['run_id']}: digest {run.get('digest')} does not verify")
        assert unsound == [], unsound
        if big:
            assert [e["type"] for e in db.events("run-1")].count("run_finished") == 1
            assert _world(world) == {"refunds": 1, "emails": 1, "tickets": 1}, _world(world)
            decided = [a for a in db.approvals("p1") if a["decided_by"] in ("alice", "bob")]
            assert len(decided) == 1, decided
    finally:
        db.close()
    for copy in sorted(folder.glob("copy-*.db")):   # each copy taken while the crowd wrote is a sound store
        assert ": ok" in _one(crowd, f"check-{copy.stem}", "store", "check", str(copy))


def test_a_small_crowd_on_one_store(store_url, tmp_path):
    """Two evals and a run writing, prune and vacuum, four readers and a check, all at once."""
    crowd_on_one_store(store_url, tmp_path / "crowd", big=False)


@pytest.mark.slow
def test_a_large_crowd_on_one_store(store_url, tmp_path):
    """Four C4 evals of three trials, three runs, two racing resumes, two racing approvals, a gateway
    recording conversations, and meanwhile, round after round, seven readers, the viewer's pages,
    prune, vacuum, check and copy (about a minute on two cores)."""
    crowd_on_one_store(store_url, tmp_path / "crowd", big=True)


def _write_or_read(job: tuple[str, str]) -> str:
    import uuid

    from tether.store.opening import NoStore

    kind, path = job
    try:
        store = open_store(path, read_only=kind == "read")
        if kind == "write":
            store.create_run(uuid.uuid4().hex)
        else:
            store.list_runs(5)
        store.close()
        return "ok"
    except NoStore:
        return "no store yet"                     # a listing says so and exits 0
    except Exception as exc:                      # the test reports what each process saw
        return f"{kind}: {type(exc).__name__}: {exc}"


def _write_or_prune(job: tuple[str, str]) -> str:
    if job[0] == "write":
        return _write_or_read(job)
    from typer.testing import CliRunner

    from tether.cli import app

    res = CliRunner().invoke(app, ["store", "prune", "--older-than", "1d", "--store", job[1]])
    if res.exit_code == 0 and "pruned 0 run(s)" in res.output:
        return "ok"
    if res.exit_code == 2 and "no such file to prune" in res.output:
        return "no store yet"
    return f"prune: exit {res.exit_code}: {' '.join(res.output.split())}"


def test_upkeep_started_with_the_writers_that_make_the_store(tmp_path):
    """`tether store prune` in a clean-up job started as the first evals make the store: it prunes
    nothing, or finds no store yet; it used to meet the file before its header, and refuse it as
    "not a tether store (an empty file)"."""
    import multiprocessing
    from collections import Counter

    seen: Counter = Counter()
    with multiprocessing.get_context("fork").Pool(6) as pool:
        for trial in range(20):
            db = str(tmp_path / f"s{trial}.db")
            seen.update(pool.map(_write_or_prune, [("write", db), ("prune", db)] * 3))
    assert set(seen) <= {"ok", "no store yet"} and seen["ok"] >= 60, seen


def test_readers_started_with_the_writers_that_make_the_store(tmp_path):
    """`tether runs list` started with the evals that make a new store (a CI job listing what its
    matrix wrote): the first writer opens the file, then writes its header a moment later. A reader
    between the two saw an empty file and was told it is not a tether store; it now waits for the
    header (only for an empty file this recent, for a moment), or finds no store yet."""
    import multiprocessing
    from collections import Counter

    seen: Counter = Counter()
    with multiprocessing.get_context("fork").Pool(8) as pool:
        for trial in range(15):
            seen.update(pool.map(_write_or_read, [("write", str(tmp_path / f"s{trial}.db")),
                                                   ("read", str(tmp_path / f"s{trial}.db"))] * 4))
    assert set(seen) <= {"ok", "no store yet"} and seen["ok"] >= 60, seen


_FINISH = """
import sys
from tether.events import events_digest
from tether.store import open_store

store, run_id = open_store(sys.argv[1]), sys.argv[2]
store.append_events(run_id, [(1, {"type": "run_finished", "status": "completed"})])
store.finish_run(run_id, "completed", "done", "", digest=events_digest(store.events(run_id)))
store.create_run("later")
store.close()
"""


def test_a_copy_taken_while_another_process_finishes_a_run_is_one_moment_of_the_store(store_url, backend, tmp_path,
                                                                                     request):
    """`tether store copy` of a store in use: another process finishes a run, and starts one, while the
    copy reads table after table. The copy holds the store as it was at one moment (the run still
    running, the new one not there) and verifies; it used to mix moments, and call its own copy of
    the run, events read after the run's row, unfaithful."""
    from tether.store.copy import copy_store

    src = open_store(store_url)
    src.create_run("r1")
    src.append_events("r1", [(0, {"type": "run_started", "text": "开始"})])
    real_dump = src.dump

    def dump(table: str, batch: int = 1000):
        yield from real_dump(table, batch)
        if table == "events" and not (tmp_path / "finished").exists():
            (tmp_path / "finished").touch()
            env = {**os.environ, "PYTHONPATH": str(SRC)}
            subprocess.run([sys.executable, "-c", _FINISH, store_url, "r1"], env=env, check=True, timeout=120)

    src.dump = dump
    dst = open_store(tmp_path / "dst.db")
    try:
        done = copy_store(src, dst)
        assert (tmp_path / "finished").exists() and done["rows"]["runs"] == 1 and done["checked"] == 0, done
        copied = dst.get_run("r1")
        assert copied["status"] == "running" and not copied["digest"] and dst.get_run("later") is None
        assert [e["type"] for e in dst.events("r1")] == ["run_started"]
        assert src.get_run("r1")["status"] == "completed"
    finally:
        src.close()
        dst.close()


@pytest.mark.parametrize("command", [("store", "prune", "--older-than", "1d"), ("store", "vacuum"),
                                     ("store", "copy", "{store}", "{folder}/copy.db")])
def test_upkeep_called_from_python_keeps_the_locks_of_a_store_the_process_holds(tmp_path, command, still_holds):
    """tether's CLI called in a process that already holds the store open (a notebook, a test
    session, a user's own loop): the upkeep commands checked the file's first bytes with a
    descriptor of their own, and closing it dropped every lock the process held on the file.
    Another process then took the store for unused and switched it out of WAL under the first
    connection (the lead's third bug, in `tether store prune | vacuum | copy`)."""
    from typer.testing import CliRunner

    from tether.cli import app

    db = tmp_path / "s.db"
    first = open_store(db)
    first.create_run("r1")
    args = [a.format(store=db, folder=tmp_path) for a in command]
    res = CliRunner().invoke(app, [*args, *(() if "copy" in command else ("--store", str(db)))])
    try:
        assert res.exit_code == 0, res.output
        still_holds(db)
        first.create_run("r2")
        assert {r["run_id"] for r in first.list_runs()} == {"r1", "r2"}
    finally:
        first.close()


_HOLD_LOCK = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


@pytest.mark.slow           # the lock is held past the 10 s SQLite used to wait
def test_writers_wait_out_a_long_vacuum_instead_of_failing(tmp_path):
    """`tether store vacuum` (or prune) of a store of a year of runs holds the write lock for tens of
    seconds: a `tether run` or `tether eval` writing meanwhile waits for it, as the gateways do. They
    used to wait 10 s, then fail: "store ... is busy: try again"."""
    db = tmp_path / "s.db"
    crowd = Crowd(tmp_path, str(db))
    _one(crowd, "seed", "run", "C4-LD-01", "--model", "policy:steady", "--run-id", "seed", "--store", str(db))
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(db), "22"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        crowd.cli("run", "run", "C4-LD-01", "--model", "policy:steady", "--run-id", "w1", "--store", str(db))
        crowd.cli("eval", "eval", "c4", "--model", "policy:steady", "--case", "C4-AR-01", "--store", str(db))
        crowd.cli("list", "runs", "list", "--store", str(db))          # a read does not wait at all
        done = crowd.wait()
    finally:
        holder.wait(timeout=120)
        holder.stdout.close()
    assert {name: rc for name, (rc, _) in done.items()} == {"run": 0, "eval": 0, "list": 0}, done
    assert not any(BAD.search(out) for _, out in done.values()), done
    store = open_store(db, read_only=True)
    assert {r["run_id"] for r in store.list_runs()} >= {"seed", "w1"} and store.count_runs() == 3
    store.close()


def _import(job: tuple[str, str]) -> str:
    from tether.store.export import import_run

    store_url, text = job
    try:
        store = open_store(store_url)
        try:
            return "imported" if import_run(store, text)[1] else "already there"
        finally:
            store.close()
    except Exception as exc:                      # the test reports what each process saw
        return f"{type(exc).__name__}: {exc}"


def test_one_export_imported_by_several_processes_at_once(store_url, tmp_path):
    """`tether runs import run.jsonl` in several CI jobs at once, into one store: one imports the run,
    the others find it already there. They used to take the run another process had made but not
    yet finished for another run ("already in ... with other events"), or be told to choose
    another id."""
    import multiprocessing
    from collections import Counter

    crowd = Crowd(tmp_path, str(tmp_path / "src.db"), forked=True)
    _one(crowd, "run", "run", "C4-LD-01", "--model", "policy:steady", "--run-id", "x1", "--store", crowd.store)
    export = _one(crowd, "export", "runs", "export", "x1", "--store", crowd.store)
    seen: Counter = Counter()
    with multiprocessing.get_context("fork").Pool(6) as pool:
        for trial in range(6):
            text = export.replace('"x1"', f'"x1-{trial}"')
            seen.update(pool.map(_import, [(store_url, text)] * 6))
    assert seen == Counter({"imported": 6, "already there": 30}), seen
    store = open_store(store_url, read_only=True)
    assert store.count_runs() == 6 and all(r["digest"] for r in store.list_runs(20))
    store.close()


def test_a_long_lived_process_opening_a_store_again_and_again_keeps_nothing_per_open(tmp_path):
    """A service that opens the store for each request (RunConfig(store=SQLiteStore(path)) per call), a
    gateway reconnecting: after hundreds of opens, it holds no connection nor lock record of the
    closed ones, and no growing list of the stores it opened."""
    from tether.store import opening

    db = tmp_path / "s.db"
    for i in range(300):
        store = open_store(db)
        if i % 100 == 0:
            store.create_run(f"r{i}")
        del store                        # never closed by hand: freed, it closes its connection
    assert len(opening.LAST_OPENED) <= 8 and not opening.held(db)
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    assert fds < 200, f"{fds} open descriptors"
    other = subprocess.run([sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=0); "
                            "print(c.execute('PRAGMA journal_mode=DELETE').fetchone()[0])", str(db)],
                           capture_output=True, text=True, timeout=60)
    assert other.stdout.strip() == "delete", other.stderr         # nobody holds the file any more


_HOLD_READ = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN")
db.execute("SELECT COUNT(*) FROM runs").fetchone()
print("reading", flush=True)
sys.stdin.readline()                # until the test says so
db.execute("COMMIT")
"""


@pytest.mark.slow           # the vacuum waits its 10 s for the reader
def test_a_vacuum_does_not_wait_for_a_long_reader_to_finish(tmp_path):
    """A process holds a read transaction open (a store copy of a large store, a notebook): `store
    vacuum` compacts the store and ends, the write-ahead log left for the reader, instead of waiting
    as long as a write may wait for the lock (minutes) for the reader to be done."""
    db = tmp_path / "s.db"
    crowd = Crowd(tmp_path, str(db), forked=True)
    _one(crowd, "seed", "run", "C4-LD-01", "--model", "policy:steady", "--run-id", "seed", "--store", str(db))
    big = open_store(db)                 # a few MiB, so that the log the reader keeps is worth saying
    big.create_run("big")
    big.append_events("big", [(i, {"type": "run_started", "text": f"{i} " + "长文本" * 20_000}) for i in range(8)])
    big.close()
    reader = subprocess.Popen([sys.executable, "-c", _HOLD_READ, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "reading"
        vacuum = subprocess.run([sys.executable, "-m", "tether.cli", "store", "vacuum", "--store", str(db)],
                                env=crowd.env, capture_output=True, text=True, timeout=300)
        assert reader.poll() is None, "the reader is still in its transaction"
        assert vacuum.returncode == 0 and "vacuumed" in vacuum.stdout, vacuum.stdout + vacuum.stderr
        # the log the reader keeps is said apart, not a total that looks as if the store grew
        assert "write-ahead log another process's open read keeps" in vacuum.stdout, vacuum.stdout
    finally:
        reader.communicate("done\n", timeout=60)
    assert reader.returncode == 0
    assert ": ok" in _one(crowd, "check", "store", "check", "--store", str(db))


@pytest.mark.slow           # the default suite has the same race at the API: test_readers_started_with_the_writers...
def test_a_crowd_making_a_new_store(tmp_path):
    """The first CI run of a matrix: three evals make the store at the same moment, while listings and
    stats read it (finding no store yet, or what is there so far): every one exits 0, the store is
    sound and holds each eval's run once."""
    import tether.cli.eval, tether.cli.runs, tether.cli.stats, tether.evals.runner  # noqa: E401,F401

    db = tmp_path / "new" / "tether.db"
    crowd = Crowd(tmp_path, str(db), forked=True)
    for i in range(3):
        crowd.cli(f"eval-{i}", "eval", "c4", "--model", "policy:steady", "--case", "C4-AR-01", "--store", str(db))
        crowd.cli(f"list-{i}", "runs", "list", "--store", str(db))
    crowd.cli("stats", "stats", "--store", str(db))
    crowd.cli("evals", "runs", "evals", "--store", str(db))
    done = crowd.wait()
    problems = [f"{name}: exit {rc}\n{out[-800:]}" for name, (rc, out) in done.items() if rc != 0 or BAD.search(out)]
    assert problems == [], "\n\n".join(problems)
    assert ": ok" in _one(crowd, "check", "store", "check", "--store", str(db))
    store = open_store(db, read_only=True)
    runs = store.list_runs(10)
    store.close()
    assert len(runs) == 3 and len({r["eval_id"] for r in runs}) == 3 and all(r["digest"] for r in runs), runs


def test_a_store_given_as_an_input_file_in_a_process_that_holds_it_is_refused_unread(tmp_path, still_holds):
    """A store named where a trace, an export or a results file is read (`tether.load_trace(path)`,
    `runs import FILE` called from Python) by a process that has the store open: it is refused
    without being read, since closing a descriptor of ours would drop that store's locks."""
    from tether.errors import UsageError
    from tether.inputs import read_text

    db = tmp_path / "s.db"
    first = open_store(db)
    first.create_run("r1")
    try:
        with pytest.raises(UsageError, match="is a tether store"):
            read_text(db, "trace file")
        still_holds(db)
    finally:
        first.close()


def test_the_write_ahead_log_is_cut_back_once_a_long_reader_is_done(tmp_path, monkeypatch):
    """A long read in another process (a store copy) keeps the write-ahead log from being copied back,
    so it grows with every write meanwhile. Once the reader is done it is cut back to its limit at the
    next write, not kept at its largest for as long as a process (a gateway, `tether view`) keeps the
    store open."""
    from tether.store import sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store, "WAL_LIMIT_BYTES", 256 * 1024)
    db = tmp_path / "s.db"
    store = open_store(db)                      # the long-lived process: it keeps the store open throughout
    store.create_run("r0")
    wal = Path(f"{db}-wal")
    reader = subprocess.Popen([sys.executable, "-c", _HOLD_READ, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "reading"
        for i in range(40):                     # about 4 MiB, all of it kept in the log past the reader
            store.create_run(f"r{i + 1}")
            store.append_events(f"r{i + 1}", [(0, {"type": "run_started", "text": "数据" * 30000})])
        grown = wal.stat().st_size
    finally:
        reader.communicate("done\n", timeout=60)
    for i in range(40):                         # the reader is gone: checkpoints complete, the log starts over
        store.create_run(f"s{i}")
    try:
        assert grown > 2 * 1024 * 1024 and wal.stat().st_size <= 1024 * 1024, (grown, wal.stat().st_size)
        assert store.count_runs() == 81 and store.check() == []
    finally:
        store.close()
