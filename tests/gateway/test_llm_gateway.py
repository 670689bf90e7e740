"""``tether gateway`` between real OpenAI clients (Python, Node.js) and a loopback
model API that keeps asking for the same failing tool call."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from tether.store import SQLiteStore

from .test_mcp_gateway import env, free_port, wait_port

openai = pytest.importorskip("openai")

UPSTREAM = Path(__file__).with_name("llm_upstream.py")
KEY = "sk-test-abcdefghijklmnopqrstuvwxyz0123456789"
TOOLS = [{"type": "function", "function": {"name": "fetch_report", "description": "Fetch a report by id.",
                                           "parameters": {"type": "object",
                                                          "properties": {"report_id": {"type": "string"}}}}}]
FAILED = "Error: report r-7: access denied for this account"


@pytest.fixture
def upstream():
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(UPSTREAM), str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def start_gateway(upstream: str, db: Path, *options: str):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tether.cli", "gateway", "--upstream", upstream, "--port",
                             str(port), "--store", str(db), *options], env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_port(port, proc)
    return proc, f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def gateway_on(upstream, tmp_path):
    db = tmp_path / "runs.db"
    proc, url = start_gateway(upstream, db, "--guards", "on")
    try:
        yield url, db, upstream
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def stats(upstream: str) -> dict:
    return httpx.get(f"{upstream}/stats").json()


def chat_loop(base_url: str, *, stream: bool, run: str | None = None) -> tuple[str, int]:
    """An agent loop as its author wrote it: call tools until the model answers."""
    client = openai.OpenAI(base_url=base_url, api_key=KEY, default_headers={"X-Tether-Run": run} if run else None)
    messages = [{"role": "system", "content": "You fetch reports."},
                {"role": "user", "content": f"Fetch report r-7 (stream={stream})."}]
    for turn in range(1, 21):
        if stream:
            calls: dict[int, dict] = {}
            text = ""
            for chunk in client.chat.completions.create(model="stubborn", messages=messages, tools=TOOLS, stream=True):
                delta = chunk.choices[0].delta if chunk.choices else None
                if delta is None:
                    continue
                text += delta.content or ""
                for c in delta.tool_calls or []:
                    slot = calls.setdefault(c.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = c.id or slot["id"]
                    slot["name"] += (c.function.name or "") if c.function else ""
                    slot["arguments"] += (c.function.arguments or "") if c.function else ""
            tool_calls = [{"id": c["id"], "type": "function",
                           "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls.values()]
        else:
            message = client.chat.completions.create(model="stubborn", messages=messages, tools=TOOLS).choices[0].message
            text = message.content or ""
            tool_calls = [c.model_dump() for c in message.tool_calls or []]
        if not tool_calls:
            return text, turn
        messages.append({"role": "assistant", "content": text or None, "tool_calls": tool_calls})
        for c in tool_calls:
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": FAILED})
    raise AssertionError("the agent's loop never ended")


@pytest.mark.parametrize("stream", [pytest.param(False, marks=pytest.mark.slow), True])
def test_a_python_openai_loop_ends_by_its_own_logic(gateway_on, stream):
    url, db, upstream = gateway_on
    text, turns = chat_loop(url, stream=stream, run=f"py-{'s' if stream else 'n'}")
    counts = stats(upstream)
    assert counts["with_tools"] <= 5 and counts["with_tools"] == 4, counts
    assert counts["without_tools"] == 1            # the finish-up: one request without tools
    assert turns == 5 and "could not fetch report r-7" in text
    # the run, with its trips, as `tether runs show` prints it
    from typer.testing import CliRunner

    from tether.cli import app

    run_id = f"py-{'s' if stream else 'n'}"
    out = CliRunner().invoke(app, ["runs", "show", run_id, "--store", str(db)])
    assert out.exit_code == 0, out.output
    assert "loop_aborted" in out.output and "gateway" in out.output
    events = SQLiteStore(db).events(run_id)
    trips = [(e["guard"], e["rule"], e["verdict"]) for e in events if e["type"] == "guard_tripped"]
    assert trips == [("loop", "identical", "hint"), ("loop", "identical", "stop")]
    assert sum(1 for e in events if e["type"] == "model_request") == 5
    assert KEY.encode() not in db.read_bytes() and b"sk-test" not in db.read_bytes()
    if not stream:      # guard-check and the viewer read the run like any other
        check = CliRunner().invoke(app, ["guard-check", run_id, "--store", str(db)])
        assert check.exit_code == 3 and "4th identical call to fetch_report" in check.output, check.output
        import threading

        from tether.report.html.server import make_server

        server = make_server(SQLiteStore(db))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            page = httpx.get(f"http://127.0.0.1:{server.server_address[1]}/run/{run_id}")
        finally:
            server.shutdown()
            server.server_close()
        assert page.status_code == 200 and "loop_aborted" in page.text and "identical" in page.text


@pytest.mark.slow        # a gateway subprocess; the default suite keeps the streamed loop and the transparent pass-through
def test_without_a_run_header_the_conversation_is_named_by_its_opening(gateway_on):
    url, db, _ = gateway_on
    chat_loop(url, stream=False)
    runs = [r for r in SQLiteStore(db).list_runs(kind="gateway")]
    assert len(runs) == 1 and runs[0]["run_id"].startswith("gw-") and runs[0]["status"] == "loop_aborted"


@pytest.mark.slow        # a gateway subprocess; the default suite keeps the streamed loop and the transparent pass-through
def test_the_responses_api_loop_is_stopped_too(gateway_on):
    url, db, upstream = gateway_on
    client = openai.OpenAI(base_url=url, api_key=KEY)
    tools = [{"type": "function", "name": "fetch_report", "parameters": TOOLS[0]["function"]["parameters"]}]
    items: list = [{"role": "user", "content": "Fetch report r-7 via responses."}]
    for turn in range(1, 21):
        response = client.responses.create(model="stubborn", input=items, tools=tools)
        calls = [o for o in response.output if o.type == "function_call"]
        if not calls:
            break
        for c in calls:
            items.append({"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments})
            items.append({"type": "function_call_output", "call_id": c.call_id, "output": FAILED})
    assert turn == 5 and response.output_text
    assert stats(upstream)["with_tools"] == 4
    # a stateful client: only the new items, after previous_response_id
    response = client.responses.create(model="stubborn", input="Fetch report r-8 statefully.", tools=tools)
    for turn in range(1, 21):
        calls = [o for o in response.output if o.type == "function_call"]
        if not calls:
            break
        response = client.responses.create(model="stubborn", previous_response_id=response.id, tools=tools,
                                           input=[{"type": "function_call_output", "call_id": c.call_id,
                                                   "output": FAILED} for c in calls])
    assert turn == 5 and stats(upstream)["with_tools"] == 8


def test_with_guards_off_the_gateway_is_transparent(upstream, tmp_path):
    proc, url = start_gateway(upstream, tmp_path / "runs.db", "--guards", "off")
    try:
        for path, body in (("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                                  "tools": TOOLS}),
                           ("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
                           ("/responses", {"model": "m", "input": "hi", "tools": [{"type": "function",
                                                                                   "name": "fetch_report"}]})):
            for stream in (False, True):
                payload = json.dumps({**body, "stream": stream}).encode()
                seen = []
                for base in (upstream, url):
                    with httpx.stream("POST", base + path, content=payload,
                                      headers={"content-type": "application/json",
                                               "authorization": f"Bearer {KEY}"}) as r:
                        seen.append((r.status_code, r.headers.get("content-type"), r.headers.get("x-upstream"),
                                     b"".join(r.iter_raw())))
                assert seen[0] == seen[1], (path, stream)
        other = httpx.get(url + "/stats")           # any other path passes through
        assert other.status_code == 200 and "total" in other.json()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert SQLiteStore(tmp_path / "runs.db").list_runs(kind="gateway")


@pytest.mark.slow
def test_a_node_openai_loop_ends_by_its_own_logic(gateway_on, tmp_path):
    """The official `openai` npm package, installed from the npm registry."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed")
    url, db, upstream = gateway_on
    work = tmp_path / "agent"
    work.mkdir()
    install = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "openai@^4"], cwd=work,
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    (work / "agent.mjs").write_text(textwrap.dedent("""
        import OpenAI from "openai";
        const client = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
        const tools = [{ type: "function", function: { name: "fetch_report", description: "Fetch a report",
          parameters: { type: "object", properties: { report_id: { type: "string" } } } } }];
        const messages = [{ role: "user", content: "Fetch report r-7 from node." }];
        for (let turn = 1; turn <= 20; turn++) {
          const r = await client.chat.completions.create({ model: "stubborn", messages, tools });
          const m = r.choices[0].message;
          if (!m.tool_calls || m.tool_calls.length === 0) {
            console.log(JSON.stringify({ turns: turn, text: m.content }));
            process.exit(0);
          }
          messages.push(m);
          for (const c of m.tool_calls) {
            messages.push({ role: "tool", tool_call_id: c.id, content: "Error: report r-7: access denied" });
          }
        }
        process.exit(1);
    """))
    run = subprocess.run(["node", "agent.mjs"], cwd=work, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": KEY})
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["turns"] == 5 and "r-7" in result["text"]
    assert stats(upstream)["with_tools"] <= 5
    runs = SQLiteStore(db).list_runs(kind="gateway")
    assert [r["status"] for r in runs] == ["loop_aborted"]


@pytest.mark.slow        # a gateway subprocess; the default suite keeps the streamed loop and the transparent pass-through
def test_a_budget_applies_per_conversation(upstream, tmp_path):
    db = tmp_path / "runs.db"
    proc, url = start_gateway(upstream, db, "--guards", "off", "--budget", "tool_calls=2")
    try:
        text_a, turns_a = chat_loop(url, stream=False, run="budget-a")
        text_b, turns_b = chat_loop(url, stream=False, run="budget-b")     # its own budget
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert turns_a == turns_b == 3 and "could not fetch report r-7" in text_a
    store = SQLiteStore(db)
    for run_id in ("budget-a", "budget-b"):
        run = store.get_run(run_id)
        assert run["status"] == "budget_exceeded" and "tool calls budget exhausted" in run["reason"]
        assert "fetch_report(report_id=r-7)" in run["reply"]      # the done / not-done ledger
