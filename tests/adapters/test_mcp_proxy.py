"""``tether guard mcp`` in front of a small real MCP server, driven by the
``mcp`` package's own client over stdio."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="the MCP proxy needs the mcp package: pip install 'tether[mcp]'")

import tether  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from tether.store import SQLiteStore  # noqa: E402

SERVER = Path(__file__).with_name("mcp_flaky_server.py")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = str(Path(tether.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def _session(db: Path, *extra: str):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tether.cli", "guard", "mcp", "--store", str(db), "--run-id", "mcp-test", *extra, "--",
              sys.executable, str(SERVER)],
        env=_env())
    return stdio_client(params)


async def test_same_failing_call_is_told_to_stop_by_the_4th_call(tmp_path):
    db = tmp_path / "runs.db"
    async with await _session(db, "--guards", "on") as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            tools = await client.list_tools()
            assert sorted(t.name for t in tools.tools) == ["add", "fetch_report"]
            assert (await client.call_tool("add", {"a": 2, "b": 3})).is_error is False

            results = [await client.call_tool("fetch_report", {"report_id": "r-7"}) for _ in range(4)]
            after = await client.call_tool("add", {"a": 1, "b": 1})

    # 1st and 2nd: the server's own error; 3rd: still the server's error, plus the guard's hint
    for r in results[:3]:
        assert r.is_error and "access denied for this account" in _text(r)
    assert "[tether] 3rd identical call to fetch_report" in _text(results[2])
    # 4th: told to stop, the server is not called; every later call is refused
    assert results[3].is_error
    assert "tether stopped this session" in _text(results[3]) and "4th identical call" in _text(results[3])
    assert after.is_error and "tether stopped this session" in _text(after)

    store = SQLiteStore(db)
    run = store.get_run("mcp-test")
    assert run is not None and run["status"] == "loop_aborted"
    events = store.events("mcp-test")
    trips = [(e["guard"], e["verdict"]) for e in events if e["type"] == "guard_tripped"]
    assert trips == [("loop", "hint"), ("loop", "stop")]
    calls = [e["tool"] for e in events if e["type"] == "tool_call"]
    assert calls == ["add", "fetch_report", "fetch_report", "fetch_report", "fetch_report"]
    results_ev = [e for e in events if e["type"] == "tool_result"]
    assert results_ev[-1]["error_type"] == "guard_stopped" and results_ev[-1]["source"] == "guard"


async def test_guards_off_passes_everything_through_and_records_the_run(tmp_path):
    db = tmp_path / "runs.db"
    async with await _session(db, "--guards", "off") as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            results = [await client.call_tool("fetch_report", {"report_id": "r-7"}) for _ in range(5)]
            ok = await client.call_tool("add", {"a": 40, "b": 2})
    assert all(r.is_error and "access denied for this account" in _text(r) for r in results)
    assert not ok.is_error and "42" in _text(ok)
    run = SQLiteStore(db).get_run("mcp-test")
    assert run["status"] == "completed"
    assert sum(1 for e in SQLiteStore(db).events("mcp-test") if e["type"] == "tool_result") == 6


def test_runs_list_shows_the_proxy_run(tmp_path):
    """The run the proxy recorded is listed by `tether runs list`."""
    import anyio
    from typer.testing import CliRunner

    from tether.cli import app

    db = tmp_path / "runs.db"

    async def one_call() -> None:
        async with await _session(db, "--guards", "on") as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                await client.call_tool("add", {"a": 1, "b": 2})

    anyio.run(one_call)
    out = CliRunner().invoke(app, ["runs", "list", "--store", str(db)])
    assert out.exit_code == 0, out.output
    assert "mcp-test" in out.output and "mcp-client" in out.output
