"""The MCP gateway served over Streamable HTTP (``tether guard mcp --listen``).

Each client session (``Mcp-Session-Id``) has its own connection to the
upstream server; the guard windows are shared by the gateway (one client
application, one record). A POST carrying a request is answered with
``application/json``; what the server sends on its own (notifications, its
requests) goes to the session's GET event stream when the client opened one.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from ._http import header, read_body, respond
from .mcp import MCPGateway, _error
from .mcp_upstream import Spliced, Upstream, dumps
from .windows import GuardWindows

MAX_SESSIONS = 256
SESSION_IDLE_S = 3600.0      # a session nobody used for this long is closed (its server stopped)


class _Session:
    def __init__(self, connect: Callable[..., Upstream], windows: GuardWindows | None, call_timeout: float):
        self.outbox: asyncio.Queue = asyncio.Queue(maxsize=1000)
        self.last = time.monotonic()
        self.gateway = MCPGateway(connect, self._push, windows=windows, call_timeout=call_timeout)

    async def _push(self, message: dict[str, Any]) -> None:
        if "method" not in message:     # a response (to a request made in a batch): nobody waits on a stream
            return
        try:
            self.outbox.put_nowait(message)
        except asyncio.QueueFull:
            pass


def mcp_app(connect: Callable[..., Upstream], *, windows: GuardWindows | None, call_timeout: float) -> Any:
    sessions: dict[str, _Session] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    for s in sessions.values():
                        await s.gateway.close()
                    if windows is not None:      # everything queued is written before the process exits
                        await asyncio.to_thread(windows.shutdown, "the gateway shut down")
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        method = scope["method"]
        sid = header(scope, b"mcp-session-id")
        if method == "DELETE":
            session = sessions.pop(sid or "", None)
            if session is not None:
                await session.gateway.close()
            await respond(send, 200 if session else 404, b"")
            return
        if method == "GET":
            session = sessions.get(sid or "")
            if session is None:
                await respond(send, 404, dumps(_error(None, -32001, "unknown session")))
                return
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
            while True:
                message = await session.outbox.get()
                await send({"type": "http.response.body", "body": b"data: " + dumps(message) + b"\n\n",
                            "more_body": True})
        if method != "POST":
            await respond(send, 405, b"", [(b"allow", b"GET, POST, DELETE")])
            return
        body = await read_body(receive)
        if body is None:
            await respond(send, 413, dumps(_error(None, -32600, "request too large")))
            return
        try:
            message = json.loads(body)
        except ValueError:
            await respond(send, 400, dumps(_error(None, -32700, "parse error: not JSON")))
            return
        is_init = isinstance(message, dict) and message.get("method") == "initialize"
        if is_init:
            now = time.monotonic()
            for old_sid in [k for k, v in sessions.items() if now - v.last > SESSION_IDLE_S]:
                await sessions.pop(old_sid).gateway.close()
            if len(sessions) >= MAX_SESSIONS:
                oldest = next(iter(sessions))
                await sessions.pop(oldest).gateway.close()
            sid = uuid.uuid4().hex
            sessions[sid] = _Session(connect, windows, call_timeout)
        session = sessions.get(sid or "")
        if session is None:
            await respond(send, 404 if sid else 400,
                          dumps(_error(None, -32001, "unknown or missing Mcp-Session-Id; initialize first")))
            return
        session.last = time.monotonic()
        reply = await session.gateway.handle(message)
        headers = [(b"mcp-session-id", sid.encode())] if sid else []
        if reply is None:
            await respond(send, 202, b"", headers)
        elif isinstance(reply, Spliced):        # a big answer's pieces as they are: no copy to join them
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(reply.size).encode()), *headers]})
            for piece in reply:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        else:
            await respond(send, 200, dumps(reply), headers)

    return app
