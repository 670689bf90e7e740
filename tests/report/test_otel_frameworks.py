"""OpenTelemetry for framework agents: the real provider and the requested model on
chat spans; ``--otel`` with the Ray executor exports every trial from the driver;
OpenInference spans (written offline by openinference-instrumentation-langchain)
import as a run that guard-check reads."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tether.cli import app  # noqa: E402
from tether.report.otel import disable_live, enable_live, otlp_json  # noqa: E402
from tether.store import SQLiteStore  # noqa: E402
from tether.testing.fake_openai import FakeOpenAIServer, insisting  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "production"
runner = CliRunner()


@pytest.fixture
def live():
    memory = InMemorySpanExporter()
    assert enable_live(True, exporter=memory)
    yield memory
    disable_live()


@pytest.mark.parametrize("name,module", [("pydantic_ai", "pydantic_ai"), ("langchain", "langchain_openai"),
                                         ("openai_agents", "agents")])
def test_framework_chat_spans_name_the_real_provider_and_model(name, module, live, monkeypatch, tmp_path):
    pytest.importorskip(module)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-OTEL-1")
    monkeypatch.setenv("TETHER_STORE", str(tmp_path / "t.db"))
    monkeypatch.setenv("SUPPORT_MODEL", "gpt-4.1-nano")
    with FakeOpenAIServer(responder=insisting("order_status", {"order_id": "A100"}, final="Sorry.")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        ns = runpy.run_path(str(EXAMPLES / f"{name}_guarded.py"))
        try:
            if name == "pydantic_ai":
                ns["agent"].run_sync("Where is A100?")
            elif name == "langchain":
                ns["agent"].invoke({"messages": [{"role": "user", "content": "Where is A100?"}]})
            else:
                from agents import Runner

                Runner.run_sync(ns["agent"], "Where is A100?")
        finally:
            if name == "openai_agents":
                from agents.run import set_default_agent_runner

                set_default_agent_runner(None)
                _close_default_loop()
    disable_live()          # flush
    chats = [s for s in live.get_finished_spans() if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert chats
    for span in chats:
        assert span.attributes["gen_ai.provider.name"] == "openai"
        assert span.attributes["gen_ai.request.model"] == "gpt-4.1-nano"


def _close_default_loop() -> None:
    """Runner.run_sync leaves its event loop open; close it (its garbage collection would warn later)."""
    import asyncio
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loop = asyncio.get_event_loop_policy().get_event_loop()
    if not loop.is_running() and not loop.is_closed():
        loop.close()


def _openinference_spans(path: Path) -> None:
    """A LangChain agent (no tether in it), instrumented by openinference-instrumentation-langchain,
    calls the same failing tool four times over a loopback server; its spans written as OTLP JSON."""
    pytest.importorskip("openinference.instrumentation.langchain")
    pytest.importorskip("langchain_openai")
    from langchain.agents import create_agent
    from langchain_core.tools import ToolException, tool
    from langchain_openai import ChatOpenAI
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    @tool
    def order_status(order_id: str) -> str:
        """The status of an order."""
        raise ToolException("error: the orders database rejected the query")

    order_status.handle_tool_error = True
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with FakeOpenAIServer() as server:
            for _ in range(4):
                server.add_tool_calls(("order_status", {"order_id": "A100"}))
            server.add_text("The orders database is down.")
            model = ChatOpenAI(model="gpt-4.1-mini", base_url=server.base_url, api_key="sk-test-OI", max_retries=0)
            agent = create_agent(model, tools=[order_status], system_prompt="You are Acme's support agent.")
            agent.invoke({"messages": [{"role": "user", "content": "Where is my order A100?"}]})
    finally:
        instrumentor.uninstrument()
    path.write_text(otlp_json(memory.get_finished_spans()), encoding="utf-8")
    provider.shutdown()


def test_openinference_spans_import_as_a_run_guard_check_reads(tmp_path):
    spans = tmp_path / "openinference.json"
    _openinference_spans(spans)
    db = tmp_path / "i.db"
    res = runner.invoke(app, ["runs", "import", "--otel", str(spans), "--store", str(db)])
    assert res.exit_code == 0, res.output
    run_id = res.output.split("run ", 1)[1].split(" ", 1)[0]
    row = SQLiteStore(db).get_run(run_id)
    assert row["kind"] == "import" and row["model"] == "gpt-4.1-mini" and row["status"] == "completed"
    from tether.store.export import load_run

    t = load_run(SQLiteStore(db), run_id)
    assert len(t.tool_calls("order_status")) == 4 and t.final_reply == "The orders database is down."
    assert t.started.meta["instrumentation"] == "openinference"
    assert "sk-test-OI" not in (db.read_bytes().decode("utf-8", "replace"))
    res = runner.invoke(app, ["guard-check", run_id, "--store", str(db)])
    assert "identical" in res.output, res.output


@pytest.mark.slow
def test_otel_with_the_ray_executor_exports_one_trace_per_trial(tmp_path, live):
    import asyncio

    ray = pytest.importorskip("ray")
    from tether.evals import load_suite
    from tether.evals.runner import EvalConfig, run_suite

    cases = [c for c in load_suite("c4")][:3]
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        asyncio.run(run_suite(cases, ["policy:steady"], EvalConfig(trials=2, store=tmp_path / "ray.db",
                                                                   executor="ray")))
    finally:
        ray.shutdown()
    disable_live()
    agents = [s for s in live.get_finished_spans() if s.attributes.get("gen_ai.operation.name") == "invoke_agent"]
    assert len(agents) == 6 and len({s.context.trace_id for s in agents}) == 6
    assert {s.attributes["tether.run_id"] for s in agents} == {r["run_id"] for r in SQLiteStore(tmp_path / "ray.db")
                                                                .list_runs()}


def test_live_export_is_off_by_default_for_ray_trials():
    from tether.events import Trajectory
    from tether.report.otel import export_live

    assert os.environ.get("TETHER_OTEL", "") in ("", "0") and export_live(Trajectory()) is False
