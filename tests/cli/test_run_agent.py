"""`tether run CASE --agent REF`: one case with the user's own agent (here an
ordinary pydantic-ai agent, examples/agents/pydantic_ai_agent.py), and `--model-arg`
for a provider model over real HTTP; `tether approve RUN --agent REF` continues a
paused run of that agent (a record names code, so its agent is never loaded
unasked)."""

import shutil
from pathlib import Path

from typer.testing import CliRunner

from tether.cli import app
from tether.models import allow_model_requests
from tether.store import SQLiteStore
from tether.store.export import load_run
from tether.testing.fake_openai import FakeOpenAIServer

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agents" / "pydantic_ai_agent.py"


def _agent(tmp_path, monkeypatch) -> str:
    shutil.copy(EXAMPLE, tmp_path / "my_agent.py")
    monkeypatch.chdir(tmp_path)
    return "my_agent.py:build"


def test_run_takes_the_users_agent_unchanged(tmp_path, monkeypatch):
    ref = _agent(tmp_path, monkeypatch)
    res = runner.invoke(app, ["run", "C4-PA-01", "--agent", ref, "--store", "t.db"])
    assert res.exit_code == 0, res.output
    assert "status completed" in res.output
    (run,) = SQLiteStore(tmp_path / "t.db").list_runs(10)
    assert run["model"] == "pydantic-ai:steady"                 # the agent's own name
    cli = run["meta"]["cli"]
    assert cli["model"] is None and cli["agent"] == f"{tmp_path / 'my_agent.py'}:build"   # resolvable from anywhere


def test_an_agent_and_a_model_at_once_is_refused(tmp_path, monkeypatch):
    ref = _agent(tmp_path, monkeypatch)
    res = runner.invoke(app, ["run", "C4-PA-01", "--agent", ref, "--model", "policy:steady", "--store", "t.db"])
    assert res.exit_code == 2 and "drop --model" in " ".join(res.output.split()), res.output
    assert not (tmp_path / "t.db").exists()


def test_a_paused_agent_run_is_approved_and_continued_with_the_agent_named(tmp_path, monkeypatch):
    ref = _agent(tmp_path, monkeypatch)
    res = runner.invoke(app, ["run", "C4-LD-01", "--agent", ref, "--approve", "search_*", "--store", "t.db"])
    # paused for a human (the framework's complaint about the held call is a note, not the ending)
    assert res.exit_code == 3, res.output
    assert "status needs_human" in res.output and "tether approve" in res.output
    db = SQLiteStore(tmp_path / "t.db")
    (run,) = db.list_runs(10)
    rid = run["run_id"]
    (pending,) = db.approvals(rid, "pending")

    unasked = runner.invoke(app, ["approve", rid, "--store", "t.db"])       # the record's agent is code
    assert unasked.exit_code == 2 and "[meta.cli.agent]" in unasked.output, unasked.output
    assert db.get_approval(pending["id"])["status"] == "pending"             # nothing decided

    wrong = runner.invoke(app, ["approve", rid, "--store", "t.db", "--model", "policy:steady"])
    assert wrong.exit_code == 2 and "--model" in wrong.output

    done = runner.invoke(app, ["approve", rid, "--store", "t.db", "--agent", ref, "--by", "ana"])
    assert done.exit_code in (0, 3), done.output
    decided = db.get_approval(pending["id"])
    assert decided["status"] == "consumed" and decided["decided_by"] == "ana"      # approved, then used once
    t = load_run(db, rid)
    actions = [(e.action, e.approval_id) for e in t if type(e).__name__ == "ApprovalEvent"]
    assert ("consumed", pending["id"]) in actions                           # the approved call ran, once


def test_model_args_reach_a_provider_model_on_the_wire(tmp_path):
    def answer(req):
        return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "好的。"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}

    with FakeOpenAIServer(responder=answer) as server, allow_model_requests():
        res = runner.invoke(app, ["run", "C4-PA-01", "--model", server.spec(), "--model-arg", "max_tokens=64",
                                  "--model-arg", "temperature=0", "--store", str(tmp_path / "t.db")])
        assert res.exit_code == 0, res.output
        body = server.requests[0].body
    assert (body["max_tokens"], body["temperature"]) == (64, 0.0)
    (run,) = SQLiteStore(tmp_path / "t.db").list_runs(10)
    assert run["meta"]["cli"]["model_args"] == {"max_tokens": 64, "temperature": 0}


def test_a_policy_model_takes_no_model_args(tmp_path):
    res = runner.invoke(app, ["run", "C4-PA-01", "--model-arg", "max_tokens=5", "--store", str(tmp_path / "t.db")])
    assert res.exit_code == 2 and "--model-arg" in res.output, res.output


def test_an_agent_factory_that_raises_is_the_users_error_not_an_internal_one(tmp_path, monkeypatch):
    (tmp_path / "broken_agent.py").write_text("def build():\n    raise RuntimeError('OPENAI_API_KEY is not set')\n",
                                              encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for argv in (["run", "C4-LD-01"], ["eval", "c4", "-c", "C4-LD-01", "-q"]):
        res = runner.invoke(app, [*argv, "--agent", "broken_agent.py:build", "--store", "t.db"])
        assert res.exit_code == 2, res.output
        assert "broken_agent.py:build" in res.output and "OPENAI_API_KEY is not set" in res.output, res.output
        assert "internal error" not in res.output
