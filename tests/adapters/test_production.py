"""The production line of each framework, on the agents in examples/production/:
an agent written as a user writes it (its own instructions and tools, one of
which always fails, the official openai client reading OPENAI_BASE_URL /
OPENAI_API_KEY), against a loopback OpenAI-compatible server whose model keeps
asking for the same call of the failing tool."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.store import SQLiteStore
from tether.testing.fake_openai import FakeOpenAIServer, insisting

from .conftest import reset_agents_sdk

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "production"
QUESTION = "Where is my order A100?"
FINAL = "Sorry: the orders database is down, I cannot look A100 up now."


def _pydantic_ai(ns: dict) -> str:
    return str(ns["agent"].run_sync(QUESTION).output)


def _langchain(ns: dict) -> str:
    # LangGraph's own limit, set small (its default is 10007 steps)
    state = ns["agent"].invoke({"messages": [{"role": "user", "content": QUESTION}]}, {"recursion_limit": 25})
    return state["messages"][-1].content


def _openai_agents(ns: dict) -> str:
    from agents import Runner

    return str(Runner.run_sync(ns["agent"], QUESTION).final_output)


FRAMEWORKS = {
    "pydantic_ai": ("pydantic_ai", _pydantic_ai, "exceeded max retries"),
    "langchain": ("langchain_openai", _langchain, "Recursion limit"),
    "openai_agents": ("agents", _openai_agents, "Max turns"),
}


@pytest.fixture
def server(monkeypatch, tmp_path):
    with FakeOpenAIServer(responder=insisting("order_status", {"order_id": "A100"}, final=FINAL)) as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-PRODUCTION-KEY-9876")
        monkeypatch.setenv("TETHER_STORE", str(tmp_path / "tether.db"))
        monkeypatch.setenv("COLUMNS", "200")
        monkeypatch.chdir(tmp_path)
        yield s
    reset_agents_sdk()


def _load(name: str, tmp_path: Path, *, guarded: bool = True) -> dict:
    module, _, _ = FRAMEWORKS[name]
    pytest.importorskip(module)
    source = (EXAMPLES / f"{name}_guarded.py").read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    tether_lines = [line for line in lines if line.rstrip().endswith("# tether")]
    assert len(tether_lines) == 1, "the example carries exactly one tether line"
    if not guarded:
        source = "".join(line for line in lines if line not in tether_lines)
    path = tmp_path / f"{name}_agent.py"
    path.write_text(source, encoding="utf-8")
    return runpy.run_path(str(path))


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_the_tether_line_stops_the_loop_and_records_the_run(name, server, tmp_path):
    ns = _load(name, tmp_path)
    reply = FRAMEWORKS[name][1](ns)
    assert reply == FINAL                          # the finish-up answer ends the framework's run
    assert len(server.requests) <= 5
    assert server.requests[-1].tool_names == []    # the finish-up request offers no tools
    assert "Acme's order-support agent" in server.requests[0].messages[0]["content"]   # its own instructions

    store = SQLiteStore(tmp_path / "tether.db")
    [run] = store.list_runs()
    assert run["status"] == "loop_aborted"
    cli = CliRunner()
    listed = cli.invoke(app, ["runs", "list"], catch_exceptions=False)
    assert run["run_id"] in listed.output and "loop_aborted" in listed.output
    shown = cli.invoke(app, ["runs", "show", run["run_id"]], catch_exceptions=False)
    assert shown.exit_code == 0
    assert "order_status" in shown.output and "orders database rejected the query" in shown.output
    assert "guard loop.identical" in shown.output
    assert "sk-test-PRODUCTION-KEY-9876" not in shown.output
    events = store.events(run["run_id"])
    kinds = [e["type"] for e in events]
    assert kinds.count("tool_call") >= 3 and "guard_tripped" in kinds and kinds[-1] == "run_finished"
    results = [e for e in events if e["type"] == "tool_result"]
    assert results[0]["ok"] is False and results[0]["source"] == "tool"    # its own tool ran, and failed


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::ResourceWarning")   # pydantic-ai's run_sync, failing, leaves a generator behind
@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_without_the_tether_line_it_runs_to_the_frameworks_own_limit(name, server, tmp_path):
    ns = _load(name, tmp_path, guarded=False)
    with pytest.raises(Exception) as info:
        FRAMEWORKS[name][1](ns)
    assert FRAMEWORKS[name][2] in str(info.value)
    assert len(server.requests) > 5
    assert not (tmp_path / "tether.db").exists()


async def test_async_runs_are_guarded_too(server, tmp_path):
    ns = _load("langchain", tmp_path)
    state = await ns["agent"].ainvoke({"messages": [{"role": "user", "content": QUESTION}]})
    assert state["messages"][-1].content == FINAL and len(server.requests) <= 5
    ns = _load("pydantic_ai", tmp_path)
    assert (await ns["agent"].run(QUESTION)).output == FINAL
    [first, second] = SQLiteStore(tmp_path / "tether.db").list_runs()
    assert first["status"] == second["status"] == "loop_aborted"


async def test_the_mcp_servers_an_agents_sdk_agent_mounts_are_guarded(tmp_path, monkeypatch):
    """An MCP server (stdio, a real child process) mounted on an Agents SDK agent: its tool's calls
    go through the guards and the record like the agent's own function tools."""
    import sys

    pytest.importorskip("agents")
    pytest.importorskip("mcp")
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    from tether.adapters.openai_agents import guard_runs

    set_tracing_disabled(True)
    flaky = Path(__file__).with_name("mcp_flaky_server.py")
    with FakeOpenAIServer(responder=insisting("fetch_report", {"report_id": "r1"}, final=FINAL)) as server:
        try:
            async with MCPServerStdio(params={"command": sys.executable, "args": [str(flaky)]}) as mcp:
                client = AsyncOpenAI(base_url=server.base_url, api_key="sk-test-MCP", max_retries=0)
                agent = Agent(name="reports", instructions="Fetch the reports asked for.", mcp_servers=[mcp],
                              model=OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client))
                guard_runs(store=tmp_path / "mcp.db")
                result = await Runner.run(agent, "Get report r1")
        finally:
            reset_agents_sdk()
        assert result.final_output == FINAL and len(server.requests) <= 5
    store = SQLiteStore(tmp_path / "mcp.db")
    [run] = store.list_runs()
    assert run["status"] == "loop_aborted"
    results = [e for e in store.events(run["run_id"]) if e["type"] == "tool_result" and e["tool"] == "fetch_report"]
    # the SDK hands an MCP tool's error (isError) to the model as the call's output: recorded as the output
    assert len(results) >= 3 and "access denied" in (results[0]["data"] or results[0]["error"])
