"""Anthropic Messages API through the official ``anthropic`` SDK.

Spec: ``anthropic:claude-sonnet-4-5``. Key from ``$ANTHROPIC_API_KEY``, base
URL from ``$ANTHROPIC_BASE_URL`` (or the SDK default). The SDK is imported
lazily: ``pip install 'tether[anthropic]'``. See ``docs/models.md``.

Mapping: leading system messages become the ``system`` parameter; a system
message later in the conversation (a guard's hint, a finish-up prompt) becomes
a ``[system]`` text block in a user turn, since the API has no system role
mid-conversation. Tool calls are ``tool_use`` blocks, tool results
``tool_result`` blocks (``is_error`` when the result says ``ok: false``);
consecutive turns of one role are merged, as the API requires alternation.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from typing import Any

from ..errors import UsageError
from ..messages import Message, ToolSpec
from ._base import ModelRequest, ModelResponse, check_model_requests_allowed
from ._http import (
    AdapterStats,
    ConnectionLimit,
    default_connections,
    ModelOptions,
    ProviderFailure,
    RetryOptions,
    RawCall,
    build_decision,
    make_usage,
    offered_tools,
    sdk_http_client,
    redact,
    sdk_roundtrip,
)

__all__ = [
    "AdapterStats", "AnthropicModel", "ModelOptions", "ProviderFailure", "RetryOptions",
    "from_anthropic_spec", "to_anthropic_messages", "to_anthropic_tools",
]

INSTALL_HINT = "the Anthropic adapter needs the anthropic SDK: pip install 'tether[anthropic]'"
DEFAULT_MAX_TOKENS = 4096

_ID_OK = re.compile(r"[^A-Za-z0-9_-]")


def _tool_id(call_id: str | None) -> str:
    """Tool ids must match ``^[a-zA-Z0-9_-]+$``; the run loop may add '~' and '.'."""
    return _ID_OK.sub("_", call_id or "") or "toolu_missing"


def _is_error(content: str) -> bool:
    try:
        value = json.loads(content)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("ok") is False


def to_anthropic_messages(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Our messages -> (system, Anthropic messages)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    started = False

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            prev = out[-1]["content"]
            # tool_result blocks must open a user turn: keep them ahead of text
            if role == "user" and any(b["type"] == "tool_result" for b in blocks):
                results = [b for b in blocks if b["type"] == "tool_result"]
                others = [b for b in blocks if b["type"] != "tool_result"]
                n = sum(1 for b in prev if b["type"] == "tool_result")
                prev[n:n] = results
                prev.extend(others)
            else:
                prev.extend(blocks)
        else:
            out.append({"role": role, "content": list(blocks)})

    for m in messages:
        if m.role == "system":
            if not started:
                if m.content:
                    system.append(m.content)
            elif m.content:
                push("user", [{"type": "text", "text": f"[system] {m.content}"}])
            continue
        started = True
        if m.role == "user":
            push("user", [{"type": "text", "text": m.content}] if m.content else [])
        elif m.role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
            for c in m.tool_calls:
                blocks.append({"type": "tool_use", "id": _tool_id(c.id), "name": c.name,
                               "input": {} if c.raw_arguments is not None else c.arguments})
            push("assistant", blocks)
        elif m.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": _tool_id(m.tool_call_id),
                                     "content": m.content or "(empty)"}
            if _is_error(m.content):
                block["is_error"] = True
            push("user", [block])
    if out and out[0]["role"] != "user":   # the API wants a user turn first
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "(conversation start)"}]})
    return "\n\n".join(system), out


def to_anthropic_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]


class AnthropicModel:
    """A :class:`~tether.models.Model` over ``POST {base_url}/v1/messages``."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "ANTHROPIC_API_KEY",
                 base_url_env: str | None = "ANTHROPIC_BASE_URL", options: ModelOptions = ModelOptions(),
                 name: str | None = None):
        if importlib.util.find_spec("anthropic") is None:
            raise UsageError(INSTALL_HINT)
        if not model:
            raise UsageError("an Anthropic model needs a model name, e.g. 'anthropic:claude-sonnet-4-5'")
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.base_url_env = base_url_env
        self.options = options
        self.name = name or f"anthropic:{model}"
        self.stats = AdapterStats()
        self.limit = ConnectionLimit(options.max_connections or default_connections(self.base_url))

    def __repr__(self) -> str:
        return f"AnthropicModel(name={self.name!r})"

    def body(self, request: ModelRequest) -> tuple[dict[str, Any], bool]:
        tools, ask_offered = offered_tools(request.tools, self.options)
        system, messages = to_anthropic_messages(request.messages)
        if not messages:   # the API wants at least one user turn
            messages = [{"role": "user", "content": [{"type": "text", "text": "(no message)"}]}]
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "max_tokens": self.options.max_tokens or DEFAULT_MAX_TOKENS}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = to_anthropic_tools(tools)
        if self.options.temperature is not None:
            body["temperature"] = self.options.temperature
        return body, ask_offered

    async def request(self, request: ModelRequest) -> ModelResponse:
        check_model_requests_allowed(self.name)
        self.stats.requests += 1
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise UsageError(f"{self.name}: ${self.api_key_env} is not set; export your key there "
                             "(tether reads keys from the environment only)")
        base_url = self.base_url or (os.environ.get(self.base_url_env) if self.base_url_env else None) or None
        body, ask_offered = self.body(request)
        import anthropic

        client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, max_retries=0, timeout=self.options.timeout,
                                          http_client=sdk_http_client(anthropic))
        extra = dict(self.options.extra_body or {})

        secrets = [key]
        attempts: list[dict[str, Any]] = []
        data = await sdk_roundtrip(
            anthropic, client,
            lambda: client.messages.with_raw_response.create(**body, extra_body=extra or None, timeout=self.options.timeout),
            model=self.name, step=request.step, options=self.options, stats=self.stats, secrets=secrets,
            limit=self.limit, log_attempts=attempts)
        response = self.parse(data, request, ask_offered=ask_offered, secrets=secrets)
        return response.model_copy(update={"attempts": attempts, "params": self.params()})

    def params(self) -> dict[str, Any]:
        """The request parameters sent besides messages and tools (recorded on each request event)."""
        out: dict[str, Any] = {"max_tokens": self.options.max_tokens or DEFAULT_MAX_TOKENS}
        if self.options.temperature is not None:
            out["temperature"] = self.options.temperature
        out.update(self.options.extra_body or {})
        return out

    def parse(self, data: dict[str, Any], request: ModelRequest, *, ask_offered: bool,
              secrets: tuple[str, ...] | list[str] = ()) -> ModelResponse:
        content = data.get("content")
        if data.get("type") == "error" or not isinstance(content, list):
            what = (f"error in a 200 body: {json.dumps(data.get('error'), ensure_ascii=False)[:300]}"
                    if data.get("type") == "error" else
                    f"no content list in the body (keys: {', '.join(sorted(data)) or 'none'})")
            self.stats.failures += 1
            raise ProviderFailure(self.name, request.step, redact(what, secrets), reason="bad_body", status=200)
        texts: list[str] = []
        calls: list[RawCall] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif block.get("type") == "tool_use":
                calls.append(RawCall(id=block.get("id"), name=str(block.get("name") or ""), arguments=block.get("input")))
        decision = build_decision(calls, "".join(texts), tools=request.tools, ask_user_offered=ask_offered,
                                  stats=self.stats, step=request.step)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        input_tokens = sum(int(usage.get(k) or 0) for k in
                           ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
                           if isinstance(usage.get(k), (int, float)))
        stop = data.get("stop_reason")
        return ModelResponse(decision=decision, finish_reason=stop[:40] if isinstance(stop, str) and stop else None,
                             usage=make_usage(self.model, input_tokens, usage.get("output_tokens"),
                                              prices=self.options.prices))



def from_anthropic_spec(rest: str) -> AnthropicModel:
    """``anthropic:MODEL``."""
    if not rest:
        raise UsageError("spec 'anthropic:' needs a model name, e.g. 'anthropic:claude-sonnet-4-5'")
    return AnthropicModel(rest)
