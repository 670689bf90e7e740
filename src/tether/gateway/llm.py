"""The LLM gateway (``tether gateway``): an OpenAI-compatible HTTP endpoint in
front of a model API, guarding agents written in any language.

``POST .../chat/completions`` and ``POST .../responses`` (streamed or not) are
read: the conversation's run is found (:mod:`.conversations`), the guards
decide, and the request is forwarded (with a hint as one more system message
when there is one) or answered by the gateway (a stop). Every other path is
passed through untouched. The upstream's answer goes back byte for byte (a
stream chunk by chunk, as it arrives) while a copy is read for the record.
Keys travel in headers, which are never recorded.

The record is written by a thread of its own (:mod:`._writer`), never on the
event loop; a request's events (what it asked, what the guards said, what the
model answered) are committed before its response goes back to the client,
the end of a stream included, so what a client received is in the store even
if the gateway is killed right after.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import RunStop, UpstreamFailure
from ..ids import UnsafeId
from ._client import Pool, Response
from ._http import read_body, respond
from .conversations import Conversations, Decided
from .openai_format import (
    CHAT,
    RESPONSES,
    StreamReader,
    decision_of,
    final_response,
    final_stream,
    finish_up_request,
    history,
    with_hint,
)

_HOP = {b"host", b"content-length", b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade",
        b"proxy-connection", b"proxy-authorization", b"accept-encoding", b"x-tether-run"}
_HOP_BACK = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length"}
SWITCH_S = 0.0002
FINISH_UP = ("[tether] {reason}. Stop calling tools now. Write your final answer to the user: what was done, "
             "what was not, and why.")


@dataclass
class GatewayConfig:
    upstream: str                          # base URL, e.g. http://127.0.0.1:8000/v1
    guards: Callable[[], Sequence[Any]]
    guards_label: str = "on"
    store: Any = None
    stop_reply: str | None = None          # a fixed answer for a stop, instead of a finish-up request
    timeout: float = 600.0


def _error_body(message: str, kind: str = "tether_gateway_error") -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": None}}, ensure_ascii=False).encode()


def gateway_app(config: GatewayConfig) -> Any:
    base = config.upstream.rstrip("/")
    conversations = Conversations(guards=config.guards, label=config.guards_label, store=config.store,
                                  upstream=base)
    pool = Pool(base, timeout=config.timeout)

    def target(scope: dict[str, Any]) -> str:
        path = scope["path"]
        if path.startswith("/v1/") or path == "/v1":
            path = path[3:]
        query = scope.get("query_string") or b""
        return path + (("?" + query.decode("latin-1")) if query else "")

    def forward_headers(scope: dict[str, Any]) -> list[tuple[bytes, bytes]]:
        return [(k, v) for k, v in scope["headers"] if k not in _HOP]

    def back_headers(resp: Response) -> list[tuple[bytes, bytes]]:
        drop = _HOP_BACK if resp.chunked or resp.length is None else _HOP_BACK - {b"content-length"}
        return [(k, v) for k, v in resp.headers if k not in drop]

    async def unreachable(send: Any, failure: UpstreamFailure) -> None:
        await respond(send, 502, _error_body(f"tether gateway: the upstream {base}: {failure.detail}"))

    async def relay(resp: Response, send: Any) -> None:
        """The upstream's answer to the client as it arrives, untouched."""
        try:
            await send({"type": "http.response.start", "status": resp.status, "headers": back_headers(resp)})
            if resp.length is not None and not resp.chunked:
                await send({"type": "http.response.body", "body": await resp.read()})
                return
            async for chunk in resp.chunks():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except UpstreamFailure:
            await send({"type": "http.response.body", "body": b""})
        finally:
            resp.close()

    async def passthrough(scope: dict[str, Any], body: bytes, send: Any) -> None:
        try:
            resp = await pool.request(scope["method"], target(scope), forward_headers(scope), body)
        except UpstreamFailure as failure:
            await unreachable(send, failure)
            return
        await relay(resp, send)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    # What start-up made lives as long as the gateway: out of the collector's
                    # way, so a full collection walks the conversations only, not every import.
                    gc.collect()
                    gc.freeze()
                    # The store thread needs the interpreter briefly for each write; a busy
                    # event loop would otherwise keep it waiting 5 ms (Python's default) each time.
                    sys.setswitchinterval(SWITCH_S)
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    conversations.close("the gateway shut down before the agent came back to this conversation")
                    pool.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if body is None:
            await respond(send, 413, _error_body("request too large for the tether gateway"))
            return
        path = scope["path"].rstrip("/")
        kind = CHAT if path.endswith("/chat/completions") else RESPONSES if path.endswith("/responses") else None
        parsed: Any = None
        if kind is not None and scope["method"] == "POST":
            try:
                parsed = orjson.loads(body)
            except ValueError:
                parsed = None
        if not isinstance(parsed, dict):
            await passthrough(scope, body, send)
            return
        started: list[bool] = []

        async def tracked(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                started.append(True)
            await send(message)

        try:
            await guarded(scope, kind, body, parsed, tracked)
        except Exception as exc:          # a bug must not print a traceback nor leave the client hanging
            print(f"tether gateway: internal error on {scope['path']}: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
            if not started:
                await respond(send, 500, _error_body(f"tether gateway: internal error: {type(exc).__name__}"))

    async def guarded(scope: dict[str, Any], kind: str, body: bytes, request: dict[str, Any], send: Any) -> None:
        items = history(kind, request)
        model = str(request.get("model") or "")
        run_header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"x-tether-run"), None)
        previous = request.get("previous_response_id") if kind == RESPONSES else None
        try:
            conv = await conversations.get(run_header, kind, items, model,
                                           previous if isinstance(previous, str) else None)
        except UnsafeId as exc:           # an X-Tether-Run that is not an id
            await respond(send, 400, _error_body(str(exc), "invalid_request_error"))
            return
        tools = conv.tools(kind, request)
        decided = await conv.before(kind, items, tools, model, delta=isinstance(previous, str) and previous != "")
        streamed = bool(request.get("stream"))
        if decided.action == "stop":
            await answer_stop(kind, request, decided, model, streamed, send, scope)
            return
        if decided.hints:
            request = with_hint(kind, request, "\n".join(decided.hints))
            body = orjson.dumps(request)
        params = {k: v for k, v in request.items() if k in ("temperature", "top_p", "max_tokens", "stream",
                                                              "tool_choice", "max_output_tokens", "seed")}
        conv.record_request(tools, model, params, decided.hints)
        started = time.perf_counter()
        try:
            resp = await pool.request("POST", target(scope), forward_headers(scope), body)
        except UpstreamFailure as failure:
            await conversations.commit(conv)
            await unreachable(send, failure)
            return

        def record(decision: Any, usage: Any, response_id: Any) -> None:
            if isinstance(response_id, str):
                conversations.remember_response(response_id, conv)
            if not conv.finished:
                conv.record_response(decision, usage, (time.perf_counter() - started) * 1000)

        if streamed:
            await relay_stream(resp, send, kind, conv, record)
            return
        try:
            try:
                data = await resp.read()
            finally:
                resp.close()
        except UpstreamFailure as failure:
            await conversations.commit(conv)
            await unreachable(send, failure)
            return
        if resp.status < 400:
            try:
                whole = orjson.loads(data)
            except ValueError:
                whole = None
            if whole is not None:
                decision, usage = decision_of(kind, whole)
                record(decision, usage, whole.get("id") if kind == RESPONSES and isinstance(whole, dict) else None)
        await conversations.commit(conv)          # the record first, then the answer
        headers = [(k, v) for k, v in resp.headers if k not in _HOP_BACK]
        await send({"type": "http.response.start", "status": resp.status,
                    "headers": [*headers, (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})

    async def relay_stream(resp: Response, send: Any, kind: str, conv: Any, record: Any) -> None:
        """A stream to the client chunk by chunk, as it arrives; the record is committed
        before the chunk that ends it ([DONE], response.completed) goes on."""
        reader = StreamReader(kind) if resp.status < 400 else None
        recorded = False

        async def commit() -> None:
            nonlocal recorded
            recorded = True
            if reader is not None and (reader.ended or reader.text or reader.calls or reader.final):
                decision, usage = reader.decision()
                record(decision, usage, (reader.final or {}).get("id") if kind == RESPONSES else None)
            await conversations.commit(conv)

        try:
            await send({"type": "http.response.start", "status": resp.status, "headers": back_headers(resp)})
            async for chunk in resp.chunks():
                if reader is not None:
                    reader.feed(chunk)
                    if reader.ended and not recorded:
                        await commit()
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except UpstreamFailure:
            pass
        finally:
            resp.close()
        if not recorded:
            await commit()
        await send({"type": "http.response.body", "body": b""})

    async def answer_stop(kind: str, request: dict[str, Any], decided: Decided, model: str, streamed: bool,
                          send: Any, scope: dict[str, Any]) -> None:
        conv = decided.conversation
        stop = decided.stop
        assert conv is not None and isinstance(stop, RunStop)
        text = conv.final_text
        if text is None:
            text = config.stop_reply or await finish_up(kind, request, stop, model, scope, conv)
            conv.finish_stopped(stop, text)
        await conversations.commit()              # the record first, then the answer
        if streamed:
            async def chunks():
                for chunk in final_stream(kind, model, text):
                    yield chunk
            from ._http import respond_stream

            await respond_stream(send, 200, chunks(), [(b"content-type", b"text/event-stream"),
                                                       (b"cache-control", b"no-cache")])
        else:
            await respond(send, 200, json.dumps(final_response(kind, model, text), ensure_ascii=False).encode())

    async def finish_up(kind: str, request: dict[str, Any], stop: RunStop, model: str, scope: dict[str, Any],
                        conv: Any) -> str:
        """One upstream request without tools for the model's own last words (recorded)."""
        instruction = FINISH_UP.format(reason=stop.reason)
        body = finish_up_request(kind, request, instruction)
        conv.record_request([], model, {"finish_up": True}, [instruction])
        started = time.perf_counter()
        decision = usage = None
        try:
            resp = await pool.request("POST", target(scope), forward_headers(scope),
                                      json.dumps(body, ensure_ascii=False).encode("utf-8"))
            try:
                data = await resp.read()
            finally:
                resp.close()
            if resp.status < 400:
                decision, usage = decision_of(kind, json.loads(data))
        except (UpstreamFailure, ValueError):
            decision = None
        text = decision.text.strip() if decision is not None else ""
        if decision is not None and usage is not None:
            conv.record_finish_up(decision.model_copy(update={"tool_calls": [], "text": text}), usage,
                                  (time.perf_counter() - started) * 1000)
        return text or f"I stopped here: {stop.reason}."

    return app


__all__ = ["GatewayConfig", "gateway_app"]
