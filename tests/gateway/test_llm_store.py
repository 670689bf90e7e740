"""The LLM gateway's record while another process holds the store's write lock
(for seconds, as `tether store vacuum` does) and after the server drops its PostgreSQL connection
(as a restart would): the gateway's writer tries again and connects again (the
MCP windows' path, :mod:`tether.gateway._writer`), so no record is lost and no
request fails; a response waits until its record is in.

A real ``tether gateway`` process in front of the loopback model API of
tests/gateway/llm_upstream.py, real HTTP, and a second process holding the lock
(SQLite ``BEGIN EXCLUSIVE``; PostgreSQL ``LOCK TABLE``).
"""

from __future__ import annotations

import concurrent.futures
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tether.store import open_store

from .stores import drop_connections, lock, named, release, store_url  # noqa: F401 - the fixture
from .test_llm_gateway import KEY, TOOLS, stats, upstream  # noqa: F401 - the fixture
from .test_mcp_gateway import env, free_port, wait_port

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM")

LOCKED_S = 10               # how long the lock is held while requests wait (SQLite itself would wait 10 minutes:
                            # the writer's retry past SQLite's own wait is tests/gateway/test_writer.py's)
FIRST = [{"role": "user", "content": "Fetch report r-7."}]


def start(upstream: str, store: str, tmp_path) -> tuple[subprocess.Popen, str, object]:  # noqa: F811
    port = free_port()
    err = (tmp_path / "gateway.err").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "tether.cli", "gateway", "--upstream", upstream, "--port",
                             str(port), "--store", store, "--guards", "on"], env=env(), stdout=subprocess.DEVNULL,
                            stderr=err)
    wait_port(port, proc)
    return proc, f"http://127.0.0.1:{port}/v1", err


def stop(proc: subprocess.Popen, err, tmp_path) -> str:
    """SIGTERM; the gateway's stderr (it shut down cleanly, nothing failed to be written)."""
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=120)
    err.close()
    text = (tmp_path / "gateway.err").read_text(encoding="utf-8", errors="replace")
    assert code in (0, -signal.SIGTERM), text     # uvicorn re-raises the signal once it has shut down
    assert "writing the record failed" not in text and "to the store failed" not in text, text
    assert "Traceback" not in text, text
    return text


def post(url: str, run: str, messages: list[dict]) -> dict:
    with httpx.Client(timeout=300) as client:       # a generous bound: a hang fails, it is not a timing
        resp = client.post(f"{url}/chat/completions", json={"model": "stubborn", "messages": messages,
                                                            "tools": TOOLS},
                           headers={"authorization": f"Bearer {KEY}", "x-tether-run": run})
    assert resp.status_code == 200, resp.text
    return resp.json()


def answered(first: dict) -> list[dict]:
    """The conversation after the model's tool call: the call and its (failed) result."""
    call = first["choices"][0]["message"]["tool_calls"][0]
    return [*FIRST, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": "Error: access denied"}]


def check(store: str, run_id: str, requests: int) -> None:
    """Every request of ``run_id`` is in the store: what it asked, what the model answered, in order."""
    db = open_store(store)
    try:
        events = db.events(run_id)
        assert db.get_run(run_id) is not None
    finally:
        db.close()
    kinds = [e["type"] for e in events]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert kinds[0] == "run_started"
    assert kinds.count("model_request") == requests, kinds
    assert kinds.count("model_decision") == requests, kinds
    assert kinds.count("tool_result") == requests - 1, kinds
    assert all(d["tool_calls"][0]["name"] == "fetch_report" for d in events if d["type"] == "model_decision")


@pytest.mark.slow        # the lock is held for 10 s
def test_requests_while_the_store_is_locked_wait_for_their_record_and_lose_none(upstream, store_url, tmp_path):  # noqa: F811
    proc, url, err = start(upstream, store_url, tmp_path)
    try:
        first = post(url, "locked-1", FIRST)
        locker = lock(store_url)
        try:
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                going_on = pool.submit(post, url, "locked-1", answered(first))     # a conversation going on
                new = pool.submit(post, url, "locked-2", FIRST)                     # a new one
                # one of them reached the model, so its writes are queued (the other may wait behind them:
                # a new conversation asks the writer whether its id is taken)
                for _ in range(6000):
                    if stats(upstream)["with_tools"] >= 2 or going_on.done() or new.done():
                        break
                    time.sleep(0.02)
                done, _ = concurrent.futures.wait([going_on, new], timeout=LOCKED_S)
                # no answer went back while its record could not be written
                assert not done, [f.result() for f in done]
                release(locker)
                assert going_on.result()["choices"][0]["message"]["tool_calls"]
                assert new.result()["choices"][0]["message"]["tool_calls"]
        finally:
            if locker.poll() is None:
                locker.kill()
                locker.wait()
    finally:
        stop(proc, err, tmp_path)
    check(store_url, "locked-1", 2)
    check(store_url, "locked-2", 1)


@pytest.mark.slow        # a gateway and a model API in subprocesses
@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)      # a SQLite store has no connection to lose
def test_a_dropped_postgresql_connection_is_made_again_and_no_request_fails(upstream, store_url, tmp_path):  # noqa: F811
    gateway_url, name = named(store_url)          # only the gateway's own connection is dropped
    proc, url, err = start(upstream, gateway_url, tmp_path)
    try:
        first = post(url, "lost-1", FIRST)
        assert drop_connections(name) >= 1
        post(url, "lost-1", answered(first))        # a conversation going on: its writes meet the lost connection
        post(url, "lost-2", FIRST)                  # a new one: is its id taken? read through the writer too
        assert drop_connections(name) >= 1          # and once more, after it connected again
        post(url, "lost-3", FIRST)
    finally:
        stop(proc, err, tmp_path)
    check(store_url, "lost-1", 2)
    check(store_url, "lost-2", 1)
    check(store_url, "lost-3", 1)
