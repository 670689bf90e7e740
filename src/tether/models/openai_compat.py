"""OpenAI-compatible chat completions through the official ``openai`` SDK.

Works with OpenAI itself and any server that speaks the protocol (vLLM,
Ollama, llama.cpp, LM Studio, a LiteLLM proxy). Spec strings::

    openai:gpt-4.1-mini                         # OPENAI_API_KEY, OPENAI_BASE_URL as the SDK reads them
    openai-compat:http://127.0.0.1:8080/v1#qwen2.5-7b-instruct   # any compatible base URL, '#' then the model

Keys come from the environment only (``OPENAI_API_KEY``; for
``openai-compat:`` ``OPENAI_COMPAT_API_KEY``, optional). The SDK is imported
lazily: ``pip install 'tether[openai]'``. See ``docs/models.md``.
"""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Any
from urllib.parse import parse_qsl, urlsplit

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
from .tokens import estimate_tokens

__all__ = [
    "AdapterStats", "ModelOptions", "OpenAIChatModel", "ProviderFailure", "RetryOptions",
    "from_compat_spec", "from_openai_spec", "to_openai_messages", "to_openai_tools",
]

INSTALL_HINT = "the OpenAI adapter needs the openai SDK: pip install 'tether[openai]'"
NO_KEY = "tether-no-key"   # placeholder sent to servers that need no key (the SDK insists on one)


def _require_sdk() -> None:
    if importlib.util.find_spec("openai") is None:
        raise UsageError(INSTALL_HINT)


# -- mapping ------------------------------------------------------------------
def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Our messages -> chat completion messages.

    A tool call whose arguments were not a JSON object goes back as ``{}``
    (some servers re-parse the history and reject invalid JSON); the call's
    error result already tells the model what was wrong.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            out.append({
                "role": "assistant",
                "content": m.content or "",
                "tool_calls": [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name,
                                  "arguments": "{}" if c.raw_arguments is not None
                                  else json.dumps(c.arguments, ensure_ascii=False)}}
                    for c in m.tool_calls
                ],
            })
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def to_openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [{"type": "function",
             "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in tools]


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):   # some servers send content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return str(content)


# -- the model ------------------------------------------------------------------
class OpenAIChatModel:
    """A :class:`~tether.models.Model` over ``POST {base_url}/chat/completions``.

    ``base_url=None`` means ``$OPENAI_BASE_URL`` or the SDK's default
    (api.openai.com). The key is read from ``$api_key_env`` at request time;
    it is required for api.openai.com only (local servers get a placeholder).
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 base_url_env: str | None = "OPENAI_BASE_URL", options: ModelOptions = ModelOptions(),
                 name: str | None = None):
        _require_sdk()
        if not model:
            raise UsageError("an OpenAI model needs a model name, e.g. 'openai:gpt-4.1-mini'")
        if base_url is not None:
            _check_url(base_url)
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.base_url_env = base_url_env
        self.options = options
        self.name = name or (f"openai-compat:{base_url}#{model}" if base_url else f"openai:{model}")
        self.stats = AdapterStats()
        self.limit = ConnectionLimit(options.max_connections or default_connections(base_url))

    def __repr__(self) -> str:
        return f"OpenAIChatModel(name={self.name!r})"

    def _endpoint(self) -> tuple[str | None, str]:
        """(base_url or None for the SDK default, api key)."""
        base_url = self.base_url
        if base_url is None and self.base_url_env:
            base_url = os.environ.get(self.base_url_env) or None
        key = os.environ.get(self.api_key_env, "").strip()
        official = base_url is None or (urlsplit(base_url).hostname or "").endswith("api.openai.com")
        if not key:
            if official:
                raise UsageError(f"{self.name}: ${self.api_key_env} is not set; export your key there "
                                 "(tether reads keys from the environment only)")
            key = NO_KEY
        return base_url, key

    def body(self, request: ModelRequest) -> tuple[dict[str, Any], bool]:
        """The JSON body sent for ``request`` and whether ask_user was offered."""
        tools, ask_offered = offered_tools(request.tools, self.options)
        body: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(request.messages)}
        if tools:
            body["tools"] = to_openai_tools(tools)
        if self.options.temperature is not None:
            body["temperature"] = self.options.temperature
        if self.options.max_tokens is not None:
            body["max_tokens"] = self.options.max_tokens
        return body, ask_offered

    def params(self) -> dict[str, Any]:
        """The request parameters sent besides messages and tools (recorded on each request event)."""
        out: dict[str, Any] = {}
        if self.options.temperature is not None:
            out["temperature"] = self.options.temperature
        if self.options.max_tokens is not None:
            out["max_tokens"] = self.options.max_tokens
        out.update(self.options.extra_body or {})
        return out

    async def request(self, request: ModelRequest) -> ModelResponse:
        check_model_requests_allowed(self.name)
        self.stats.requests += 1
        base_url, key = self._endpoint()
        body, ask_offered = self.body(request)
        import openai

        client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=self.options.timeout,
                                    http_client=sdk_http_client(openai))
        extra = dict(self.options.extra_body or {})

        secrets = [key]
        attempts: list[dict[str, Any]] = []
        data = await sdk_roundtrip(
            openai, client,
            lambda: client.chat.completions.with_raw_response.create(
                **body, extra_body=extra or None, timeout=self.options.timeout),
            model=self.name, step=request.step, options=self.options, stats=self.stats, secrets=secrets,
            limit=self.limit, log_attempts=attempts)
        response = self.parse(data, request, ask_offered=ask_offered, secrets=secrets)
        return response.model_copy(update={"attempts": attempts, "params": self.params()})

    def parse(self, data: dict[str, Any], request: ModelRequest, *, ask_offered: bool,
              secrets: tuple[str, ...] | list[str] = ()) -> ModelResponse:
        """A chat completion body -> ModelResponse (ProviderFailure if it is not one)."""
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            error = data.get("error")
            what = f"error in a 200 body: {json.dumps(error, ensure_ascii=False)[:300]}" if error else \
                f"no choices in the body (keys: {', '.join(sorted(data)) or 'none'})"
            self.stats.failures += 1
            raise ProviderFailure(self.name, request.step, redact(what, secrets), reason="bad_body", status=200)
        message = choices[0].get("message") or {}
        text = _text_of(message.get("content"))
        raw_calls = message.get("tool_calls") or []
        if not raw_calls and isinstance(message.get("function_call"), dict):   # the legacy single call
            raw_calls = [{"id": None, "function": message["function_call"]}]
        calls: list[RawCall] = []
        for c in raw_calls if isinstance(raw_calls, list) else []:
            fn = (c.get("function") if isinstance(c, dict) else None) or {}
            calls.append(RawCall(id=c.get("id") if isinstance(c, dict) else None,
                                 name=str(fn.get("name") or ""), arguments=fn.get("arguments")))
        decision = build_decision(calls, text, tools=request.tools, ask_user_offered=ask_offered,
                                  stats=self.stats, step=request.step)
        finish = choices[0].get("finish_reason")
        finish = finish[:40] if isinstance(finish, str) and finish else None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
        if usage is None:
            self.stats.usage_estimated += 1
            prompt = estimate_tokens(json.dumps(to_openai_messages(request.messages), ensure_ascii=False))
            completion = estimate_tokens(json.dumps(message, ensure_ascii=False))
            return ModelResponse(decision=decision, finish_reason=finish,
                                 usage=make_usage(self.model, prompt, completion, prices=self.options.prices))
        return ModelResponse(decision=decision, finish_reason=finish, usage=make_usage(
            self.model, usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("cost"),
            prices=self.options.prices))



# -- spec strings -------------------------------------------------------------------
_SECRET_QUERY = ("key", "token", "secret", "auth", "password")


def _check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"not a base URL: {url!r} (expected http://host:port/v1)")
    if parts.username or parts.password:
        raise UsageError("credentials in a model spec are refused (specs end up in traces); "
                         "put the key in $OPENAI_COMPAT_API_KEY instead")
    for name, _ in parse_qsl(parts.query):
        if any(s in name.lower() for s in _SECRET_QUERY):
            raise UsageError(f"a {name!r} query parameter in a model spec is refused (specs end up in traces); "
                             "put the key in $OPENAI_COMPAT_API_KEY instead")


def from_openai_spec(rest: str) -> OpenAIChatModel:
    """``openai:MODEL``."""
    if not rest:
        raise UsageError("spec 'openai:' needs a model name, e.g. 'openai:gpt-4.1-mini'")
    return OpenAIChatModel(rest)


DEFAULT_COMPAT_MODEL = "default"


def from_compat_spec(rest: str) -> OpenAIChatModel:
    """``openai-compat:BASE_URL#MODEL`` (``#MODEL`` optional: 'default')."""
    url, _, model = rest.partition("#")
    if not url:
        raise UsageError("spec 'openai-compat:' needs a base URL, e.g. 'openai-compat:http://127.0.0.1:8080/v1#qwen'")
    url = url.rstrip("/")
    return OpenAIChatModel(model or DEFAULT_COMPAT_MODEL, base_url=url, api_key_env="OPENAI_COMPAT_API_KEY",
                           base_url_env=None)
