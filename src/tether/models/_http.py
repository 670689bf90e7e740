"""What the provider adapters share: options, retries, redaction, usage, decisions.

The adapters (``openai_compat``, ``anthropic``) use the official SDKs for the
transport only, with the SDK's own retries turned off. Everything a user can
see or tune lives here, so both providers behave the same way:

* :class:`ModelOptions` (with its :class:`RetryOptions`): one frozen config object.
* :func:`send_with_retries`: retries 408, 429, 5xx, timeouts and dropped
  connections with capped exponential backoff, honouring ``Retry-After``
  (seconds or an HTTP date) and ``retry-after-ms``; gives up with
  :class:`ProviderFailure` when retries or the total wait run out.
* :func:`redact`: keys never reach a message, a log line or a trace.
* :func:`build_decision`: tool calls / final text / the ``ask_user``
  pseudo-tool -> :class:`~tether.messages.Decision`, counting malformed calls.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Mapping

from ..errors import ModelFailure
from ..messages import Decision, ToolCallRequest, ToolSpec, Usage
from .tokens import DEFAULT_PRICES, price_of

log = logging.getLogger("tether.models")

Sleep = Callable[[float], Awaitable[None]]


# -- configuration ----------------------------------------------------------
@dataclass(frozen=True)
class RetryOptions:
    """When and how long to retry.

    Retried: HTTP 408, 429 and 5xx, timeouts and dropped connections (the last
    two only with ``retry_timeouts``). Not retried: other 4xx, and a 2xx whose
    body is not JSON (a wrong base URL does not get better by asking again).
    """

    max_retries: int = 3              # retries after the first attempt
    max_total_wait: float = 60.0      # seconds of sleeping between attempts, in all
    initial_backoff: float = 0.5      # first backoff when the server gives no Retry-After
    max_backoff: float = 8.0          # cap of one computed backoff (Retry-After is not capped by it)
    jitter: bool = True               # backoff drawn from [d/2, d]
    retry_timeouts: bool = True
    # A connection that cannot be opened (refused, no route, DNS) is retried at most
    # this often: nobody listening rarely starts listening within the backoff.
    max_connect_retries: int = 1

    def backoff(self, retry: int) -> float:
        """Delay before retry number ``retry`` (0-based) without a Retry-After."""
        delay = min(self.max_backoff, self.initial_backoff * (2 ** retry))
        return delay / 2 + random.uniform(0, delay / 2) if self.jitter else delay


@dataclass(frozen=True)
class ModelOptions:
    """Options every provider adapter takes (one object, passed through)."""

    timeout: float = 60.0             # seconds for one attempt on the wire (waiting for a connection slot not counted)
    # Requests in flight at once to this model; None: 16, or 1 for a server on this machine
    # (llama.cpp and Ollama answer one request at a time: more only queue up and time out).
    max_connections: int | None = None
    retry: RetryOptions = field(default_factory=RetryOptions)
    ask_user: bool = True             # offer the ask_user pseudo-tool (see docs/models.md)
    temperature: float | None = None
    max_tokens: int | None = None     # None: provider default (Anthropic: 4096)
    # USD per million tokens (input, output); None: tether.models.tokens.DEFAULT_PRICES.
    prices: Mapping[str, tuple[float, float]] | None = None
    extra_body: Mapping[str, Any] | None = None   # extra JSON fields sent as is
    sleep: Sleep = asyncio.sleep      # injectable for tests


@dataclass
class AdapterStats:
    """Counters an adapter keeps over its lifetime (``model.stats``)."""

    requests: int = 0                 # calls of request()
    attempts: int = 0                 # HTTP attempts, retries included
    retries: int = 0
    retry_wait_s: float = 0.0         # total seconds slept before retries
    failures: int = 0                 # requests that ended in ProviderFailure
    malformed_tool_calls: int = 0     # bad_arguments + unknown_tools
    bad_arguments: int = 0            # arguments that are not a JSON object
    unknown_tools: int = 0            # calls to a tool that was not offered
    ask_user_calls: int = 0           # ask_user pseudo-tool calls mapped to a question
    dropped_ask_user: int = 0         # ask_user calls dropped because real tool calls came with them
    usage_estimated: int = 0          # responses without usage (tokens estimated)


# -- errors -----------------------------------------------------------------
class ProviderFailure(ModelFailure):
    """A provider request failed for good. The message carries the numbers.

    ``reason`` is one of ``rate_limited``, ``server_error``, ``client_error``,
    ``timeout``, ``connection``, ``not_json``, ``wrong_content_type``,
    ``bad_body``, ``retry_after_too_long``. Always infrastructure: the provider
    could not be reached or kept failing, which says nothing about the agent.
    """

    infrastructure = True

    def __init__(self, model: str, step: int, detail: str, *, reason: str, status: int | None = None,
                 attempts: int = 1, retries: int = 0, waited_s: float = 0.0):
        self.reason = reason
        self.status = status
        self.attempts = attempts
        self.retries = retries
        self.waited_s = waited_s
        super().__init__(model, step, detail)


class TransportError(Exception):
    """Raised by an adapter's attempt function: ``kind`` is timeout or connection;
    ``connect`` is true when the connection could not even be opened."""

    def __init__(self, kind: str, detail: str, *, connect: bool = False):
        self.kind = kind
        self.detail = detail
        self.connect = connect
        super().__init__(detail)


@dataclass
class HTTPReply:
    status: int
    headers: Mapping[str, str]        # lower-cased names
    text: str

    @classmethod
    def of(cls, response: Any) -> "HTTPReply":
        """From an SDK raw response (``with_raw_response``) or an httpx response."""
        response = getattr(response, "http_response", response)
        return cls(response.status_code, {str(k).lower(): str(v) for k, v in response.headers.items()},
                   response.text)


def describe_connection_error(exc: BaseException) -> str:
    """An SDK connection error and its cause, without any request details."""
    parts = [str(exc) or type(exc).__name__]
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        parts.append(f"{type(cause).__name__}: {cause}")
    return "; ".join(parts)


# -- redaction --------------------------------------------------------------
_GENERIC_SECRETS = [
    re.compile(r"(?i)(bearer\s+)[^\s\"'\\,;]+"),
    re.compile(r"(?i)((?:x-api-key|api-key|api_key|authorization)[\\\"']*\s*[:=]\s*[\\\"']*)[^\s\"'\\,;]+"),
    re.compile(r"\b(sk-)[A-Za-z0-9_\-]{8,}"),
]


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Remove the given secrets and anything that looks like a credential."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    for pattern in _GENERIC_SECRETS:
        text = pattern.sub(lambda m: m.group(1) + "[redacted]", text)
    return text


def snippet(text: str, secrets: Iterable[str | None] = (), limit: int = 300) -> str:
    flat = " ".join(redact(text, secrets).split())
    return flat if len(flat) <= limit else flat[:limit] + f"... ({len(flat)} chars)"


# -- retries ----------------------------------------------------------------
RETRY_STATUSES = frozenset({408, 429}) | frozenset(range(500, 600))


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, then ``retry-after``
    (delta-seconds or an HTTP date). None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


_STATUS_REASON = {429: "rate_limited"}


class ConnectionLimit:
    """At most ``n`` requests in flight to one model, per event loop. Waiting
    for a slot happens before an attempt's timeout starts."""

    def __init__(self, n: int):
        if n < 1:
            raise ValueError(f"max_connections must be at least 1, got {n}")
        self.n = n
        self._by_loop: dict[int, asyncio.Semaphore] = {}

    def slot(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._by_loop.get(id(loop))
        if sem is None:
            if len(self._by_loop) > 64:     # loops come and go (asyncio.run per call in scripts)
                self._by_loop.clear()
            sem = self._by_loop[id(loop)] = asyncio.Semaphore(self.n)
        return sem


def default_connections(base_url: str | None) -> int:
    """1 for a server on this machine (one-at-a-time local servers), else 16."""
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "") if base_url else ""
    return 1 if host in ("localhost", "::1") or host.startswith("127.") else 16


async def send_with_retries(
    attempt: Callable[[], Awaitable[HTTPReply]],
    *,
    model: str,
    step: int,
    options: ModelOptions,
    stats: AdapterStats,
    secrets: Iterable[str | None] = (),
    limit: ConnectionLimit | None = None,
    log_attempts: list[dict[str, Any]] | None = None,
) -> HTTPReply:
    """Call ``attempt`` until it returns a 2xx reply, retrying what is worth it.

    Each attempt gets ``options.timeout`` seconds on the wire, counted once it
    holds a connection slot of ``limit``. Raises :class:`ProviderFailure`
    (never an SDK exception) when it gives up. ``log_attempts``, when given,
    gets one entry per attempt: its outcome, its time on the wire and the time
    it waited for a connection slot (``wire_ms``, ``queued_ms``).
    """
    retry_opts = options.retry
    secrets = list(secrets)
    attempts, waited = 0, 0.0

    def fail(reason: str, what: str, status: int | None = None) -> ProviderFailure:
        stats.failures += 1
        retries = attempts - 1
        detail = (f"{what} [{_plural(attempts, 'attempt')}, {retries} {'retry' if retries == 1 else 'retries'}, "
                  f"{waited:.2f}s waited]")
        return ProviderFailure(model, step, redact(detail, secrets), reason=reason, status=status,
                               attempts=attempts, retries=retries, waited_s=waited)

    while True:
        attempts += 1
        stats.attempts += 1
        retry_after: float | None = None
        status: int | None = None
        connect_failed = False
        entry: dict[str, Any] = {"attempt": attempts, "outcome": "", "wire_ms": 0.0, "queued_ms": 0.0}
        if log_attempts is not None:
            log_attempts.append(entry)
        queued_at = time.perf_counter()
        on_wire = queued_at
        try:
            if limit is not None:
                async with limit.slot():
                    on_wire = time.perf_counter()
                    entry["queued_ms"] = round((on_wire - queued_at) * 1000, 3)
                    async with asyncio.timeout(options.timeout):
                        reply = await attempt()
            else:
                async with asyncio.timeout(options.timeout):
                    reply = await attempt()
        except TimeoutError:
            reason, what = "timeout", f"timed out after {options.timeout:g}s"
        except TransportError as exc:
            reason, connect_failed = exc.kind, exc.connect
            what = (f"timed out after {options.timeout:g}s" if exc.kind == "timeout"
                    else f"connection failed: {snippet(exc.detail, secrets)}")
        else:
            status = reply.status
            entry["wire_ms"] = round((time.perf_counter() - on_wire) * 1000, 3)
            entry["outcome"] = f"HTTP {status}"
            if 200 <= status < 300:
                return reply
            body = snippet(reply.text, secrets)
            if status not in RETRY_STATUSES:
                raise fail("client_error", f"HTTP {status}: {body or '(empty body)'}", status)
            reason = _STATUS_REASON.get(status, "server_error")
            what = f"HTTP {status}: {body or '(empty body)'}"
            retry_after = parse_retry_after(reply.headers)

        if not entry["outcome"]:
            entry["wire_ms"] = round((time.perf_counter() - on_wire) * 1000, 3)
            entry["outcome"] = reason
        if reason in ("timeout", "connection") and not retry_opts.retry_timeouts:
            raise fail(reason, what, status)
        retry = attempts - 1
        if retry >= retry_opts.max_retries or (connect_failed and retry >= retry_opts.max_connect_retries):
            raise fail(reason, f"gave up: {what}", status)
        delay = retry_after if retry_after is not None else retry_opts.backoff(retry)
        left = retry_opts.max_total_wait - waited
        if delay > left:
            if retry_after is not None:
                raise fail("retry_after_too_long",
                           f"{what}; the server asked to wait {retry_after:g}s (Retry-After), more than the "
                           f"{max(left, 0):g}s left of max_total_wait={retry_opts.max_total_wait:g}s", status)
            raise fail(reason, f"gave up: {what}; the next backoff ({delay:.2f}s) would pass "
                               f"max_total_wait={retry_opts.max_total_wait:g}s", status)
        allowed = min(retry_opts.max_retries, retry_opts.max_connect_retries) if connect_failed else retry_opts.max_retries
        log.warning("%s: %s (attempt %d of %d); retrying in %.2fs%s", model, redact(what, secrets), attempts,
                    allowed + 1, delay, " (Retry-After)" if retry_after is not None else "")
        await options.sleep(delay)
        waited += delay
        stats.retries += 1
        stats.retry_wait_s += delay


_TLS: dict[tuple[str, str | None, str | None], Any] = {}


def sdk_http_client(sdk: Any) -> Any:
    """The HTTP client for one request through ``sdk`` (``openai`` or ``anthropic``): the SDK's own
    ``DefaultAsyncHttpxClient`` with the TLS settings its HTTP library builds by default, built once per process
    and shared (an ``ssl.SSLContext`` is safe to share). Building them parses the CA certificates, ~30-50 ms of
    CPU that a new SDK client per request would otherwise spend on every request, plain-HTTP endpoints included.
    SSL_CERT_FILE and SSL_CERT_DIR, which that default reads, are part of the cache key."""
    factory = sdk.DefaultAsyncHttpxClient
    base = next(c for c in factory.__mro__ if c.__name__ == "AsyncClient")
    lib = sys.modules[base.__module__.partition(".")[0]]               # httpx, or the SDK's successor of it
    key = (lib.__name__, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _TLS.get(key)
    if context is None:
        context = _TLS[key] = lib.create_ssl_context()
    return factory(verify=context)


async def sdk_roundtrip(sdk: Any, client: Any, create: Callable[[], Awaitable[Any]], *, model: str, step: int,
                        options: ModelOptions, stats: AdapterStats, secrets: list[str],
                        limit: ConnectionLimit | None = None, log_attempts: list[dict[str, Any]] | None = None) -> Any:
    """One request through an official SDK (``openai`` or ``anthropic``: both
    expose the same error classes) with tether's retries; returns the decoded
    JSON body. ``create`` makes the raw-response call."""

    async def attempt() -> HTTPReply:
        try:
            raw = await create()
        except sdk.APIStatusError as exc:
            return HTTPReply.of(exc.response)
        except sdk.APITimeoutError:
            raise TransportError("timeout", "timed out") from None
        except sdk.APIConnectionError as exc:
            cause = exc.__cause__ or exc.__context__
            raise TransportError("connection", describe_connection_error(exc),
                                 connect=type(cause).__name__ == "ConnectError") from None
        return HTTPReply.of(raw)

    async with client:
        reply = await send_with_retries(attempt, model=model, step=step, options=options, stats=stats, secrets=secrets,
                                        limit=limit, log_attempts=log_attempts)
    return decode_json_body(reply, model=model, step=step, stats=stats, secrets=secrets)


def decode_json_body(reply: HTTPReply, *, model: str, step: int, stats: AdapterStats,
                     secrets: Iterable[str | None] = ()) -> dict[str, Any]:
    """The reply body as a JSON object, or :class:`ProviderFailure` saying why not."""
    ctype = reply.headers.get("content-type", "")
    mime = ctype.split(";", 1)[0].strip().lower()

    def fail(reason: str, what: str) -> ProviderFailure:
        stats.failures += 1
        return ProviderFailure(model, step, redact(what, secrets), reason=reason, status=reply.status)

    if mime and not (mime == "application/json" or mime.endswith("+json")):
        raise fail("wrong_content_type",
                   f"HTTP {reply.status} with content type {ctype!r}, expected application/json "
                   f"(is the base URL right? OpenAI-compatible servers usually end in /v1): {snippet(reply.text, secrets, 120)}")
    try:
        data = json.loads(reply.text)
    except ValueError as exc:
        raise fail("not_json", f"HTTP {reply.status} body is not valid JSON ({exc.msg} at char {exc.pos}): "
                               f"{snippet(reply.text, secrets, 120)}") from None
    if not isinstance(data, dict):
        raise fail("bad_body", f"HTTP {reply.status} body is JSON but not an object: {snippet(reply.text, secrets, 120)}")
    return data


# -- usage and cost ---------------------------------------------------------
def _int(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def make_usage(model_id: str, input_tokens: Any, output_tokens: Any, reported_cost: Any = None,
               prices: Mapping[str, tuple[float, float]] | None = None) -> Usage:
    """Usage with a cost: the provider's own figure when it reports one
    (LiteLLM, OpenRouter), else tokens times the price table."""
    usage = Usage(input_tokens=_int(input_tokens), output_tokens=_int(output_tokens))
    if isinstance(reported_cost, (int, float)) and not isinstance(reported_cost, bool) and reported_cost >= 0:
        return usage.model_copy(update={"cost": float(reported_cost)})
    price = price_of(model_id, prices if prices is not None else DEFAULT_PRICES)
    if price is None:
        return usage
    return usage.model_copy(update={
        "cost": (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000})


# -- decisions ----------------------------------------------------------------
ASK_USER = "ask_user"

ASK_USER_TOOL = ToolSpec(
    name=ASK_USER,
    description=(
        "Ask the user a question and wait for the answer. Use it only for information only the user "
        "can give (a missing detail, a choice between options, a confirmation); use the other tools "
        "for everything else. Write the question in the user's language."
    ),
    parameters={
        "type": "object",
        "properties": {"question": {"type": "string", "description": "The question to the user."}},
        "required": ["question"],
    },
)


def offered_tools(tools: list[ToolSpec], options: ModelOptions) -> tuple[list[ToolSpec], bool]:
    """The tools to send, and whether the ask_user pseudo-tool is among them.

    Offered only when asked for, when the request has tools (a request without
    tools, like a guard's finish-up request, means "answer now"), and when no
    real tool is already called ``ask_user`` (the real tool wins).
    """
    if not options.ask_user or not tools or any(t.name == ASK_USER for t in tools):
        return list(tools), False
    return [*tools, ASK_USER_TOOL], True


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """(arguments, raw_arguments): raw_arguments is set when they are not a JSON object."""
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            value = json.loads(raw)
        except ValueError:
            return {}, raw
        if isinstance(value, dict):
            return value, None
        return {}, raw
    return {}, json.dumps(raw, ensure_ascii=False, default=str)


@dataclass
class RawCall:
    """A tool call as the provider sent it, before checking."""

    id: str | None
    name: str
    arguments: Any


def build_decision(calls: list[RawCall], text: str, *, tools: list[ToolSpec], ask_user_offered: bool,
                   stats: AdapterStats, step: int) -> Decision:
    """Map a provider answer to a Decision.

    Tool calls keep their order. A call to a tool that was not offered, or with
    arguments that are not a JSON object, is passed on (the run loop answers it
    with an error result the model sees) and counted in ``stats``. Calls to the
    ask_user pseudo-tool become a question, unless real tool calls came with
    them: then the real calls win and the question is dropped (counted).
    """
    if not calls:
        return Decision.final(text)
    known = {t.name for t in tools}
    real: list[ToolCallRequest] = []
    questions: list[str] = []
    for i, call in enumerate(calls):
        arguments, raw = parse_arguments(call.arguments)
        if ask_user_offered and call.name == ASK_USER:
            q = arguments.get("question")
            if raw is not None or not isinstance(q, str) or not q.strip():
                stats.malformed_tool_calls += 1
                stats.bad_arguments += 1
                q = q if isinstance(q, str) and q.strip() else (text or raw or "")
            questions.append(q.strip())
            continue
        if raw is not None:
            stats.malformed_tool_calls += 1
            stats.bad_arguments += 1
        elif call.name not in known:
            stats.malformed_tool_calls += 1
            stats.unknown_tools += 1
        real.append(ToolCallRequest(id=call.id or f"call_{step}_{i}", name=call.name, arguments=arguments,
                                    raw_arguments=raw))
    if real:
        stats.dropped_ask_user += len(questions)
        return Decision(kind="tool_calls", tool_calls=real, text=text)
    stats.ask_user_calls += len(questions)
    question = "\n".join(q for q in questions if q) or text
    return Decision.ask(question)
