"""The gateways' HTTP side: plain ASGI on uvicorn (it comes with ``mcp``).

No framework on the hot path: a gateway reads a body, decides, and streams
bytes back; routing two paths does not need one. uvicorn brings HTTP/1.1
parsing, keep-alive and graceful shutdown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from ..errors import UsageError

MAX_BODY = 64 * 1024 * 1024


def parse_listen(text: str) -> tuple[str, int]:
    """``127.0.0.1:8765`` or ``:8765`` or ``8765`` -> (host, port)."""
    host, _, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise UsageError(f"--listen {text!r}: expected HOST:PORT such as 127.0.0.1:8765") from None
    if not 0 <= number <= 65535:
        raise UsageError(f"--listen {text!r}: port {number} is out of range")
    return (host.strip("[]") or "127.0.0.1"), number


async def read_body(receive: Any, limit: int = MAX_BODY) -> bytes | None:
    """The request body, or None when it is larger than ``limit``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        body = message.get("body", b"")
        size += len(body)
        if size > limit:
            return None
        chunks.append(body)
        if not message.get("more_body"):
            return b"".join(chunks)


async def respond(send: Any, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]] = (),
                  content_type: bytes = b"application/json") -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def respond_stream(send: Any, status: int, chunks: AsyncIterator[bytes],
                         headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    async for chunk in chunks:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def serve(app: Any, host: str, port: int, *, on_started: Any = None) -> None:
    """Run ``app`` until interrupted (Ctrl-C / SIGTERM end it cleanly)."""
    from ..adapters._common import require

    uvicorn = require("uvicorn", "gateway")

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on",
                            server_header=False, date_header=False, proxy_headers=False,
                            timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    server.run()
