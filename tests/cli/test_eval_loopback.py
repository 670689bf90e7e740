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
def servers(monkeypatch):
    monkeypatch.setenv("OPENAI_COMPAT_API_KEY", SECRET)
    with FakeOpenAIServer(responder=agent) as a, FakeOpenAIServer(responder=make_judge()) as j:
        yield a, j


def test_eval_c4_with_a_compatible_server_and_judge(servers, tmp_path):
    agent_server, judge_server = servers
    out = tmp_path / "runs"
    with allow_model_requests():
        res = CliRunner().invoke(app, ["eval", "c4", "--model", agent_server.spec(), "--judge", judge_server.spec(),
                                       "--judge-samples", "2", "--out", str(out), "--json", str(tmp_path / "r.json"),
                                       "--concurrency", "4"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    [run] = doc["runs"]
    assert len(run["cases"]) == 16
    rubric = [(c["case_id"], cr) for c in run["cases"] for t in c["trials"] for cr in t["criteria"] if cr["kind"] == "judge"]
    assert rubric and all(cr["verdict"] in ("pass", "fail", "unclear") for _, cr in rubric)    # none left unjudged
    assert all(cr["judged_by"].startswith("llm:") for _, cr in rubric)
    ar = [cr for cid, cr in rubric if cid.startswith("C4-AR-")]
    assert ar and all(cr["verdict"] == "unclear" for cr in ar)             # disagreeing samples: reported, not merged
    assert all(cr["verdict"] == "pass" for cid, cr in rubric if not cid.startswith("C4-AR-"))
    # the agent really went through the adapter: tools were offered, web_search was called
    assert any("web_search" in r.tool_names for r in agent_server.requests)
    # no key anywhere: requests' stored headers, traces, results, CLI output
    texts = [p.read_text(encoding="utf-8") for p in out.rglob("*.jsonl")]
    texts += [(tmp_path / "r.json").read_text(encoding="utf-8"), res.output]
    assert texts and not any(SECRET in t for t in texts)
    assert agent_server.requests[0].has_credential(SECRET)                 # it was sent, to the server only
