"""The LLM gateway's record: what a client received is in the store even when the
gateway is killed right after (SIGKILL), and a conversation its agent never came
back to does not end as ``completed``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import httpx
import pytest

from tether.store import SQLiteStore

from .test_llm_gateway import KEY, TOOLS, start_gateway, upstream  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")


def post(url: str, body: dict, run: str, *, stream: bool = False) -> bytes:
    headers = {"authorization": f"Bearer {KEY}", "x-tether-run": run}
    with httpx.Client(timeout=30) as client:
        if not stream:
            resp = client.post(f"{url}/chat/completions", json=body, headers=headers)
            assert resp.status_code == 200, resp.text
            return resp.content
        with client.stream("POST", f"{url}/chat/completions", json={**body, "stream": True}, headers=headers) as resp:
            assert resp.status_code == 200
            return b"".join(resp.iter_raw())


def events(db, run_id: str) -> list[dict]:
    store = SQLiteStore(db)
    try:
        return store.events(run_id)
    finally:
        store.close()


@pytest.mark.parametrize("stream", [False, True])
def test_what_the_client_received_survives_a_kill(upstream, tmp_path, stream):  # noqa: F811
    db = tmp_path / "runs.db"
    proc, url = start_gateway(upstream, db, "--guards", "on")
    try:
        messages = [{"role": "user", "content": "Fetch report r-7."}]
        first = post(url, {"model": "stubborn", "messages": messages, "tools": TOOLS}, "killed-1", stream=stream)
        if stream:
            assert b"[DONE]" in first
            call = {"id": "call_1", "type": "function",
                    "function": {"name": "fetch_report", "arguments": '{"report_id": "r-7"}'}}
        else:
            call = json.loads(first)["choices"][0]["message"]["tool_calls"][0]
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": call["id"], "content": '{"report": "r-7", "pages": 3}'}]
        post(url, {"model": "stubborn", "messages": messages, "tools": TOOLS}, "killed-1", stream=stream)
    finally:
        proc.send_signal(signal.SIGKILL)          # no shutdown: nothing is written after this
        proc.wait(timeout=20)
    recorded = events(db, "killed-1")
    kinds = [e["type"] for e in recorded]
    assert kinds.count("model_request") == 2
    assert kinds.count("model_decision") == 2, kinds           # both answers, the last one included
    assert kinds.count("tool_result") == 1
    assert [e["seq"] for e in recorded] == list(range(len(recorded)))
    decision = [e for e in recorded if e["type"] == "model_decision"][-1]
    assert decision["tool_calls"][0]["name"] == "fetch_report"
    store = SQLiteStore(db)
    try:
        assert store.get_run("killed-1")["status"] == "running"   # killed mid-conversation: not ended, not lost
    finally:
        store.close()


def test_a_conversation_nobody_came_back_to_is_abandoned_not_completed(upstream, tmp_path):  # noqa: F811
    db = tmp_path / "runs.db"
    proc, url = start_gateway(upstream, db, "--guards", "on")
    try:
        post(url, {"model": "stubborn", "messages": [{"role": "user", "content": "Fetch r-7."}], "tools": TOOLS},
             "left-waiting")
        answer = post(url, {"model": "stubborn", "messages": [{"role": "user", "content": "Say hello."}]}, "answered")
        assert json.loads(answer)["choices"][0]["message"]["content"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    store = SQLiteStore(db)
    try:
        left, answered = store.get_run("left-waiting"), store.get_run("answered")
    finally:
        store.close()
    assert answered["status"] == "completed"
    assert left["status"] == "error" and left["error_kind"] == "aborted", left
    assert left["reason"].startswith("abandoned: the gateway shut down")
    finished = events(db, "left-waiting")[-1]
    assert finished["type"] == "run_finished" and finished["error_kind"] == "aborted"
    shown = subprocess.run([sys.executable, "-m", "tether.cli", "runs", "show", "left-waiting", "--store", str(db)],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "abandoned" in shown.stdout
