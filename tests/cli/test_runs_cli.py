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
    assert '-> {"keyword": "李宁羽毛球鞋"}' in edited.output and "status completed" in edited.output
    assert "{'" not in edited.output                         # data prints as JSON, never as a Python repr


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


# -- runs list / show / export / import ------------------------------------------------------
import asyncio
import json
import re

import pytest

from tether.evals import load_suite
from tether.evals.runner import run_trial
from tether.models import resolve_model
from tether.runtime import RunConfig
from tether.store.export import load_run

CASES = {c.id: c for c in load_suite("c4")}


def squash(text: str) -> str:
    """Output without whitespace (rich wraps long lines at the terminal width)."""
    return re.sub(r"\s+", "", text)


@pytest.fixture(scope="module")
def store_with_evals(tmp_path_factory):
    """Two evals' trials (kind eval) and one `tether run` run in one store."""
    db = str(tmp_path_factory.mktemp("runs") / "t.db")
    store = SQLiteStore(db)

    async def trials():
        for eval_id, model in (("e-stubborn", "policy:stubborn"), ("e-steady", "policy:steady")):
            store.create_eval(eval_id, "c4", {"models": [model]})
            for case in ("C4-LD-01", "C4-PA-02"):
                await run_trial(CASES[case], resolve_model(model), model_label=model, run_id=f"{eval_id}-{case}",
                                run_config=RunConfig(store=store, kind="eval", eval_id=eval_id))
    asyncio.run(trials())
    assert invoke("run", "C4-PA-02", "--run-id", "cli-1", "--store", db).exit_code == 0
    return db


def test_runs_list_shows_eval_trials_beside_runs(store_with_evals):
    db = store_with_evals
    out = invoke("runs", "list", "--store", db).output
    for column in ("run", "kind", "status", "eval", "case", "model", "guards", "updated"):
        assert column in out.splitlines()[0]
    assert "5 run(s)" in out and "cli-1" in out and "e-stubborn\t0\t" in out and "e-steady-C4-LD-01" in out


def test_runs_list_formats(store_with_evals):
    """--format json: one document with every row under stable keys; plain: a header line,
    one tab-separated row per run, ids whole at any width (CliRunner's stdout is no terminal)."""
    import json

    doc = json.loads(runner.invoke(app, ["runs", "list", "--store", store_with_evals, "--format", "json"],
                                   catch_exceptions=False).stdout)
    assert doc["kind"] == "runs" and doc["total"] == 5 and doc["next"] is None and len(doc["rows"]) == 5
    row = next(r for r in doc["rows"] if r["run"] == "e-stubborn-C4-LD-01")
    assert row["eval"] == "e-stubborn" and row["trial"] == 0 and row["case"] == "C4-LD-01"
    assert row["model"] == "policy:stubborn" and row["status"] == "step_limit" and set(row) == set(doc["columns"])
    plain = runner.invoke(app, ["runs", "list", "--store", store_with_evals], env={"COLUMNS": "40"},
                          catch_exceptions=False).stdout.splitlines()
    assert plain[0].split("\t")[:3] == ["run", "kind", "status"] and len(plain) == 6
    assert {line.split("\t")[0] for line in plain[1:]} == {r["run"] for r in doc["rows"]}
    assert all(len(line.split("\t")) == len(doc["columns"]) for line in plain)


@pytest.mark.parametrize("args, expected", [
    (("--eval", "e-stubborn"), {"e-stubborn-C4-LD-01", "e-stubborn-C4-PA-02"}),
    (("--eval", "e-*", "--case", "C4-LD-*"), {"e-stubborn-C4-LD-01", "e-steady-C4-LD-01"}),
    (("--model", "policy:steady", "--kind", "eval"), {"e-steady-C4-LD-01", "e-steady-C4-PA-02"}),
    (("--kind", "run"), {"cli-1"}),
    (("--status", "step_limit"), {"e-stubborn-C4-LD-01"}),
])
def test_runs_list_filters(store_with_evals, args, expected):
    res = invoke("runs", "list", "--store", store_with_evals, *args)
    listed = {line.split()[0] for line in res.output.splitlines() if line.strip().startswith(("e-", "cli-"))}
    assert listed == expected, res.output


def test_runs_list_limit_and_no_match(store_with_evals):
    out = invoke("runs", "list", "--store", store_with_evals, "--limit", "2").output
    assert "2 of 5 run(s)" in out and "older ones: --before " in out
    none = invoke("runs", "list", "--store", store_with_evals, "--eval", "e-nothing").output
    assert "no runs in" in none and "matching eval e-nothing" in none


def test_runs_show_prints_every_request_with_its_messages(store_with_evals):
    db = store_with_evals
    out = invoke("runs", "show", "e-steady-C4-PA-02", "--store", db).output
    t = load_run(SQLiteStore(db), "e-steady-C4-PA-02")
    requests = t.requests()
    assert requests and out.count("· agent · model") == len(requests)
    flat = squash(out)
    assert squash(t.user_messages()[0].content) in flat          # the user's message
    for i, (event, messages) in enumerate(requests, start=1):
        assert f"request{i}·agent" in flat
        for m in messages:                                        # every message of every request, prompts included
            assert squash(m.content) in flat
    assert len(messages) > 2 and squash(messages[0].content) in flat      # the system prompt
    assert "eval e-steady trial 0" in out and "usage · agent:" in out and "run_finished" in out


def test_runs_show_new_only_and_unknown_run(store_with_evals):
    db = store_with_evals
    out = invoke("runs", "show", "e-steady-C4-PA-02", "--messages", "new", "--store", db).output
    assert "message(s) as in the previous agent request" in out
    res = invoke("runs", "show", "nope", "--store", db)
    assert res.exit_code == 2 and "no run 'nope'" in res.output


def test_export_import_round_trip_keeps_the_digest(store_with_evals, tmp_path):
    db, other = store_with_evals, str(tmp_path / "other.db")
    exported = runner.invoke(app, ["runs", "export", "e-stubborn-C4-LD-01", "--store", db])
    assert exported.exit_code == 0 and exported.stdout.startswith('{"seq": 0')
    imported = runner.invoke(app, ["runs", "import", "-", "--store", other], input=exported.stdout)
    assert imported.exit_code == 0, imported.output
    original = SQLiteStore(db).get_run("e-stubborn-C4-LD-01")
    copy = SQLiteStore(other).get_run("e-stubborn-C4-LD-01")
    assert f"imported: run e-stubborn-C4-LD-01 · digest {original['digest']}" in imported.output
    assert copy["digest"] == original["digest"] and copy["eval_id"] == "e-stubborn" and copy["kind"] == "eval"
    assert SQLiteStore(other).events("e-stubborn-C4-LD-01") == SQLiteStore(db).events("e-stubborn-C4-LD-01")
    again = runner.invoke(app, ["runs", "import", "-", "--store", other], input=exported.stdout)
    assert again.exit_code == 0 and "already there (same digest)" in again.output


def test_export_piped_into_import_in_a_shell(store_with_evals, tmp_path):
    """The documented pipe, as a user types it."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    other = tmp_path / "piped.db"
    cli = f"{sys.executable} -m tether.cli"
    done = subprocess.run(f"{cli} runs export cli-1 --store {store_with_evals} | {cli} runs import - --store {other}",
                          shell=True, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    digest = SQLiteStore(store_with_evals).get_run("cli-1")["digest"]
    assert f"run cli-1 · digest {digest}" in done.stdout and SQLiteStore(other).get_run("cli-1")["digest"] == digest


def test_import_refuses_what_is_not_a_run(store_with_evals, tmp_path):
    db = store_with_evals
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    res = invoke("runs", "import", str(empty), "--store", db)
    assert res.exit_code == 2 and "empty: not a trace" in res.output
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"format": "tether.results", "version": 1, "runs": [{"cases": []}] * 50},
                                  indent=2), encoding="utf-8")
    res = invoke("runs", "import", str(results), "--store", db)
    assert res.exit_code == 2 and "a results document (tether.results), not a trace" in res.output
    assert len(res.output.strip().splitlines()) <= 3                     # one error, not one per line
    tampered = [json.loads(line) for line in invoke("runs", "export", "cli-1", "--store", db).stdout.splitlines()]
    tampered[-1]["reply"] = "something else"
    path = tmp_path / "tampered.jsonl"
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in tampered), encoding="utf-8")
    res = invoke("runs", "import", str(path), "--store", db)
    assert res.exit_code == 2 and "already in" in res.output and "never overwritten" in res.output
    assert invoke("runs", "import", str(tmp_path / "missing.jsonl"), "--store", db).exit_code == 2


def test_runs_show_and_guard_check_a_version_1_run(tmp_path):
    lines = [
        {"type": "run_started", "version": 1, "run_id": "v1", "model": "legacy", "tools": ["search"], "seq": 0},
        {"type": "user_message", "content": "找鞋", "seq": 1},
        {"type": "model_request", "step": 1, "message_count": 2, "tools": ["search"], "request_hash": "h", "seq": 2},
        {"type": "model_decision", "step": 1, "kind": "final", "text": "没有", "seq": 3},
        {"type": "run_finished", "status": "completed", "reply": "没有", "steps": 1, "seq": 4},
    ]
    trace = tmp_path / "v1.jsonl"
    trace.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in lines), encoding="utf-8")
    db = str(tmp_path / "t.db")
    assert invoke("runs", "import", str(trace), "--store", db).exit_code == 0
    out = invoke("runs", "show", "v1", "--store", db).output
    assert "trace v1" in out and "messages not recorded: a version 1 trace" in out and "找鞋" in out
    assert invoke("guard-check", "v1", "--store", db).exit_code == 0


def test_the_commands_in_docs_durable_run_as_written(tmp_path, monkeypatch):
    """Every command of docs/durable.md's block, in an empty folder, in order, with the exit code its comment says."""
    import shlex

    doc = (Path(__file__).resolve().parents[2] / "docs" / "durable.md").read_text(encoding="utf-8")
    block = doc.split("## The commands", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TETHER_STORE", raising=False)
    for line in filter(None, block.splitlines()):
        command, _, comment = line.partition("#")
        expected = int(comment.split("exit ")[1].split(":")[0]) if "exit " in comment else 0
        stdin = None
        for i, part in enumerate(command.split(" | ")):
            part, _, target = part.partition(" > ")
            args = shlex.split(part)
            assert args[0] == "tether", line
            res = runner.invoke(app, args[1:], input=stdin)
            stdin = res.stdout
            if target:
                Path(target.strip()).write_text(res.stdout, encoding="utf-8")
        assert res.exit_code == expected, f"{line}\n{res.output}"
    assert {r["run_id"] for r in SQLiteStore("other.db").list_runs()} == {"loop-1", "pa-1"}


def test_runs_approvals_lists_what_waits_for_a_person(tmp_path):
    import json

    db = str(tmp_path / "t.db")
    invoke("run", "C4-PA-02", "--approve", "zhihu_*", "--run-id", "wait-1", "--store", db)
    invoke("run", "C4-PA-01", "--approve", "taobao_*", "--run-id", "wait-2", "--store", db)
    invoke("approve", "wait-2", "--reject", "--approver", "deny", "--store", db)
    doc = json.loads(runner.invoke(app, ["runs", "approvals", "--store", db, "--format", "json"],
                                   catch_exceptions=False).stdout)
    (row,) = doc["rows"]
    assert row["run"] == "wait-1" and row["status"] == "pending" and row["tool"].startswith("zhihu_")
    assert isinstance(row["arguments"], dict)
    every = json.loads(runner.invoke(app, ["runs", "approvals", "--store", db, "--status", "all", "--format", "json"],
                                     catch_exceptions=False).stdout)
    assert {r["run"] for r in every["rows"]} == {"wait-1", "wait-2"}
    plain = runner.invoke(app, ["runs", "approvals", "--store", db, "--status", "all"], env={"COLUMNS": "40"},
                          catch_exceptions=False).stdout.splitlines()
    assert plain[0].startswith("approval\trun\ttool") and len(plain) == 1 + len(every["rows"])
    assert {line.split("\t")[1] for line in plain[1:]} == {"wait-1", "wait-2"}
    assert '{"' in plain[1] and "{'" not in plain[1]                    # arguments as JSON
    assert invoke("runs", "approvals", "--store", db, "--status", "nope").exit_code == 2


def test_runs_approvals_refuses_a_run_that_is_not_an_id(tmp_path):
    res = CliRunner().invoke(app, ["runs", "approvals", "--run", "../x", "--store", str(tmp_path / "s.db")])
    assert res.exit_code == 2 and "not a valid id" in res.output and "Traceback" not in res.output


def test_an_integer_past_64_bits_in_an_imported_trace_is_refused_with_its_line(tmp_path):
    """Python reads any integer; the store's encoder (orjson) does not: it was an internal error (70)."""
    import json

    db = str(tmp_path / "t.db")
    invoke("run", "C4-LD-01", "--run-id", "big", "--store", db)
    res = invoke("runs", "export", "big", "--store", db)
    lines = res.output.splitlines()
    event = json.loads(lines[2])
    event["seq"] = -10 ** 30
    lines[2] = json.dumps(event, ensure_ascii=False)
    trace = tmp_path / "big.jsonl"
    trace.write_text("\n".join(lines).replace('"run_id": "big"', '"run_id": "big2"') + "\n", encoding="utf-8")
    res = runner.invoke(app, ["runs", "import", str(trace), "--store", str(tmp_path / "other.db")],
                        env={"TETHER_DEBUG": ""})
    assert res.exit_code == 2, res.output
    assert f"{trace}:3: not valid JSON: the integer -1000" in res.output and "64-bit" in res.output, res.output
