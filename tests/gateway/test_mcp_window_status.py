"""How an MCP gateway window ends, end to end through the CLI: a window closed by
an idle gap or by the client leaving ends ``ended`` (the gateway never sees a
final answer), never ``completed``; ``tether runs list``, ``tether stats`` and
``tether view`` count it as a run with no outcome, never as a success."""

from __future__ import annotations

import asyncio
import json
import sys
import threading

import httpx
import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.store import open_store

from .test_mcp_record import ended, start

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a gateway process on stdio")
runner = CliRunner()


def cli(*args: str) -> str:
    out = runner.invoke(app, list(args), catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.output


async def three_windows(db: str) -> None:
    """w1: two calls then an idle gap; w2: stopped by the loop guard; w3: one call, then the client leaves."""
    proc, client = await start(db, "--idle", "0.3")
    assert [await client.call("get_time") for _ in range(2)]
    await asyncio.sleep(0.6)                                               # an idle gap: w1 ends
    for _ in range(4):                                                     # w2: stopped by the loop guard
        last = await client.call("fetch_report", {"report_id": "r-7"})
    assert "tether stopped this window" in last
    await asyncio.sleep(0.6)
    await client.call("get_time")                                          # w3, then the client leaves
    assert proc.stdin is not None
    proc.stdin.close()
    await ended(proc)


async def pages(db: str) -> tuple[str, str]:
    """``tether view``'s index and the page of gw-w1, over loopback HTTP."""
    from tether.report.html.server import make_server

    server = make_server(open_store(db, read_only=True), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        async with httpx.AsyncClient(timeout=30) as http:
            return (await http.get(f"{url}/")).text, (await http.get(f"{url}/run/gw-w1")).text
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow        # a gateway and an MCP server in subprocesses, idle gaps
def test_idle_and_disconnected_windows_end_ended_and_never_count_as_success(tmp_path):
    db = str(tmp_path / "runs.db")
    cli("run", "C4-LD-01", "--model", "policy:steady", "--store", db)      # one run that did complete
    asyncio.run(three_windows(db))
    store = open_store(db)
    w1, w2, w3 = (store.get_run(f"gw-w{n}") for n in (1, 2, 3))
    assert (w1["status"], w2["status"], w3["status"]) == ("ended", "loop_aborted", "ended")
    assert w1["reason"].startswith("idle for ") and "after 2 call(s)" in w1["reason"]
    assert w3["reason"] == "the MCP client disconnected"
    last = store.events("gw-w1")[-1]
    assert (last["type"], last["status"]) == ("run_finished", "ended")

    listed = json.loads(cli("runs", "list", "--store", db, "--kind", "mcp", "--status", "ended", "--format", "json"))
    assert sorted(r["run"] for r in listed["rows"]) == ["gw-w1", "gw-w3"]
    assert not json.loads(cli("runs", "list", "--store", db, "--kind", "mcp", "--status", "completed",
                              "--format", "json"))["rows"]

    mcp = json.loads(cli("stats", "--store", db, "--kind", "mcp", "--json"))
    assert mcp["runs"] == 3 and mcp["errors"] == 0
    assert mcp["statuses"] == {"ended": 2, "loop_aborted": 1}
    assert mcp["completion_rate"] == 0.0                # of the one window with an outcome (the stop)
    assert mcp["loop_trigger_rate"] == round(1 / 3, 4)  # the windows are runs for every other number
    every = json.loads(cli("stats", "--store", db, "--json"))
    # the completed run and the stopped window have an outcome; the two ended windows have none
    assert every["runs"] == 4 and every["completion_rate"] == 0.5

    index, page = asyncio.run(pages(db))
    assert "<b>50%</b><span>completion rate</span>" in index
    assert index.count("<td>ended</td>") == 2 and index.count("<td>loop_aborted</td>") == 1
    assert index.count("<td>completed</td>") == 1
    assert 'status <b class="status">ended</b>' in page and "finished · ended" in page
