"""The Anthropic adapter: message/tool mapping, and real loopback HTTP against
the fake server's Messages API route (the SDK is pointed at it by base URL)."""

from __future__ import annotations

import logging

import pytest

from tether import Decision, TerminalStatus, ToolSet, run_agent_sync, tool
from tether.errors import ModelRequestsForbidden, UsageError
from tether.messages import DecisionKind, Message, ToolCallRequest, ToolSpec
from tether.models import ModelRequest, allow_model_requests, resolve_model
from tether.models.anthropic import (AnthropicModel, ModelOptions, ProviderFailure, RetryOptions, to_anthropic_messages,
                                    to_anthropic_tools)
from tether.testing.fake_openai import FakeOpenAIServer

KEY = "sk-ant-test-THISMUSTNOTLEAK123"


# The requests go through the real SDK, whose import alone costs ~3 s of CPU: those tests run with -m slow;
# the mapping tests run by default (tether.models.anthropic imports the SDK only when it sends).
SDK = pytest.mark.slow


@pytest.fixture
def server():
    pytest.importorskip("anthropic", reason="the anthropic SDK is an extra: pip install 'tether[anthropic]'")
    with FakeOpenAIServer() as s:
        yield s


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)


class Sleeps:
    def __init__(self):
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def model_for(server, **retry) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-4", base_url=server.anthropic_base_url,
                          options=ModelOptions(timeout=5, retry=RetryOptions(jitter=False, **retry), sleep=Sleeps()))


SEARCH = ToolSpec(name="search", description="search the web",
                  parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})


def req(*messages: Message, tools=(SEARCH,)) -> ModelRequest:
    return ModelRequest(messages=list(messages) or [Message(role="user", content="hi")], tools=list(tools), step=1)


@tool(description="search the web")
def search(q: str):
    return {"hits": [f"result for {q}"]}


# -- mapping (pure functions) ------------------------------------------------------------
def test_message_mapping():
    system, messages = to_anthropic_messages([
        Message(role="system", content="be brief"),
        Message(role="system", content="use tools"),
        Message(role="user", content="find x"),
        Message(role="assistant", content="looking", tool_calls=[
            ToolCallRequest(id="c1", name="search", arguments={"q": "x"}),
            ToolCallRequest(id="c1~2.1", name="search", arguments={}, raw_arguments="{bad")]),
        Message(role="tool", tool_call_id="c1", name="search", content='{"ok":true,"data":1}'),
        Message(role="tool", tool_call_id="c1~2.1", name="search", content='{"ok":false,"error":"bad"}'),
        Message(role="system", content="budget at 80%"),
        Message(role="assistant", content="done"),
    ])
    assert system == "be brief\n\nuse tools"
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "find x"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "looking"},
            {"type": "tool_use", "id": "c1", "name": "search", "input": {"q": "x"}},
            {"type": "tool_use", "id": "c1_2_1", "name": "search", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": '{"ok":true,"data":1}'},
            {"type": "tool_result", "tool_use_id": "c1_2_1", "content": '{"ok":false,"error":"bad"}', "is_error": True},
            {"type": "text", "text": "[system] budget at 80%"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]


def test_mapping_starts_with_a_user_turn_and_merges_roles():
    _, messages = to_anthropic_messages([Message(role="assistant", content="hello"), Message(role="user", content="a"),
                                         Message(role="user", content="b")])
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["text"] for b in messages[2]["content"]] == ["a", "b"]


def test_tool_mapping():
    assert to_anthropic_tools([SEARCH]) == [
        {"name": "search", "description": "search the web", "input_schema": SEARCH.parameters}]


def test_spec_and_missing_key(monkeypatch):
    m = resolve_model("anthropic:claude-sonnet-4-5")
    assert isinstance(m, AnthropicModel) and m.name == "anthropic:claude-sonnet-4-5"
    with pytest.raises(UsageError):
        resolve_model("anthropic:")


@SDK
async def test_missing_key_and_forbidden(server, monkeypatch):
    server.add_text("never")
    with pytest.raises(ModelRequestsForbidden):
        await model_for(server).request(req())
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with allow_model_requests(), pytest.raises(UsageError, match=r"\$ANTHROPIC_API_KEY is not set"):
        await model_for(server).request(req())
    assert server.requests == []


# -- over loopback HTTP ------------------------------------------------------------------
@SDK
async def test_request_body_tool_calls_usage_and_cost(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    server.add_tool_calls(("search", {"q": "a"}, "toolu_1"), ("search", {"q": "b"}, "toolu_2"), text="two searches",
                          usage=(1_000_000, 100_000))
    model = resolve_model("anthropic:claude-sonnet-4")
    with allow_model_requests():
        response = await model.request(req(Message(role="system", content="sys"), Message(role="user", content="go")))
    r = server.requests[0]
    assert r.path == "/v1/messages" and r.has_credential(KEY)
    assert r.body["system"] == "sys" and r.body["max_tokens"] == 4096
    assert r.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    assert r.tool_names == ["search", "ask_user"]
    d = response.decision
    assert d.kind == DecisionKind.TOOL_CALLS and d.text == "two searches"
    assert [(c.id, c.arguments) for c in d.tool_calls] == [("toolu_1", {"q": "a"}), ("toolu_2", {"q": "b"})]
    assert response.usage.input_tokens == 1_000_000 and response.usage.cost == pytest.approx(3.0 + 1.5)


@SDK
async def test_ask_user_and_malformed_input(server):
    server.add_decision(Decision.ask("Which city?"))
    server.add_tool_calls(("search", "not an object"), ("missing_tool", {}))
    model = model_for(server)
    with allow_model_requests():
        assert (await model.request(req())).decision == Decision.ask("Which city?")
        calls = (await model.request(req())).decision.tool_calls
    assert calls[0].raw_arguments is not None and calls[1].name == "missing_tool"
    assert model.stats.malformed_tool_calls == 2 and model.stats.ask_user_calls == 1


@SDK
async def test_overloaded_529_is_retried(server):
    server.add_error(529, "Overloaded", headers={"retry-after": "3"}).add_text("fine")
    model = model_for(server, max_retries=2)
    with allow_model_requests():
        assert (await model.request(req())).decision.text == "fine"
    assert model.options.sleep.delays == [3.0] and len(server.requests) == 2


@SDK
async def test_errors_are_typed_and_redacted(server, caplog):
    caplog.set_level(logging.DEBUG)
    server.add_error(401, "invalid x-api-key", echo_headers=True)
    with allow_model_requests(), pytest.raises(ProviderFailure) as exc:
        await model_for(server).request(req())
    assert exc.value.status == 401 and exc.value.reason == "client_error"
    assert KEY not in str(exc.value) and KEY not in caplog.text
    server.add_malformed_json()
    with allow_model_requests(), pytest.raises(ProviderFailure) as exc:
        await model_for(server).request(req())
    assert exc.value.reason == "not_json"


@SDK
def test_end_to_end(server, caplog):
    caplog.set_level(logging.DEBUG)
    server.add_tool_calls(("search", {"q": "tether"}, "toolu_a"), ("search", {"q": "leash"}, "toolu_b"))
    server.add_text("Both found.")
    model = model_for(server)
    with allow_model_requests():
        result = run_agent_sync(model, ToolSet([search]), message="find two things")
    assert result.status == TerminalStatus.COMPLETED and result.reply == "Both found."
    second = server.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert [b["tool_use_id"] for b in second[2]["content"]] == ["toolu_a", "toolu_b"]
    assert KEY not in result.trajectory.to_jsonl() and KEY not in caplog.text
    server.assert_exhausted()
