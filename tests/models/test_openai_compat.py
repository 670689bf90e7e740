"""The OpenAI-compatible adapter over real loopback HTTP (no client mocking)."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest

pytest.importorskip("openai", reason="the openai SDK is an extra: pip install 'tether[openai]'")

from tether import Decision, RunConfig, TerminalStatus, ToolSet, run_agent, run_agent_sync, tool
from tether.errors import ModelFailure, ModelRequestsForbidden, ScriptExhausted, ScriptLeftover, UsageError
from tether.messages import DecisionKind, Message, ToolCallRequest, ToolSpec
from tether.models import ModelRequest, allow_model_requests, known_prefixes, resolve_model
from tether.models._http import parse_retry_after, redact
from tether.models.openai_compat import (ModelOptions, OpenAIChatModel, ProviderFailure, RetryOptions,
                                         to_openai_messages)
from tether.testing.fake_openai import FakeOpenAIServer, fake_openai_server

KEY = "sk-test-THISMUSTNOTLEAK123"


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_COMPAT_API_KEY", raising=False)


class Sleeps:
    """An injectable sleep that records the delays and does not wait."""

    def __init__(self):
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def fast(retries: int = 2, *, timeout: float = 5.0, sleeps: Sleeps | None = None, **retry) -> ModelOptions:
    return ModelOptions(timeout=timeout, retry=RetryOptions(max_retries=retries, jitter=False, **retry),
                        sleep=sleeps or Sleeps())


def compat(server: FakeOpenAIServer, **opts) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4.1-mini", base_url=server.base_url, options=fast(**opts))


SEARCH = ToolSpec(name="search", description="search the web",
                  parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
OPEN = ToolSpec(name="open_page", description="open a page",
                parameters={"type": "object", "properties": {"id": {"type": "integer"}}})


def req(*messages: Message, tools=(SEARCH, OPEN), step: int = 1) -> ModelRequest:
    return ModelRequest(messages=list(messages) or [Message(role="user", content="hi")], tools=list(tools), step=step)


@tool(description="search the web")
def search(q: str):
    return {"hits": [f"result for {q}"]}


@tool(description="open a page")
def open_page(id: int):
    return {"id": id, "text": "page text"}


# -- spec strings -------------------------------------------------------------------
def test_spec_strings():
    assert {"openai", "openai-compat", "anthropic"} <= set(known_prefixes())
    m = resolve_model("openai:gpt-4.1-mini")
    assert isinstance(m, OpenAIChatModel) and m.name == "openai:gpt-4.1-mini" and m.base_url is None
    c = resolve_model("openai-compat:http://127.0.0.1:8080/v1#Qwen/Qwen2.5-7B-Instruct")
    assert c.base_url == "http://127.0.0.1:8080/v1" and c.model == "Qwen/Qwen2.5-7B-Instruct"
    assert c.name == "openai-compat:http://127.0.0.1:8080/v1#Qwen/Qwen2.5-7B-Instruct"
    assert c.api_key_env == "OPENAI_COMPAT_API_KEY"
    assert resolve_model("openai-compat:http://localhost:11434/v1/").model == "default"
    assert resolve_model("openai-compat:http://localhost:11434/v1#llama3.1:8b").model == "llama3.1:8b"


@pytest.mark.parametrize("spec", [
    "openai:", "openai-compat:", "openai-compat:localhost:8080#m",
    "openai-compat:http://user:sk-secret@127.0.0.1:8080/v1#m",
    "openai-compat:http://127.0.0.1:8080/v1?api_key=sk-secret#m",
])
def test_bad_specs_are_usage_errors_without_echoing_secrets(spec):
    with pytest.raises(UsageError) as exc:
        resolve_model(spec)
    assert "sk-secret" not in str(exc.value)


async def test_real_requests_are_forbidden_by_default(server):
    server.add_text("never")
    with pytest.raises(ModelRequestsForbidden):
        await compat(server).request(req())
    assert server.requests == []
    with pytest.raises(ScriptLeftover):
        server.assert_exhausted()


async def test_official_endpoint_needs_a_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with allow_model_requests(), pytest.raises(UsageError, match=r"\$OPENAI_API_KEY is not set"):
        await resolve_model("openai:gpt-4.1-mini").request(req())


# -- what is sent -----------------------------------------------------------------
async def test_messages_tools_and_ask_user_are_sent(server):
    server.add_text("ok")
    history = [
        Message(role="system", content="be brief"),
        Message(role="user", content="find x"),
        Message(role="assistant", content="", tool_calls=[
            ToolCallRequest(id="c1", name="search", arguments={"q": "x"}),
            ToolCallRequest(id="c2", name="search", arguments={}, raw_arguments="{oops")]),
        Message(role="tool", tool_call_id="c1", name="search", content='{"ok":true}'),
        Message(role="tool", tool_call_id="c2", name="search", content='{"ok":false}'),
    ]
    with allow_model_requests():
        await compat(server).request(req(*history))
    body = server.requests[0].body
    assert body["model"] == "gpt-4.1-mini"
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "find x"},
        {"role": "assistant", "content": "", "tool_calls": [   # "" not null: llama.cpp's server rejects null
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}},
            {"id": "c2", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok":true}'},
        {"role": "tool", "tool_call_id": "c2", "content": '{"ok":false}'},
    ]
    assert server.requests[0].tool_names == ["search", "open_page", "ask_user"]
    assert body["tools"][0] == {"type": "function", "function": {
        "name": "search", "description": "search the web", "parameters": SEARCH.parameters}}
    assert server.requests[0].has_credential(KEY)
    assert KEY not in json.dumps(server.requests[0].headers)


async def test_ask_user_is_optional_and_never_offered_without_tools(server):
    server.add_text("a").add_text("b").add_text("c")
    no_ask = OpenAIChatModel("m", base_url=server.base_url, options=ModelOptions(ask_user=False))
    mine = ToolSpec(name="ask_user", description="my own", parameters={"type": "object", "properties": {}})
    with allow_model_requests():
        await no_ask.request(req())
        await compat(server).request(req(tools=()))
        await compat(server).request(req(tools=(mine,)))
    assert server.requests[0].tool_names == ["search", "open_page"]
    assert "tools" not in server.requests[1].body
    assert [t["function"]["description"] for t in server.requests[2].tools] == ["my own"]  # the real tool wins


# -- decisions ------------------------------------------------------------------------
async def test_several_tool_calls_in_one_turn_keep_their_order(server):
    server.add_tool_calls(("search", {"q": "a"}, "id_a"), ("open_page", {"id": 2}, "id_b"), ("search", {"q": "c"}),
                          text="looking")
    with allow_model_requests():
        response = await compat(server).request(req())
    d = response.decision
    assert d.kind == DecisionKind.TOOL_CALLS and d.text == "looking"
    assert [(c.id, c.name, c.arguments) for c in d.tool_calls] == [
        ("id_a", "search", {"q": "a"}), ("id_b", "open_page", {"id": 2}), ("call_fake_1_2", "search", {"q": "c"})]


async def test_final_text_is_final_even_when_it_ends_with_a_question(server):
    server.add_text("Which date do you want?")
    with allow_model_requests():
        d = (await compat(server).request(req())).decision
    assert d == Decision.final("Which date do you want?")


async def test_ask_user_call_becomes_a_question(server):
    server.add_decision(Decision.ask("哪天出发？"))
    model = compat(server)
    with allow_model_requests():
        d = (await model.request(req())).decision
    assert d == Decision.ask("哪天出发？") and model.stats.ask_user_calls == 1


async def test_ask_user_with_real_calls_is_dropped_and_counted(server):
    server.add_tool_calls(("search", {"q": "a"}), ("ask_user", {"question": "and?"}))
    model = compat(server)
    with allow_model_requests():
        d = (await model.request(req())).decision
    assert [c.name for c in d.tool_calls] == ["search"] and model.stats.dropped_ask_user == 1


async def test_malformed_tool_calls_are_passed_on_and_counted(server):
    server.add_tool_calls(("search", '{"q": "unterminated'), ("search", "[1, 2]"), ("nope", {"x": 1}),
                          ("open_page", ""))
    model = compat(server)
    with allow_model_requests():
        d = (await model.request(req())).decision
    calls = d.tool_calls
    assert [c.raw_arguments for c in calls] == ['{"q": "unterminated', "[1, 2]", None, None]
    assert calls[0].arguments == {} and calls[3].arguments == {}   # "" means no arguments
    assert model.stats.malformed_tool_calls == 3
    assert (model.stats.bad_arguments, model.stats.unknown_tools) == (2, 1)


# -- usage and cost ------------------------------------------------------------------
async def test_usage_and_cost(server):
    server.add_text("a", usage=(1_000_000, 500_000))
    server.add_text("b", usage=(10, 5), cost=0.125)       # a proxy that reports cost
    server.add_body({"choices": [{"message": {"role": "assistant", "content": "no usage"}}]})
    model = compat(server)
    with allow_model_requests():
        first = await model.request(req())
        second = await model.request(req())
        third = await model.request(req())
    assert first.usage.input_tokens == 1_000_000 and first.usage.output_tokens == 500_000
    assert first.usage.cost == pytest.approx(0.4 + 0.8)   # gpt-4.1-mini: 0.4 / 1.6 per million
    assert second.usage.cost == 0.125
    assert third.usage.input_tokens > 0 and model.stats.usage_estimated == 1
    unknown = OpenAIChatModel("my-local-model", base_url=server.base_url)
    server.add_text("c", usage=(100, 100))
    with allow_model_requests():
        assert (await unknown.request(req())).usage.cost == 0.0


# -- faults: each ends in a typed outcome --------------------------------------------------
async def test_429_retry_after_is_honoured_then_succeeds(server):
    server.add_rate_limit(retry_after=2).add_rate_limit(retry_after=None, retry_after_ms=250).add_text("ok")
    sleeps = Sleeps()
    model = compat(server, sleeps=sleeps, retries=3)
    with allow_model_requests():
        response = await model.request(req())
    assert response.decision.text == "ok"
    assert sleeps.delays == [2.0, 0.25]
    assert len(server.requests) == 3 and model.stats.attempts == 3 and model.stats.retries == 2
    assert [r.headers.get("x-stainless-retry-count") for r in server.requests] == ["0", "0", "0"]  # SDK retries off


async def test_retry_after_with_real_sleep(server):
    server.add_rate_limit(retry_after=None, retry_after_ms=150).add_text("ok")
    model = OpenAIChatModel("m", base_url=server.base_url, options=ModelOptions(timeout=5))
    with allow_model_requests():
        await model.request(req())
    assert server.requests[1].at - server.requests[0].at >= 0.15


async def test_retry_after_longer_than_the_total_wait_gives_up_at_once(server):
    server.add_rate_limit(retry_after=120)
    sleeps = Sleeps()
    with allow_model_requests(), pytest.raises(ProviderFailure) as exc:
        await compat(server, sleeps=sleeps, max_total_wait=30).request(req())
    e = exc.value
    assert isinstance(e, ModelFailure) and e.reason == "retry_after_too_long" and e.status == 429
    assert sleeps.delays == [] and e.attempts == 1
    assert "120s" in str(e) and "max_total_wait=30s" in str(e)


async def test_server_errors_exhaust_retries_with_backoff(server):
    for _ in range(3):
        server.add_server_error(503)
    sleeps = Sleeps()
    model = compat(server, sleeps=sleeps, retries=2)
    with allow_model_requests(), pytest.raises(ProviderFailure) as exc:
        await model.request(req(step=4))
    e = exc.value
    assert (e.reason, e.status, e.attempts, e.retries, e.step) == ("server_error", 503, 3, 2, 4)
    assert sleeps.delays == [0.5, 1.0]
    assert "HTTP 503" in str(e) and "3 attempts, 2 retries" in str(e) and "step 4" in str(e)
    assert model.stats.failures == 1
    server.assert_exhausted()


async def test_backoff_stops_at_the_total_wait_cap(server):
    server.add_server_error(500).add_server_error(500)
    sleeps = Sleeps()
    with allow_model_requests(), pytest.raises(ProviderFailure, match="would pass max_total_wait=1s") as exc:
        await compat(server, sleeps=sleeps, retries=5, max_total_wait=1.0, initial_backoff=0.6).request(req())
    assert sleeps.delays == [0.6] and exc.value.attempts == 2


async def test_500_then_success(server):
    server.add_server_error(500).add_text("recovered")
    with allow_model_requests():
        assert (await compat(server).request(req())).decision.text == "recovered"
    assert len(server.requests) == 2


async def test_client_errors_are_not_retried(server):
    server.add_error(400, "bad request: unknown parameter")
    with allow_model_requests(), pytest.raises(ProviderFailure) as exc:
        await compat(server).request(req())
    assert exc.value.reason == "client_error" and exc.value.attempts == 1 and "unknown parameter" in str(exc.value)


async def test_hang_past_the_timeout(server):
    server.add_hang(10)
    started = time.monotonic()
    with allow_model_requests(), pytest.raises(ProviderFailure) as exc:
        await compat(server, retries=0, timeout=0.3).request(req())
    assert time.monotonic() - started < 5
    assert exc.value.reason == "timeout" and "timed out after 0.3s" in str(exc.value)


async def test_hang_then_retry_succeeds(server):
    server.add_hang(10).add_text("second try")
    model = compat(server, retries=1, timeout=0.3)
    with allow_model_requests():
        assert (await model.request(req())).decision.text == "second try"
    assert model.stats.retries == 1


async def test_malformed_json_body(server):
    server.add_malformed_json()
    with allow_model_requests(), pytest.raises(ProviderFailure) as exc:
        await compat(server).request(req())
    assert exc.value.reason == "not_json" and exc.value.status == 200 and "not valid JSON" in str(exc.value)
    assert len(server.requests) == 1   # a broken body is not retried


async def test_truncated_body_is_retried_then_fails(server):
    server.add_truncated().add_truncated()
    with allow_model_requests(), pytest.raises(ProviderFailure) as exc:
        await compat(server, retries=1).request(req())
    assert exc.value.reason == "connection" and exc.value.attempts == 2
    server.add_truncated().add_text("whole")
    with allow_model_requests():
        assert (await compat(server, retries=1).request(req())).decision.text == "whole"


async def test_wrong_content_type(server):
    server.add_wrong_content_type()
    with allow_model_requests(), pytest.raises(ProviderFailure) as exc:
        await compat(server).request(req())
    assert exc.value.reason == "wrong_content_type" and "text/html" in str(exc.value) and "/v1" in str(exc.value)


async def test_a_200_without_choices_is_a_failure(server):
    server.add_body({"error": {"message": "model overloaded"}})
    with allow_model_requests(), pytest.raises(ProviderFailure, match="model overloaded") as exc:
        await compat(server).request(req())
    assert exc.value.reason == "bad_body"


async def test_the_fake_server_is_a_strict_queue(server):
    server.add_text("only one")
    with allow_model_requests():
        await compat(server).request(req())
        with pytest.raises(ProviderFailure, match="no scripted response left for request #2"):
            await compat(server).request(req())
    with pytest.raises(ScriptExhausted):
        server.assert_exhausted()


def test_parse_retry_after_and_redact():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after({}) is None
    text = f'{{"authorization": "Bearer {KEY}", "x-api-key": "abc123456789"}}'
    assert KEY not in redact(text) and "abc123456789" not in redact(text)
    assert redact("token other-secret-1", ["other-secret-1"]) == "token [redacted]"


# -- end to end ------------------------------------------------------------------------------
class OneAnswerUser:
    def __init__(self, answer: str):
        self.answer = answer
        self.questions: list[str] = []

    async def reply(self, question, trajectory):
        self.questions.append(question)
        return self.answer if len(self.questions) == 1 else None


def test_run_agent_sync_end_to_end(server, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)     # `openai:` honours it, like the SDK
    server.add_decision(Decision.ask("What topic?"))
    server.add_rate_limit(retry_after=0)
    server.add_tool_calls(("search", {"q": "tether"}, "c1"), ("open_page", {"id": 7}, "c2"), usage=(100, 20))
    server.add_tool_calls(("search", "{not json", "c3"), ("delete_everything", {}, "c4"), usage=(150, 20))
    server.add_text("Found it: page text.", usage=(200, 10))
    model = resolve_model("openai:gpt-4.1-mini")
    model.options = fast(retries=2)
    user = OneAnswerUser("agents")
    with allow_model_requests():
        result = run_agent_sync(model, ToolSet([search, open_page]), message="research something", user=user,
                                config=RunConfig(system_prompt="You are careful."))
    t = result.trajectory
    assert result.status == TerminalStatus.COMPLETED and result.reply == "Found it: page text."
    assert user.questions == ["What topic?"]
    # ask_user is a question in the trace, never a tool call
    assert [q.content for q in t.questions_to_user()] == ["What topic?"]
    assert "ask_user" not in [c.tool for c in t.tool_calls()] and "ask_user" not in t.started.tools
    assert [c.tool for c in t.tool_calls()] == ["search", "open_page", "search", "delete_everything"]
    results = {r.call_id: r for r in t.tool_results()}
    assert results["c1"].ok and results["c2"].ok
    assert results["c3"].error_type == "invalid_arguments" and results["c4"].error_type == "unknown_tool"
    assert model.stats.malformed_tool_calls == 2 and model.stats.retries == 1
    # the model saw the errors as tool results, matched by id
    last = server.requests[-1].messages
    tool_msgs = {m["tool_call_id"]: json.loads(m["content"]) for m in last if m["role"] == "tool"}
    assert tool_msgs["c3"]["error_type"] == "invalid_arguments" and tool_msgs["c4"]["error_type"] == "unknown_tool"
    assert [m["role"] for m in last[:4]] == ["system", "user", "assistant", "user"]
    assert last[2]["content"] == "What topic?" and last[3]["content"] == "agents"
    assert t.usage().input_tokens >= 450
    assert t.usage().cost > 0
    server.assert_exhausted()
    # the key is sent, and nowhere else
    assert all(r.has_credential(KEY) for r in server.requests)
    assert KEY not in t.to_jsonl() and KEY not in caplog.text and KEY not in repr(model)


def test_failure_ends_the_run_as_error_without_leaking_the_key(server, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    server.add_tool_calls(("search", {"q": "x"}))
    server.add_error(401, "Incorrect API key provided", echo_headers=True)
    model = OpenAIChatModel("gpt-4.1-mini", base_url=server.base_url, api_key_env="OPENAI_API_KEY",
                            options=fast())
    with allow_model_requests():
        result = run_agent_sync(model, ToolSet([search]), message="go")
    assert result.status == TerminalStatus.ERROR
    assert "HTTP 401" in result.error and "Incorrect API key" in result.error and "1 attempt" in result.error
    assert server.requests[-1].has_credential(KEY)
    assert KEY not in result.error and KEY not in result.trajectory.to_jsonl() and KEY not in caplog.text
    assert "Traceback" not in result.error


async def test_compat_key_env_and_placeholder(server, monkeypatch):
    server.add_text("a").add_text("b")
    model = resolve_model(server.spec())
    with allow_model_requests():
        await model.request(req())                     # no OPENAI_COMPAT_API_KEY: a placeholder, not OPENAI_API_KEY
        monkeypatch.setenv("OPENAI_COMPAT_API_KEY", "sk-compat-1234567")
        await model.request(req())
    assert not server.requests[0].has_credential(KEY) and server.requests[0].has_credential("tether-no-key")
    assert server.requests[1].has_credential("sk-compat-1234567")


async def test_concurrent_requests_share_nothing(server):
    for _ in range(6):
        server.add_text("same")
    model = compat(server)
    with allow_model_requests():
        out = await asyncio.gather(*(model.request(req()) for _ in range(6)))
    assert [r.decision.text for r in out] == ["same"] * 6 and model.stats.requests == 6


async def test_to_openai_messages_plain_roles():
    msgs = [Message(role="user", content="a"), Message(role="assistant", content="b")]
    assert to_openai_messages(msgs) == [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]


async def test_run_agent_async(server):
    server.add_text("hello")
    with allow_model_requests():
        result = await run_agent(compat(server), ToolSet([search]), message="hi")
    assert result.status == TerminalStatus.COMPLETED and result.reply == "hello"


async def test_responder_answers_once_the_queue_is_empty():
    def respond(request):
        last = request.messages[-1]
        if last["role"] == "tool":
            return "done"
        return Decision.call("search", {"q": request.messages[-1]["content"]})

    with FakeOpenAIServer(responder=respond) as server:
        server.add_text("scripted first")
        model = compat(server)
        with allow_model_requests():
            assert (await model.request(req())).decision.text == "scripted first"
            result = await run_agent(model, ToolSet([search]), message="abc")
        assert result.status == TerminalStatus.COMPLETED and result.reply == "done"
        assert [c.arguments for c in result.trajectory.tool_calls()] == [{"q": "abc"}]
        server.assert_exhausted()


async def test_error_in_a_200_body_is_redacted(server):
    server.add_body({"error": {"message": f"bad key {KEY}"}})
    with allow_model_requests(), pytest.raises(ProviderFailure) as exc:
        await compat(server).request(req())
    assert KEY not in str(exc.value) and "[redacted]" in str(exc.value)


fake_openai = pytest.fixture(fake_openai_server, name="fake_openai")


async def test_options_reach_the_body_without_warnings(fake_openai):
    fake_openai.add_text("ok").add_text("ok")
    model = OpenAIChatModel("m", base_url=fake_openai.base_url,
                            options=ModelOptions(temperature=0, max_tokens=64, extra_body={"top_k": 5}))
    with allow_model_requests():
        await model.request(req())
        await model.request(req(tools=()))
    body = fake_openai.requests[0].body
    assert (body["temperature"], body["max_tokens"], body["top_k"]) == (0, 64, 5)
    assert fake_openai.requests[1].body.get("tools") is None
