"""`tether eval --resume EVAL_ID`: an eval killed with SIGKILL halfway finishes
without rerunning a finished trial; the run the kill left `running` is marked
abandoned and its trial reruns under a new run id."""

import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from tether.cli import app
from tether.evals.results import Results
from tether.store import SQLiteStore

runner = CliRunner()
SRC = Path(__file__).resolve().parents[2] / "src"

SLOW_MODEL = '''
import asyncio
from tether.models import resolve_model

class Slow:
    """policy:steady, answering after 40 ms: trials long enough to be killed halfway."""
    name = "slow-steady"

    def __init__(self):
        self.inner = resolve_model("policy:steady")

    async def request(self, request):
        await asyncio.sleep(0.04)
        return await self.inner.request(request)
'''


def _finished(db: Path) -> list[tuple[str, str]]:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT run_id, digest FROM runs WHERE status != 'running'").fetchall()
    except sqlite3.Error:          # not created yet
        return []


def test_killed_eval_resumes_without_rerunning_finished_trials(tmp_path, monkeypatch):
    (tmp_path / "slow.py").write_text(SLOW_MODEL, encoding="utf-8")
    db, out = tmp_path / "t.db", tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(tmp_path)])}
    proc = subprocess.Popen([sys.executable, "-m", "tether.cli", "eval", "c4", "--model", "slow.py:Slow",
                             "--case", "C4-LD-*", "--case", "C4-PA-0[12]", "--trials", "5", "--concurrency", "2",
                             "--store", str(db), "-q"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(_finished(db)) < 8 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    before = dict(_finished(db))
    assert 8 <= len(before) < 30, f"the eval was not killed halfway ({len(before)} of 30 trials finished)"
    store = SQLiteStore(db)
    (ev,) = store.list_evals()
    assert ev["status"] == "running"
    # a run the kill caught while it was being written stays `running`; make sure there is one
    trial_ids = {f"{ev['eval_id']}-slow.py_Slow-off-{case}-t{k}" for case in
                 ("C4-LD-01", "C4-LD-02", "C4-LD-03", "C4-LD-04", "C4-PA-01", "C4-PA-02") for k in range(5)}
    half_written = sorted(trial_ids - set(before))[0]
    if store.get_run(half_written) is None:
        case_id, trial = half_written.rsplit("-t", 1)[0].split("-off-")[1], int(half_written.rsplit("-t", 1)[1])
        store.create_run(half_written, model="slow-steady", case_id=case_id, meta={"subject": "slow.py:Slow"},
                         kind="eval", eval_id=ev["eval_id"], trial=trial, guards="off")
    left_running = [r["run_id"] for r in store.list_runs(1000, eval_id=ev["eval_id"], status="running")]
    assert half_written in left_running

    monkeypatch.chdir(tmp_path)      # the model file is named relative to where the eval started
    res = runner.invoke(app, ["eval", "--resume", ev["eval_id"], "--store", str(db), "--json", str(out), "-q"],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    m = re.search(r"(\d+) finished trials? kept, (\d+) to run", res.output)
    assert m, res.output
    assert (int(m.group(1)), int(m.group(2))) == (len(before), 30 - len(before))

    results = Results.load(out)
    assert results.eval_id == ev["eval_id"] and results.runs[0].model == "slow.py:Slow"
    trials = [t for _, _, t in results.trials()]
    assert len(trials) == 30 and all(t.verdict != "error" for t in trials)
    used = {t.run_id: t.digest for t in trials}
    # every finished run is kept as it was: same run id, same digest, not rerun
    for run_id, digest in before.items():
        assert used[run_id] == digest
    assert store.get_eval(ev["eval_id"])["status"] == "finished"
    # a run the kill left running is marked abandoned, never overwritten; its trial reran under a new id
    for run_id in left_running:
        row = store.get_run(run_id)
        assert row["status"] == "error" and row["reason"].startswith("abandoned:") and run_id not in used
        assert f"{run_id}-r1" in used
    # one run per trial in the results, plus the abandoned ones in the store
    assert len(store.list_runs(1000, eval_id=ev["eval_id"])) == 30 + len(left_running)

    again = runner.invoke(app, ["eval", "--resume", ev["eval_id"], "--store", str(db)])
    assert again.exit_code == 2 and "already finished" in again.output


def test_a_resume_of_an_eval_another_process_is_running_is_refused_naming_it(tmp_path):
    """While another live process runs the eval (it holds the eval's lease), --resume refuses,
    naming that process, instead of marking its live trials abandoned and running them again;
    once that process is gone (a dead pid on this host), the resume goes ahead."""
    import socket

    db = tmp_path / "s.db"
    res = runner.invoke(app, ["eval", "c4", "--model", "policy:steady", "--case", "C4-LD-01", "--store", str(db), "-q"])
    assert res.exit_code == 0, res.output
    (ev,) = SQLiteStore(db).list_evals()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        with sqlite3.connect(db) as conn:        # as the eval's own process left it: running, its lease held
            conn.execute("UPDATE evals SET status='running' WHERE eval_id=?", (ev["eval_id"],))
            conn.execute("INSERT INTO leases (run_id, holder, pid, host, acquired, expires) VALUES (?,?,?,?,?,?)",
                         (f"eval:{ev['eval_id']}", f"{other.pid}@x/1", other.pid, socket.gethostname(),
                          time.time(), time.time() + 120))
        res = runner.invoke(app, ["eval", "--resume", ev["eval_id"], "--store", str(db), "-q"])
        assert res.exit_code == 2, res.output
        assert f"eval {ev['eval_id']} is being run by pid {other.pid}" in res.output, res.output
        assert "Traceback" not in res.output
        assert [r["status"] for r in SQLiteStore(db).list_runs(10)] == ["completed"]     # nothing marked abandoned
    finally:
        other.kill()
        other.wait()
    res = runner.invoke(app, ["eval", "--resume", ev["eval_id"], "--store", str(db), "-q"])
    assert res.exit_code == 0, res.output
    assert SQLiteStore(db).lease(f"eval:{ev['eval_id']}") is None      # released when the eval ended


def test_a_resume_in_a_store_that_is_not_there_says_so_and_makes_none(tmp_path):
    db = tmp_path / "none" / "s.db"
    res = runner.invoke(app, ["eval", "--resume", "ev-20261201-abcdef", "--store", str(db)])
    assert res.exit_code == 2, res.output
    assert "no eval 'ev-20261201-abcdef'" in res.output and "there is no store there" in res.output, res.output
    assert not db.exists() and not db.parent.exists()
