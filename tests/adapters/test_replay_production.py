"""Record a framework agent's run over real HTTP (a loopback OpenAI-compatible
server), then replay it offline (CI=1) through the same framework; a changed
tool argument fails as ReplayMismatch.ToolArguments naming the step."""

from __future__ import annotations

import json
import runpy

import pytest

from tether.adapters.replay import cassette
from tether.messages import Decision, ToolCallRequest
from tether.replay import ToolArgumentsMismatch
from tether.testing.fake_openai import FakeOpenAIServer

from .conftest import reset_agents_sdk

from .test_production import EXAMPLES, FRAMEWORKS, QUESTION

FINAL = "A100: I could not look it up (the orders database failed); refunds are possible within 30 days."


def _script(server: FakeOpenAIServer) -> None:
    server.add_decision(Decision(kind="tool_calls", tool_calls=[ToolCallRequest(id="c1", name="refund_policy",
                                                                                arguments={})]))
    server.add_decision(Decision(kind="tool_calls", tool_calls=[
        ToolCallRequest(id="c2", name="order_status", arguments={"order_id": "A100"})]))
    server.add_text(FINAL)


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-REPLAY-KEY-5555")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    reset_agents_sdk()


def _agent(name: str, base_url: str, monkeypatch) -> dict:
    pytest.importorskip(FRAMEWORKS[name][0])
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    return runpy.run_path(str(EXAMPLES / f"{name}_guarded.py"))


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_record_then_replay_offline_through_the_framework(name, env, monkeypatch):
    tape = env / "cassettes" / f"{name}.json"
    tape.parent.mkdir()
    with FakeOpenAIServer() as server:
        _script(server)
        ns = _agent(name, server.base_url, monkeypatch)
        with cassette(tape):
            assert FRAMEWORKS[name][1](ns) == FINAL
        server.assert_exhausted()
    text = tape.read_text(encoding="utf-8")
    assert "sk-test-REPLAY-KEY-5555" not in text and "order_status" in text

    # offline: no server, CI=1 (replay only); the framework runs its own loop on the recording
    monkeypatch.setenv("CI", "1")
    ns = _agent(name, "http://127.0.0.1:9/v1", monkeypatch)      # nothing listens there
    with cassette(tape):
        assert FRAMEWORKS[name][1](ns) == FINAL

    # the recording says the agent called order_status with another argument
    doc = json.loads(text)
    calls = [e for e in doc["events"] if e["type"] == "tool_call" and e["tool"] == "order_status"]
    calls[0]["arguments"]["order_id"] = "A101"
    tape.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    ns = _agent(name, "http://127.0.0.1:9/v1", monkeypatch)
    with pytest.raises(ToolArgumentsMismatch) as info:
        with cassette(tape):
            FRAMEWORKS[name][1](ns)
    assert info.value.step == calls[0]["step"] and "ReplayMismatch.ToolArguments at step" in str(info.value)
    assert "A101" in str(info.value) and "A100" in str(info.value)


@pytest.mark.filterwarnings("ignore::ResourceWarning")   # pydantic-ai's run_sync, failing, leaves a generator behind
def test_a_missing_cassette_under_ci_names_the_file(env, monkeypatch):
    from tether.replay import CassetteNotFound

    monkeypatch.setenv("CI", "1")
    ns = _agent("pydantic_ai", "http://127.0.0.1:9/v1", monkeypatch)
    with pytest.raises(CassetteNotFound, match="nowhere.json"):
        with cassette(env / "nowhere.json"):
            ns["agent"].run_sync(QUESTION)
