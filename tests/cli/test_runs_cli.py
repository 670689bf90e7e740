"""Durable runs from the CLI with the embedded store: run, runs list/show, approve, resume."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from tether.cli import app
from tether.store import SQLiteStore

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_pause_for_approval_then_approve_continues(tmp_path):
    db = str(tmp_path / "t.db")
    res = invoke("run", "C4-PA-02", "--approve", "zhihu_get_answers", "--run-id", "p1", "--store", db)
    assert res.exit_code == 3 and "awaiting approval" in res.output and "tether approve p1" in res.output
    listed = invoke("runs", "list", "--store", db)
    assert "p1" in listed.output and "needs_human" in listed.output and "1 approval(s)" in listed.output
    done = invoke("approve", "p1", "--by", "alice", "--store", db)
    assert done.exit_code == 0, done.output
    assert "approved by alice" in done.output and "status completed" in done.output
    shown = invoke("runs", "show", "p1", "--store", db)
    assert "consumed" in shown.output and "zhihu_get_answers" in shown.output and "completed" in shown.output


def test_reject_and_edit(tmp_path):
    db = str(tmp_path / "t.db")
    invoke("run", "C4-PA-01", "--approve", "taobao_*", "--run-id", "p2", "--store", db)
    rejected = invoke("approve", "p2", "--reject", "--note", "不需要", "--approver", "deny", "--store", db)
    assert "rejected by" in rejected.output
    results = SQLiteStore(db).events("p2")
    assert any(e["type"] == "tool_result" and e.get("error_type") == "rejected" for e in results)
    invoke("run", "C4-PA-01", "--approve", "taobao_*", "--run-id", "p3", "--store", db)
    edited = invoke("approve", "p3", "--edit", '{"keyword": "李宁羽毛球鞋"}', "--approver", "allow", "--store", db)
    assert "-> {'keyword': '李宁羽毛球鞋'}" in edited.output and "status completed" in edited.output


def test_approval_decisions_are_validated(tmp_path):
    db = str(tmp_path / "t.db")
    assert invoke("approve", "nope", "--store", db).exit_code == 2
    invoke("run", "C4-PA-02", "--approve", "zhihu_*", "--run-id", "p4", "--store", db)
    assert "not JSON" in invoke("approve", "p4", "--edit", "{oops", "--store", db).output
    assert invoke("approve", "p4", "--reject", "--escalate", "--store", db).exit_code == 2


def test_resume_refuses_a_finished_run(tmp_path):
    db = str(tmp_path / "t.db")
    assert invoke("run", "C4-PA-02", "--run-id", "f1", "--store", db).exit_code == 0
    res = invoke("resume", "f1", "--store", db)
    assert res.exit_code == 2 and "already ended as completed" in res.output


def test_resume_after_the_process_was_killed(tmp_path):
    """`tether run` killed with SIGKILL mid-run (the model sleeps), then `tether resume` finishes it."""
    db = tmp_path / "t.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "COLUMNS": "120"}
    code = ("import asyncio, os, signal\n"
            "from tether.models import registry, resolve_model\n"
            "base = resolve_model('policy:steady')\n"
            "class Dying:\n"
            "    name = 'policy:steady'\n"
            "    async def request(self, req):\n"
            "        if req.step == 3: os.kill(os.getpid(), signal.SIGKILL)\n"
            "        return await base.request(req)\n"
            "registry.register_model_prefix('dying', lambda rest: Dying())\n"
            "from tether.cli import main\nmain()\n")
    killed = subprocess.run([sys.executable, "-c", code, "run", "C4-PA-01", "--model", "dying:x", "--run-id", "k1",
                             "--store", str(db)], env=env, capture_output=True, text=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    store = SQLiteStore(db)
    assert store.get_run("k1")["status"] == "running" and store.checkpoint_count("k1") >= 2
    # resume with the real model; the stored recipe says "dying:x", so register it as steady here
    resumed = subprocess.run([sys.executable, "-c", code.replace("if req.step == 3: os.kill(os.getpid(), signal.SIGKILL)",
                                                                 "pass"), "resume", "k1", "--store", str(db)],
                             env=env, capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "status completed" in resumed.stdout
    events = [e["type"] for e in SQLiteStore(db).events("k1")]
    assert events.count("run_resumed") == 1 and events[-1] == "run_finished"
