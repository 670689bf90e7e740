"""OpenTelemetry: live export received by a loopback OTLP/HTTP server and
decoded with opentelemetry-proto; export and import of stored runs; import
of spans another library's GenAI instrumentation wrote (openai-v2, offline
against tether's fake OpenAI server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.proto")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from tether.cli import app  # noqa: E402
from tether.store import SQLiteStore  # noqa: E402
from tether.store.export import export_run  # noqa: E402

runner = CliRunner()


class Receiver:
    """A loopback OTLP/HTTP traces endpoint that keeps what it is sent."""

    def __init__(self):
        self.bodies: list[bytes] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return None

            def do_POST(self):   # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                assert self.path == "/v1/traces" and self.headers["Content-Type"] == "application/x-protobuf"
                outer.bodies.append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list:
        out = []
        for body in self.bodies:
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            for rs in req.resource_spans:
                for ss in rs.scope_spans:
                    out.extend(ss.spans)
        return out


def attrs(span) -> dict:
    out = {}
    for kv in span.attributes:
        v = kv.value
        out[kv.key] = (v.string_value if v.HasField("string_value") else v.int_value if v.HasField("int_value")
                       else v.double_value if v.HasField("double_value") else v.bool_value if v.HasField("bool_value")
                       else [x.string_value for x in v.array_value.values])
    return out


def run_live(tmp_path: Path, endpoint: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "TETHER_STORE": str(tmp_path / "t.db"), **env}
    environment.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None)
    return subprocess.run([sys.executable, "-m", "tether.cli", "run", "C4-LD-01", "--model", "policy:stubborn",
                           "--guards", "on", "--otel", "--run-id", "ld-otel"], env=environment, capture_output=True,
                          text=True, encoding="utf-8", timeout=120)


def test_live_export_over_otlp_http(tmp_path):
    with Receiver() as rx:
        done = run_live(tmp_path, rx.endpoint, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="false")
        assert done.returncode == 3, done.stdout + done.stderr      # loop_aborted: a guard ended it
        spans = rx.spans()
    names = [s.name for s in spans]
    agent = next(s for s in spans if attrs(s).get("gen_ai.operation.name") == "invoke_agent")
    chats = [s for s in spans if attrs(s).get("gen_ai.operation.name") == "chat"]
    tools = [s for s in spans if attrs(s).get("gen_ai.operation.name") == "execute_tool"]
    assert agent.name == "invoke_agent policy:stubborn", names
    a = attrs(agent)
    assert a["tether.run_id"] == "ld-otel" and a["tether.status"] == "loop_aborted" and a["tether.case_id"] == "C4-LD-01"
    assert len(chats) == 5 and len(tools) == 4
    assert all(c.parent_span_id == agent.span_id and c.trace_id == agent.trace_id for c in chats + tools)
    c = attrs(chats[0])
    assert c["gen_ai.request.model"] == "policy:stubborn"
    assert c["gen_ai.usage.input_tokens"] > 0 and c["gen_ai.usage.output_tokens"] > 0
    assert {attrs(t)["gen_ai.tool.name"] for t in tools} == {"search_flights"}
    trips = [(s.name, e) for s in spans for e in s.events if e.name == "tether.guard_tripped"]
    assert [(n, {kv.key: kv.value.string_value for kv in e.attributes}["tether.guard.verdict"]) for n, e in trips] == [
        ("execute_tool search_flights", "hint"), ("execute_tool search_flights", "stop")]
    # no message content unless opted in
    raw = b"".join(rx.bodies)
    assert "北京".encode() not in raw and b"gen_ai.input.messages" not in raw and b"gen_ai.tool.call.arguments" not in raw


@pytest.mark.slow        # a second live run in a process; the default suite checks no content leaves unasked
def test_message_content_only_when_opted_in(tmp_path):
    with Receiver() as rx:
        done = run_live(tmp_path, rx.endpoint, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
        assert done.returncode == 3, done.stdout + done.stderr
        spans = rx.spans()
    chat = next(s for s in spans if attrs(s).get("gen_ai.operation.name") == "chat")
    sent = json.loads(attrs(chat)["gen_ai.input.messages"])
    assert sent[-1] == {"role": "user", "parts": [{"type": "text", "content": "查一下下周五北京到上海的机票"}]}
    tool = next(s for s in spans if attrs(s).get("gen_ai.operation.name") == "execute_tool")
    assert json.loads(attrs(tool)["gen_ai.tool.call.arguments"])["departure_city"] == "北京"


def _guard_check(db_path: Path, run_id: str, tmp_path: Path):
    """guard-check a stored run (by id when this guard-check reads the store, else its export)."""
    res = runner.invoke(app, ["guard-check", run_id, "--store", str(db_path)])
    if res.exit_code == 2 and "--store" in res.output:
        trace = tmp_path / f"{run_id}.jsonl"
        trace.write_text(export_run(SQLiteStore(db_path), run_id), encoding="utf-8")
        res = runner.invoke(app, ["guard-check", str(trace)])
    return res


def test_export_otel_then_import_round_trip(tmp_path):
    db = tmp_path / "a.db"
    res = runner.invoke(app, ["run", "C4-LD-01", "--model", "policy:stubborn", "--guards", "off", "--run-id", "ld-off",
                              "--store", str(db)])
    assert res.exit_code == 1, res.output           # step_limit: nothing stopped the loop
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    try:
        res = runner.invoke(app, ["runs", "export-otel", "ld-off", "--store", str(db), "--file", str(tmp_path / "s.json")])
    finally:
        del os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]
    assert res.exit_code == 0 and "wrote 61 span(s)" in res.output, res.output
    other = tmp_path / "b.db"
    res = runner.invoke(app, ["runs", "import", "--otel", str(tmp_path / "s.json"), "--store", str(other)])
    assert res.exit_code == 0 and "imported: run ld-off" in res.output, res.output
    t = export_run(SQLiteStore(other), "ld-off")
    assert '"kind": "import"' in t and t.count('"type": "tool_call"') == 30
    res = _guard_check(other, "ld-off", tmp_path)
    assert "loop" in res.output and "identical" in res.output, res.output


def _openai_v2_spans(tmp_path: Path) -> Path:
    """An agent loop of the app's own making, instrumented by opentelemetry-instrumentation-openai-v2:
    the same failing search four times, then an answer. Spans written as OTLP JSON."""
    pytest.importorskip("opentelemetry.instrumentation.openai_v2")
    openai = pytest.importorskip("openai")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tether.report.otel import otlp_json
    from tether.testing.fake_openai import FakeOpenAIServer

    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        tools = [{"type": "function", "function": {"name": "search_flights", "description": "search flights",
                                                   "parameters": {"type": "object", "properties": {"date": {"type": "string"}}}}}]
        with FakeOpenAIServer() as server:
            for _ in range(4):
                server.add_tool_calls(("search_flights", {"date": "下周五"}))
            server.add_text("没有找到航班。")
            client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
            messages = [{"role": "user", "content": "查一下下周五北京到上海的机票"}]
            with provider.get_tracer("app").start_as_current_span("my agent"):
                for _ in range(5):
                    reply = client.chat.completions.create(model="fake-model", messages=messages, tools=tools)
                    msg = reply.choices[0].message
                    if not msg.tool_calls:
                        break
                    call = msg.tool_calls[0]
                    messages.append({"role": "assistant", "content": None, "tool_calls": [
                        {"id": call.id, "type": "function",
                         "function": {"name": call.function.name, "arguments": call.function.arguments}}]})
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": "error: invalid date 下周五"})
            client.close()
    finally:
        instrumentor.uninstrument()
        for key in ("OTEL_SEMCONV_STABILITY_OPT_IN", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"):
            os.environ.pop(key, None)
    path = tmp_path / "openai-v2.json"
    path.write_text(otlp_json(memory.get_finished_spans()), encoding="utf-8")
    provider.shutdown()
    return path


def test_import_spans_of_another_instrumentation(tmp_path):
    path = _openai_v2_spans(tmp_path)
    db = tmp_path / "i.db"
    res = runner.invoke(app, ["runs", "import", "--otel", str(path), "--store", str(db)])
    assert res.exit_code == 0, res.output
    run_id = res.output.split("run ", 1)[1].split(" ", 1)[0]
    store = SQLiteStore(db)
    row = store.get_run(run_id)
    assert row["kind"] == "import" and row["model"] == "fake-model" and row["status"] == "completed"
    from tether.store.export import load_run
    t = load_run(store, run_id)
    assert len(t.tool_calls("search_flights")) == 4 and t.final_reply == "没有找到航班。"
    assert t.user_messages()[0].content == "查一下下周五北京到上海的机票"
    assert all(not r.ok for r in t.tool_results())
    res = _guard_check(db, run_id, tmp_path)
    assert "identical" in res.output, res.output
    from tether.report.html.server import Viewer
    page = Viewer(store).run(run_id)
    assert "search_flights" in page and "查一下下周五北京到上海的机票" in page
    assert run_id in Viewer(store).index({})


def test_missing_extra_is_one_clear_line(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_otel(name, *args, **kwargs):
        if name.startswith("opentelemetry"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_otel)
    res = runner.invoke(app, ["run", "C4-LD-01", "--model", "policy:steady", "--otel"])
    assert res.exit_code == 2 and "pip install 'tether[otel]'" in res.output


def test_export_otel_says_exported_only_when_the_collector_took_the_spans(tmp_path, monkeypatch):
    db = tmp_path / "a.db"
    res = runner.invoke(app, ["run", "C4-LD-01", "--model", "policy:stubborn", "--run-id", "r1", "--store", str(db)])
    assert "run r1 · status" in res.output, res.output
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    with Receiver() as rx:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint)
        res = runner.invoke(app, ["runs", "export-otel", "r1", "--store", str(db)])
        assert res.exit_code == 0, res.output
        sent = len(rx.spans())
        assert sent > 0 and f"exported {sent} span(s) of run r1 to {rx.endpoint}" in res.output, res.output
    # the same endpoint with nobody listening: it used to print "exported" and exit 0 all the same
    res = runner.invoke(app, ["runs", "export-otel", "r1", "--store", str(db)])
    assert res.exit_code == 2, res.output
    assert f"OTLP endpoint {rx.endpoint}" in res.output and "not accepted" in res.output, res.output
    assert "exported" not in res.output and "internal error" not in res.output


def test_export_otel_to_a_full_disk_names_the_file(tmp_path):
    db = tmp_path / "a.db"
    runner.invoke(app, ["run", "C4-LD-01", "--model", "policy:stubborn", "--run-id", "r1", "--store", str(db)])
    res = runner.invoke(app, ["runs", "export-otel", "r1", "--store", str(db), "--file", "/dev/full"])
    assert res.exit_code == 74, res.output
    assert "--file /dev/full: the disk is full" in res.output, res.output
