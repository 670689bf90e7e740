"""``tether eval c4 --agent <a production example>``: the agent runs unchanged (its
own instructions and tools, the case's tools beside them), over real HTTP to a
loopback OpenAI-compatible server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.evals.runner import REFERENCE_SYSTEM_PROMPT
from tether.store import SQLiteStore
from tether.testing.fake_openai import FakeOpenAIServer

from .conftest import reset_agents_sdk

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "production"
NEEDS = {"pydantic_ai": "pydantic_ai", "langchain": "langchain_openai", "openai_agents": "agents"}
OWN = "You are Acme's order-support agent."


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-EVAL-KEY-1234")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("_tether_user_")]:
        del sys.modules[name]      # the example's client read this test's OPENAI_BASE_URL at import
    reset_agents_sdk()


def _eval(name: str, store: Path, *extra: str):
    pytest.importorskip(NEEDS[name])
    return CliRunner().invoke(app, ["eval", "c4", "--agent", str(EXAMPLES / f"{name}_guarded.py"), "--case", "C4-LD-01",
                                    "--store", str(store), "-q", "--max-errors", "1", *extra], catch_exceptions=False)


def _first_request(store: Path) -> tuple[dict, dict]:
    db = SQLiteStore(store)
    [run] = db.list_runs()
    events = db.events(run["run_id"])
    return run, next(e for e in events if e["type"] == "model_request")


@pytest.mark.parametrize("name", list(NEEDS))
def test_the_agent_keeps_its_own_instructions_and_tools(name, env, monkeypatch):
    with FakeOpenAIServer(responder=lambda r: "I checked what I could.") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result = _eval(name, env / "a.db")
        assert result.exit_code == 0, result.output
        first = server.requests[0]
    system = [m for m in first.messages if m["role"] == "system"]
    assert len(system) == 1 and system[0]["content"].startswith(OWN)      # its own, once; no second prompt
    assert {"order_status", "refund_policy", "search_flights", "web_search"} <= set(first.tool_names)
    run, request = _first_request(env / "a.db")
    assert run["status"] == "completed"
    assert request["messages"][0]["role"] == "system" and request["messages"][0]["content"].startswith(OWN)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(NEEDS))
def test_system_prompt_case_uses_the_cases_reference_prompt(name, env, monkeypatch):
    with FakeOpenAIServer(responder=lambda r: "I checked what I could.") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert _eval(name, env / "b.db", "--system-prompt", "case").exit_code == 0
        system = [m["content"] for m in server.requests[0].messages if m["role"] == "system"]
    assert system == [REFERENCE_SYSTEM_PROMPT]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(NEEDS))
def test_a_provider_failure_is_infrastructure(name, env, monkeypatch):
    with FakeOpenAIServer() as server:
        for _ in range(6):
            server.add_server_error(503)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
        result = _eval(name, env / "c.db")
    run, _ = _first_request(env / "c.db")
    assert run["status"] == "error" and run["error_kind"] == "infrastructure", result.output
