"""A loopback OpenAI-compatible server for tests (it speaks Anthropic Messages too).

Real HTTP on 127.0.0.1 (stdlib ``http.server`` in a thread, ephemeral port),
so the adapters are tested end to end with no client mocking::

    from tether.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        server.add_rate_limit(retry_after=1)                 # one 429, then ...
        server.add_tool_calls(("search", {"q": "x"}), ("open", {"id": 3}))
        server.add_text("done")
        model = resolve_model(f"openai-compat:{server.base_url}#fake-model")
        ...
        assert server.requests[1].tool_names == ["search", "open", "ask_user"]
        server.assert_exhausted()

Each ``add_*`` call queues exactly one HTTP response. The queue is strict: a
request with nothing left gets a 400 ``script_exhausted`` error (never a
recycled answer) and :meth:`FakeOpenAIServer.assert_exhausted` fails on
extra requests and on leftovers. A ``responder`` callable, if given, answers
once the queue is empty (handy for long eval runs).

Routes: ``POST .../chat/completions`` (OpenAI), ``POST .../messages``
(Anthropic; point the SDK at :attr:`anthropic_base_url`), ``GET .../models``.
Scripted answers (text, tool calls, a :class:`~tether.messages.Decision`) are
rendered in the flavour of the route they are asked on.

Faults: :meth:`add_rate_limit` (429 + Retry-After), :meth:`add_server_error`
(5xx), :meth:`add_error` (any status; ``echo_headers=True`` echoes the request
headers, credentials included, in the body: the adapter must redact them),
:meth:`add_hang` (hold the request, then close without answering),
:meth:`add_malformed_json`, :meth:`add_truncated` (Content-Length promises
more than is sent), :meth:`add_wrong_content_type`.

Recorded requests keep credentials out: the ``authorization`` /
``x-api-key`` headers are stored redacted and only a hash is kept;
:meth:`ReceivedRequest.has_credential` checks a key against it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

from ..errors import ScriptExhausted, ScriptLeftover
from ..messages import Decision, DecisionKind, ToolCallRequest

__all__ = ["FakeOpenAIServer", "ReceivedRequest", "fake_openai_server", "insisting"]

_CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key")


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass
class ReceivedRequest:
    """One request the server received (credentials redacted)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    text: str
    at: float                       # time.monotonic() when it arrived
    _credential_hashes: tuple[str, ...] = ()

    @property
    def api(self) -> str:
        if self.path.rstrip("/").endswith("/chat/completions"):
            return "openai"
        if self.path.rstrip("/").endswith("/messages"):
            return "anthropic"
        return "other"

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools", []) or []) if isinstance(self.body, dict) else []

    @property
    def tool_names(self) -> list[str]:
        return [t.get("function", {}).get("name") if "function" in t else t.get("name") for t in self.tools]

    def has_credential(self, secret: str) -> bool:
        """Whether ``secret`` was sent as the key (bearer token or x-api-key)."""
        return _hash(secret) in self._credential_hashes


# -- the script ----------------------------------------------------------------
@dataclass
class _Call:
    name: str
    arguments: dict[str, Any] | str
    id: str | None = None


@dataclass
class _Item:
    kind: str                                    # answer | body | error | hang | malformed | truncated | ctype
    text: str = ""
    calls: list[_Call] = field(default_factory=list)
    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    usage: tuple[int, int] | None = None
    cost: float | None = None
    seconds: float = 0.0
    echo_headers: bool = False
    content_type: str = "text/html; charset=utf-8"


Responder = Callable[[ReceivedRequest], "Decision | str | dict[str, Any]"]


class FakeOpenAIServer:
    """The loopback server. Use as a context manager, or call start()/stop()."""

    def __init__(self, *, responder: Responder | None = None, model: str = "fake-model", host: str = "127.0.0.1",
                 port: int = 0):
        self.responder = responder
        self.model = model
        self.host = host
        self.port = port
        self.requests: list[ReceivedRequest] = []
        self.errors: list[str] = []          # handler errors (a client gone mid-answer, ...)
        self._queue: list[_Item] = []
        self._scripted = 0
        self._served = 0
        self._unscripted = 0                 # requests that found the queue empty (and no responder)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------
    def start(self) -> "FakeOpenAIServer":
        if self._httpd is not None:
            return self
        self._stop.clear()
        httpd = _Server((self.host, self.port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-openai-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stop.set()                     # release hanging handlers
        httpd.shutdown()
        httpd.server_close()                 # joins the handler threads
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """For the OpenAI SDK / ``openai-compat:`` specs (ends in ``/v1``)."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """For the Anthropic SDK (it appends ``/v1/messages`` itself)."""
        return self.url

    def spec(self, model: str | None = None) -> str:
        """An ``openai-compat:`` spec string that points at this server."""
        return f"openai-compat:{self.base_url}#{model or self.model}"

    # -- scripting: each call queues one response -------------------------------------
    def _add(self, item: _Item) -> "FakeOpenAIServer":
        with self._lock:
            self._queue.append(item)
            self._scripted += 1
        return self

    def add_text(self, text: str, *, usage: tuple[int, int] | None = None, cost: float | None = None) -> "FakeOpenAIServer":
        """A plain assistant answer."""
        return self._add(_Item("answer", text=text, usage=usage, cost=cost))

    def add_tool_calls(self, *calls: tuple[str, dict[str, Any] | str] | tuple[str, dict[str, Any] | str, str]
                       | ToolCallRequest, text: str = "", usage: tuple[int, int] | None = None,
                       cost: float | None = None) -> "FakeOpenAIServer":
        """Tool calls in one turn, in order. Arguments given as a string are sent
        verbatim (use that for malformed JSON)."""
        out: list[_Call] = []
        for c in calls:
            if isinstance(c, ToolCallRequest):
                out.append(_Call(c.name, c.raw_arguments if c.raw_arguments is not None else c.arguments, c.id))
            else:
                out.append(_Call(c[0], c[1], c[2] if len(c) > 2 else None))  # type: ignore[misc]
        return self._add(_Item("answer", text=text, calls=out, usage=usage, cost=cost))

    def add_decision(self, decision: Decision, *, usage: tuple[int, int] | None = None) -> "FakeOpenAIServer":
        """A Decision: a question becomes an ``ask_user`` tool call."""
        return self._add(_decision_item(decision, usage))

    def add_body(self, body: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> "FakeOpenAIServer":
        """A raw JSON body, sent as is."""
        return self._add(_Item("body", body=body, status=status, headers=dict(headers or {})))

    def add_rate_limit(self, retry_after: float | str | None = 1, *, retry_after_ms: float | None = None) -> "FakeOpenAIServer":
        """429 with ``Retry-After`` (seconds, or a string such as an HTTP date)
        and/or ``retry-after-ms``."""
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["Retry-After"] = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
        if retry_after_ms is not None:
            headers["retry-after-ms"] = f"{retry_after_ms:g}"
        return self._add(_Item("error", status=429, headers=headers, text="Rate limit reached for requests"))

    def add_server_error(self, status: int = 500, message: str = "The server had an error while processing your request") -> "FakeOpenAIServer":
        return self._add(_Item("error", status=status, text=message))

    def add_error(self, status: int, message: str = "error", *, echo_headers: bool = False,
                  headers: dict[str, str] | None = None) -> "FakeOpenAIServer":
        """Any error status. ``echo_headers`` puts the request headers, key
        included, in the body, as a misconfigured proxy might."""
        return self._add(_Item("error", status=status, text=message, echo_headers=echo_headers,
                               headers=dict(headers or {})))

    def add_hang(self, seconds: float = 30.0) -> "FakeOpenAIServer":
        """Hold the request ``seconds`` (or until stop), then close without answering."""
        return self._add(_Item("hang", seconds=seconds))

    def add_malformed_json(self) -> "FakeOpenAIServer":
        return self._add(_Item("malformed"))

    def add_truncated(self) -> "FakeOpenAIServer":
        """A valid answer cut halfway: Content-Length promises more than is sent."""
        return self._add(_Item("truncated", text="this answer is cut"))

    def add_wrong_content_type(self, content_type: str = "text/html; charset=utf-8") -> "FakeOpenAIServer":
        return self._add(_Item("ctype", content_type=content_type))

    # -- checks ------------------------------------------------------------------
    @property
    def pending(self) -> int:
        return len(self._queue)

    def assert_exhausted(self) -> None:
        """Fail on extra requests (asked for more than was scripted) or leftovers."""
        name = f"fake_openai {self.url}"
        if self._unscripted:
            raise ScriptExhausted(name, self._scripted + 1, self._scripted)
        if self._queue:
            raise ScriptLeftover(name, self._served, self._scripted, self._served + 1)

    # -- serving (called from handler threads) ---------------------------------------
    def _next(self, req: ReceivedRequest) -> _Item | None:
        with self._lock:
            self.requests.append(req)
            if self._queue:
                self._served += 1
                return self._queue.pop(0)
        if self.responder is not None:
            out = self.responder(req)
            if isinstance(out, Decision):
                return _decision_item(out, None)
            if isinstance(out, str):
                return _Item("answer", text=out)
            return _Item("body", body=out)
        with self._lock:
            self._unscripted += 1
        return None

    def _render_answer(self, item: _Item, req: ReceivedRequest) -> dict[str, Any]:
        n = len(self.requests)
        model = req.body.get("model", self.model) if isinstance(req.body, dict) else self.model
        out_chars = len(item.text) + sum(len(c.name) + len(json.dumps(c.arguments)) for c in item.calls)
        tokens_in, tokens_out = item.usage or (max(1, len(req.text) // 4), max(1, out_chars // 4))
        if req.api == "anthropic":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": item.text}] if item.text else []
            for i, c in enumerate(item.calls):
                args: Any = c.arguments
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        pass
                blocks.append({"type": "tool_use", "id": c.id or f"toolu_fake_{n}_{i}", "name": c.name, "input": args})
            usage: dict[str, Any] = {"input_tokens": tokens_in, "output_tokens": tokens_out}
            return {"id": f"msg_fake_{n}", "type": "message", "role": "assistant", "model": model, "content": blocks,
                    "stop_reason": "tool_use" if item.calls else "end_turn", "stop_sequence": None, "usage": usage}
        message: dict[str, Any] = {"role": "assistant", "content": item.text or None}
        if item.calls:
            message["tool_calls"] = [
                {"id": c.id or f"call_fake_{n}_{i}", "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments if isinstance(c.arguments, str)
                              else json.dumps(c.arguments, ensure_ascii=False)}}
                for i, c in enumerate(item.calls)]
        usage = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}
        if item.cost is not None:
            usage["cost"] = item.cost
        return {"id": f"chatcmpl-fake-{n}", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if item.calls else "stop"}],
                "usage": usage}

    def _error_body(self, item: _Item, req: ReceivedRequest, raw_headers: dict[str, str]) -> dict[str, Any]:
        kind = {429: "rate_limit_error", 401: "authentication_error", 400: "invalid_request_error"}.get(
            item.status, "server_error" if item.status >= 500 else "invalid_request_error")
        message = item.text
        if item.echo_headers:
            message += " | request headers: " + json.dumps(raw_headers)
        if req.api == "anthropic":
            return {"type": "error", "error": {"type": kind, "message": message}}
        return {"error": {"message": message, "type": kind, "code": None}}


def _decision_item(decision: Decision, usage: tuple[int, int] | None) -> _Item:
    if decision.kind == DecisionKind.QUESTION:
        return _Item("answer", calls=[_Call("ask_user", {"question": decision.text})], usage=usage)
    if decision.kind == DecisionKind.TOOL_CALLS:
        return _Item("answer", text=decision.text, usage=usage, calls=[
            _Call(c.name, c.raw_arguments if c.raw_arguments is not None else c.arguments, c.id)
            for c in decision.tool_calls])
    return _Item("answer", text=decision.text, usage=usage)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = True
    fake: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:   # no tracebacks on stderr
        import sys

        exc = sys.exc_info()[1]
        self.fake.errors.append(f"{type(exc).__name__}: {exc}")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"      # one request per connection: simple and predictable
    timeout = 30                       # socket timeout: a silent client cannot pin a thread

    def log_message(self, format: str, *args: Any) -> None:   # quiet
        pass

    def _send(self, status: int, payload: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload) if length is None else length))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(body, ensure_ascii=False).encode("utf-8"), headers=headers)

    def _record(self, text: str) -> tuple[ReceivedRequest, dict[str, str]]:
        raw_headers = {k.lower(): v for k, v in self.headers.items()}
        hashes: list[str] = []
        shown: dict[str, str] = {}
        for k, v in raw_headers.items():
            if k in _CREDENTIAL_HEADERS:
                token = v.split(None, 1)[1] if k == "authorization" and " " in v else v
                hashes.append(_hash(token.strip()))
                shown[k] = "[redacted]"
            else:
                shown[k] = v
        try:
            body = json.loads(text) if text else None
        except ValueError:
            body = None
        return ReceivedRequest(self.command, self.path, shown, body, text, time.monotonic(), tuple(hashes)), raw_headers

    def do_GET(self) -> None:
        fake = self.server.fake
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": fake.model, "object": "model", "owned_by": "tether"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        text = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        req, raw_headers = self._record(text)
        if req.api == "other":
            with fake._lock:
                fake.requests.append(req)
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        item = fake._next(req)
        if item is None:
            message = (f"fake_openai: no scripted response left for request #{len(fake.requests)} "
                       f"({fake._scripted} scripted)")
            body = ({"type": "error", "error": {"type": "script_exhausted", "message": message}} if req.api == "anthropic"
                    else {"error": {"message": message, "type": "script_exhausted", "code": None}})
            self._json(400, body)
            return
        try:
            self._serve(item, req, raw_headers)
        except (BrokenPipeError, ConnectionResetError):   # the client gave up (a timeout test)
            fake.errors.append("client went away")

    def _serve(self, item: _Item, req: ReceivedRequest, raw_headers: dict[str, str]) -> None:
        fake = self.server.fake
        if item.kind == "answer":
            self._json(200, fake._render_answer(item, req))
        elif item.kind == "body":
            self._json(item.status, item.body, item.headers)
        elif item.kind == "error":
            self._json(item.status, fake._error_body(item, req, raw_headers), item.headers)
        elif item.kind == "hang":
            fake._stop.wait(item.seconds)
            self.close_connection = True          # no answer at all
        elif item.kind == "malformed":
            self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"index": 0, "message": {"role": "assist')
        elif item.kind == "truncated":
            full = json.dumps(fake._render_answer(_Item("answer", text=item.text), req)).encode("utf-8")
            half = full[: len(full) // 2]
            self._send(200, half, length=len(full))
            self.close_connection = True
        elif item.kind == "ctype":
            self._send(200, b"<html><body><h1>Welcome</h1></body></html>", content_type=item.content_type)


def fake_openai_server(**kwargs: Any) -> Iterator[FakeOpenAIServer]:
    """Generator for a pytest fixture::

        fake_openai = pytest.fixture(fake_openai_server, name="fake_openai")
    """
    with FakeOpenAIServer(**kwargs) as server:
        yield server


def insisting(tool: str, arguments: dict[str, Any], *, final: str = "I could not finish this.") -> Responder:
    """A responder that keeps asking for the same call of ``tool`` (a stubborn
    model), with a fresh call id each time; a request that offers no tools (a
    guard's finish-up) gets ``final`` as its text answer."""
    count = [0]

    def respond(req: ReceivedRequest) -> Decision:
        count[0] += 1
        if not req.tool_names:
            return Decision(kind=DecisionKind.FINAL, text=final)
        return Decision(kind=DecisionKind.TOOL_CALLS,
                        tool_calls=[ToolCallRequest(id=f"call_{count[0]}", name=tool, arguments=arguments)])

    return respond
