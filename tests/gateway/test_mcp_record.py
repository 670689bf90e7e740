"""The MCP gateway's record while another process holds the store's write lock:
calls are answered while it is held, and once it frees every call's events
land, in order, before the gateway exits (the client gone, or SIGTERM).

A real ``tether guard mcp`` process in front of the real MCP server of
tests/gateway/mcp_servers.py, a lean newline-JSON client, and a second process
holding the lock (SQLite ``BEGIN EXCLUSIVE``; PostgreSQL ``LOCK TABLE``) until
the test tells it to let go. Nothing here is timed: "answered while locked"
is that every answer came back before the locker was told to release.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys

import pytest

from tether.store import open_store

from .stores import drop_connections, lock, named, release, store_url  # noqa: F401 - the fixture
from .test_mcp_gateway import SERVERS, env

pytest.importorskip("mcp", reason="the server is the mcp package's: pip install 'tether[mcp]'")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM")

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "lock-test", "version": "1"}}


class Client:
    """A lean MCP client on the gateway's stdio (requests may overlap)."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future] = {}
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = json.loads(line)
            fut = self.waiting.pop(message.get("id"), None)
            if fut is not None:
                fut.set_result(message)

    async def request(self, method: str, params: dict | None = None) -> dict:
        assert self.proc.stdin is not None
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = fut
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                          "params": params or {}}).encode() + b"\n")
        await self.proc.stdin.drain()
        return await asyncio.wait_for(fut, 120)     # a generous bound: a hang fails, it is not a timing

    async def call(self, name: str, arguments: dict | None = None) -> str:
        answer = await self.request("tools/call", {"name": name, "arguments": arguments or {}})
        assert "result" in answer, answer
        return "\n".join(c["text"] for c in answer["result"]["content"] if c["type"] == "text")


async def start(store: str, *options: str) -> tuple[asyncio.subprocess.Process, Client]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tether.cli", "guard", "mcp", "--store", store, "--run-id", "gw",
        *(options or ("--idle", "600")), "--", sys.executable, str(SERVERS), "tools",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env())
    client = Client(proc)
    await client.request("initialize", INIT)
    assert proc.stdin is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    await client.request("tools/list")
    return proc, client


async def calls_while_locked(store: str) -> tuple[asyncio.subprocess.Process, subprocess.Popen, list[str]]:
    """Open the window, lock the store, then 8 calls one after the other and 4 at once: every
    answer comes back while the lock is still held."""
    proc, client = await start(store)
    answers = [await client.call("get_time")]
    locker = lock(store)
    answers += [await client.call("get_time") for _ in range(8)]
    answers += await asyncio.gather(*(client.call("slow", {"n": i}) for i in range(4)))
    answers.append(await client.call("fetch_report", {"report_id": "r-1"}))
    assert locker.poll() is None            # all 14 answered while the other process held the lock
    return proc, locker, answers


async def ended(proc: asyncio.subprocess.Process) -> bytes:
    """The gateway's exit (0) and what it wrote on stderr."""
    assert proc.stderr is not None
    err = await asyncio.wait_for(proc.stderr.read(), 120)
    assert await asyncio.wait_for(proc.wait(), 120) == 0, err.decode()
    return err


def check_record(store: str, answers: list[str], reason: str) -> None:
    db = open_store(store)
    run = db.get_run("gw-w1")
    events = db.events("gw-w1")
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_finished"
    assert run["status"] == "ended" and events[-1]["status"] == "ended"
    assert run["reason"] == events[-1]["reason"] == reason
    calls = [e for e in events if e["type"] == "tool_call"]
    results = [e for e in events if e["type"] == "tool_result"]
    ids = [f"mcp_{n}" for n in range(1, len(answers) + 1)]
    assert [c["call_id"] for c in calls] == ids                       # every call, in the order made
    assert sorted(r["call_id"] for r in results) == sorted(ids)       # every result
    position = {e["call_id"] + e["type"]: i for i, e in enumerate(events) if "call_id" in e}
    assert all(position[i + "tool_call"] < position[i + "tool_result"] for i in ids)
    by_id = {r["call_id"]: r for r in results}
    kept = {i: r["data"]["result"] for i, r in by_id.items() if r["ok"]}     # the tools' structured results
    assert [kept[i] for i in ids[:9]] == answers[:9]                  # what the client got is what is kept
    assert sorted(kept[i] for i in ids[9:13]) == sorted(answers[9:13])
    assert not by_id[ids[13]]["ok"] and "access denied" in by_id[ids[13]]["error"]


@pytest.mark.slow        # a gateway, an MCP server and a lock holder in subprocesses
async def test_calls_flow_while_the_store_is_locked_and_land_when_it_frees(store_url):  # noqa: F811
    proc, locker, answers = await calls_while_locked(store_url)
    release(locker)
    assert proc.stdin is not None
    proc.stdin.close()                      # the client leaves: the window ends, its record is written out
    err = await ended(proc)
    assert b"to the store failed" not in err and b"writing the record failed" not in err and b"Traceback" not in err
    check_record(store_url, answers, "the MCP client disconnected")


@pytest.mark.slow        # a gateway, an MCP server and a lock holder in subprocesses
async def test_sigterm_with_the_store_still_locked_writes_everything_once_it_frees(store_url):  # noqa: F811
    proc, locker, answers = await calls_while_locked(store_url)
    proc.send_signal(signal.SIGTERM)        # the writes are still queued behind the lock
    release(locker)
    err = await ended(proc)
    assert b"to the store failed" not in err and b"writing the record failed" not in err and b"Traceback" not in err
    check_record(store_url, answers, "the gateway was terminated (SIGTERM)")


@pytest.mark.slow        # a gateway and an MCP server in subprocesses
@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)      # a SQLite store has no connection to lose
async def test_a_lost_postgresql_connection_is_made_again_and_nothing_queued_is_lost(store_url):  # noqa: F811
    """The server drops the gateway's store connection (as a restart would): calls go on, the
    writer connects again, every call's events land."""
    gateway_url, name = named(store_url)      # only the gateway's own connection is dropped
    proc, client = await start(gateway_url)
    answers = [await client.call("get_time") for _ in range(3)]
    assert drop_connections(name) >= 1
    answers += [await client.call("get_time") for _ in range(6)]
    answers += await asyncio.gather(*(client.call("slow", {"n": i}) for i in range(4)))
    answers.append(await client.call("fetch_report", {"report_id": "r-1"}))
    assert proc.stdin is not None
    proc.stdin.close()
    err = await ended(proc)
    assert b"to the store failed" not in err and b"writing the record failed" not in err, err.decode()
    check_record(store_url, answers, "the MCP client disconnected")
