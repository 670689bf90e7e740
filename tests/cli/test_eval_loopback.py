"""The C4 suite against an OpenAI-compatible server on loopback: the agent and the
judge are both served by the in-process fake server, over real HTTP."""

import hashlib
import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.messages import Decision
from tether.models import allow_model_requests
from tether.store import SQLiteStore
from tether.store.export import load_run
from tether.testing.fake_openai import FakeOpenAIServer

SECRET = "sk-test-LOOPBACK-MUST-NOT-LEAK-4242"


def agent(req):
    """Search the web once, then answer from what came back."""
    messages = req.messages
    user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    if not any(m["role"] == "tool" for m in messages):
        return Decision.call("web_search", {"query": user[:40] or "查询"})
    return Decision.final("根据网页搜索的结果，我整理了能找到的信息；工具没有返回的部分我没有编造。")


def make_judge():
    seen = Counter()

    def judge(req):
        prompt = json.dumps(req.messages, ensure_ascii=False)
        key = hashlib.sha256(prompt.encode()).hexdigest()
        seen[key] += 1
        # Samples of AR criteria disagree (pass, then fail); every other criterion passes twice.
        verdict = "fail" if ("C4-AR-" in prompt and seen[key] % 2 == 0) else "pass"
        return json.dumps({"verdict": verdict, "reason": f"sample {seen[key]}", "steps": [1]}, ensure_ascii=False)

    return judge


@pytest.fixture()
def servers(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_COMPAT_API_KEY", SECRET)
    monkeypatch.chdir(tmp_path)          # the judge cache (.tether-cache/) goes here, not into the repository
    with FakeOpenAIServer(responder=agent) as a, FakeOpenAIServer(responder=make_judge()) as j:
        yield a, j


# One case of each dimension by default (AR-01's criteria disagree, DR/LD/PA's agree); `-m slow`: all 16.
SOME = ["-c", "C4-AR-01", "-c", "C4-DR-01", "-c", "C4-LD-02", "-c", "C4-PA-02"]


@pytest.mark.parametrize("cases, count", [pytest.param(SOME, 4, id="one-per-dimension"),
                                          pytest.param([], 16, id="all", marks=pytest.mark.slow)])
def test_eval_c4_with_a_compatible_server_and_judge(servers, tmp_path, cases, count):
    agent_server, judge_server = servers
    out = tmp_path / "runs"
    with allow_model_requests():
        res = CliRunner().invoke(app, ["eval", "c4", *cases, "--model", agent_server.spec(), "--judge", judge_server.spec(),
                                       "--judge-samples", "2", "--out", str(out), "--json", str(tmp_path / "r.json"),
                                       "--store", str(tmp_path / "t.db"), "--concurrency", "4"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    [run] = doc["runs"]
    assert len(run["cases"]) == count
    rubric = [(c["case_id"], cr) for c in run["cases"] for t in c["trials"] for cr in t["criteria"] if cr["kind"] == "judge"]
    assert rubric and all(cr["verdict"] in ("pass", "fail", "unclear") for _, cr in rubric)    # none left unjudged
    assert all(cr["judged_by"].startswith("llm:") for _, cr in rubric)
    ar = [cr for cid, cr in rubric if cid.startswith("C4-AR-")]
    assert ar and all(cr["verdict"] == "unclear" for cr in ar)             # disagreeing samples: reported, not merged
    assert all(cr["verdict"] == "pass" for cid, cr in rubric if not cid.startswith("C4-AR-"))
    # the agent really went through the adapter: tools were offered, web_search was called
    assert any("web_search" in r.tool_names for r in agent_server.requests)
    # the judge's requests are events of the judged runs, after their end, role judge
    store = SQLiteStore(tmp_path / "t.db")
    ar01 = next(c for c in run["cases"] if c["case_id"] == "C4-AR-01")["trials"][0]
    t = load_run(store, ar01["run_id"])
    assert t.digest() == ar01["digest"] and t.requests(role="judge") and t.usage("judge").input_tokens > 0
    # no key anywhere: requests' stored headers, exported runs, the store, results, CLI output
    texts = [p.read_text(encoding="utf-8") for p in out.rglob("*.jsonl")]
    texts += [(tmp_path / "r.json").read_text(encoding="utf-8"), res.output]
    texts += [json.dumps(store.events(r["run_id"]), ensure_ascii=False) for r in store.list_runs(100)]
    assert texts and not any(SECRET in t for t in texts)
    assert agent_server.requests[0].has_credential(SECRET)                 # it was sent, to the server only


def test_an_unreachable_model_is_an_error_never_a_verdict(tmp_path):
    """Nothing listens on port 9: every trial ends in error (infrastructure), the
    results hold no pass or fail and no rate, and the exit code says so."""
    spec = "openai-compat:http://127.0.0.1:9/v1#none"
    args = ["eval", "c4", "--model", spec, "-c", "C4-LD-0[1-3]", "-c", "C4-AR-01", "--store", str(tmp_path / "t.db"),
            "--json", str(tmp_path / "c.json")]
    with allow_model_requests():
        res = CliRunner().invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 4, res.output
    assert "errors · " in res.output and "4 trial(s)" in res.output
    assert f"infrastructure: model '{spec}' unreachable: connection failed" in res.output
    text = (tmp_path / "c.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    [run] = doc["runs"]
    assert '"pass"' not in text and '"fail"' not in text
    assert all(c["verdict"] == "error" and c["pass_at_1"] is None and c["pass_hat_k"] is None for c in run["cases"])
    assert all(m["rate"] is None and m["auto_rate"] is None for m in run["dimensions"].values())
    assert run["failure_modes"] == {} and run["errors"] == 4
    assert {e["error_kind"] for e in run["error_trials"]} == {"infrastructure"}
    trial = run["cases"][0]["trials"][0]
    assert trial["criteria"] == [] and trial["attribution"] is None and trial["status"] == "error"
    assert "[2 attempts, 1 retry" in trial["error"]          # nobody listening: one retry, not four attempts
    with allow_model_requests():
        allowed = CliRunner().invoke(app, args + ["--max-errors", "4", "-q"], catch_exceptions=False)
    assert allowed.exit_code == 0, allowed.output


def test_exit_code_for_errors_is_documented():
    res = CliRunner().invoke(app, ["eval", "--help"])
    flat = " ".join(res.output.split())
    assert res.exit_code == 0 and "Exit codes: 0 done; 1 --fail-under not met; 2 usage error; 4 more trials" in flat
    assert "--max-errors" in flat
