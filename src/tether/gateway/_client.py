"""A lean HTTP/1.1 client for the LLM gateway's upstream: keep-alive
connections on plain asyncio streams.

Why not httpx (used elsewhere in tether): its connection pool scans every
connection on every request, which at a hundred concurrent conversations cost
more than everything else the gateway does. This client does one thing: send
a request with a body, hand back the status, the raw headers and the body as
it arrives (``Content-Length``, chunked, or up to the close), and keep the
connection for the next request when the exchange ended cleanly.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

from ..errors import UpstreamFailure

MAX_HEAD = 64 * 1024
READ = 256 * 1024
_NO_BODY = {204, 304}


class Response:
    def __init__(self, pool: Pool, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], status: int,
                 headers: list[tuple[bytes, bytes]], length: int | None, chunked: bool, keep: bool, timeout: float):
        self.pool, self.conn, self.status, self.headers = pool, conn, status, headers
        self.length, self.chunked, self.keep, self.timeout = length, chunked, keep, timeout
        self.done = False

    def header(self, name: bytes) -> bytes | None:
        for k, v in self.headers:
            if k == name:
                return v
        return None

    async def _read(self, coro):
        try:
            async with asyncio.timeout(self.timeout):      # no task per read, unlike wait_for
                return await coro
        except TimeoutError:
            raise UpstreamFailure(f"the upstream sent nothing for {self.timeout:g} s") from None
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError) as exc:
            raise UpstreamFailure(f"the upstream's answer broke off ({type(exc).__name__})") from None

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (chunked framing removed)."""
        reader = self.conn[0]
        if self.chunked:
            while True:
                line = await self._read(reader.readuntil(b"\r\n"))
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while (await self._read(reader.readuntil(b"\r\n"))) != b"\r\n":   # trailers
                        pass
                    break
                data = await self._read(reader.readexactly(size + 2))
                yield data[:-2]
        elif self.length is not None:
            left = self.length
            while left > 0:
                data = await self._read(reader.read(min(left, READ)))
                if not data:
                    raise UpstreamFailure("the upstream closed the connection before the end of its answer")
                left -= len(data)
                yield data
        else:
            while True:
                data = await self._read(reader.read(READ))
                if not data:
                    break
                yield data
            self.keep = False
        self.done = True

    async def read(self) -> bytes:
        if self.length is not None and not self.chunked:
            data = await self._read(self.conn[0].readexactly(self.length)) if self.length else b""
            self.done = True
            return data
        return b"".join([c async for c in self.chunks()])

    def close(self) -> None:
        if self.done and self.keep:
            self.pool.release(self.conn)
        else:
            self.conn[1].close()


class Pool:
    """Connections to one upstream origin."""

    def __init__(self, base_url: str, *, timeout: float, max_idle: int = 512):
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) URL: {base_url}")
        self.tls = url.scheme == "https"
        self.host = url.hostname
        self.port = url.port or (443 if self.tls else 80)
        self.authority = url.netloc.rsplit("@", 1)[-1].encode("latin-1")
        self.base_path = url.path.rstrip("/")
        self.timeout = timeout
        self.max_idle = max_idle
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._ssl = ssl.create_default_context() if self.tls else None

    def release(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        if len(self.idle) < self.max_idle and not conn[1].is_closing():
            self.idle.append(conn)
        else:
            conn[1].close()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.wait_for(asyncio.open_connection(self.host, self.port, ssl=self._ssl,
                                                                  limit=MAX_HEAD * 4), 30.0)
        except (TimeoutError, OSError) as exc:
            raise UpstreamFailure(f"cannot connect to {self.host}:{self.port} ({type(exc).__name__}: {exc})") from None

    async def request(self, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes) -> Response:
        """``target``: the path after the base URL's path, with its query."""
        head = [f"{method} {self.base_path}{target} HTTP/1.1\r\n".encode("latin-1"), b"host: ", self.authority, b"\r\n"]
        for k, v in headers:
            head += [k, b": ", v, b"\r\n"]
        if body or method in ("POST", "PUT", "PATCH"):
            head += [b"content-length: ", str(len(body)).encode(), b"\r\n"]
        head.append(b"\r\n")
        data = b"".join(head) + body
        for attempt in (0, 1):
            pooled = bool(self.idle) and attempt == 0
            conn = self.idle.pop() if pooled else await self._connect()
            reader, writer = conn
            try:
                writer.write(data)
                async with asyncio.timeout(self.timeout):
                    await writer.drain()
                    line = await reader.readuntil(b"\r\n\r\n")
            except TimeoutError:
                writer.close()
                raise UpstreamFailure(f"the upstream did not answer within {self.timeout:g} s") from None
            except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as exc:
                writer.close()
                if pooled:        # a kept connection the upstream had closed: once more on a new one
                    continue
                raise UpstreamFailure(f"the upstream's answer broke off ({type(exc).__name__})") from None
            return self._response(conn, line, method)
        raise UpstreamFailure("the upstream closed every connection")   # pragma: no cover

    def _response(self, conn, head: bytes, method: str) -> Response:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        try:
            status = int(parts[1])
        except (IndexError, ValueError):
            conn[1].close()
            raise UpstreamFailure(f"the upstream answered something that is not HTTP: {lines[0][:80]!r}") from None
        headers: list[tuple[bytes, bytes]] = []
        length: int | None = None
        chunked, keep = False, parts[0] == b"HTTP/1.1"
        for raw in lines[1:]:
            if not raw:
                continue
            name, _, value = raw.partition(b":")
            name, value = name.strip().lower(), value.strip()
            headers.append((name, value))
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = None
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif name == b"connection":
                keep = b"close" not in value.lower() and (keep or b"keep-alive" in value.lower())
        if method == "HEAD" or status in _NO_BODY or 100 <= status < 200:
            length, chunked = 0, False
        return Response(self, conn, status, headers, length, chunked, keep, self.timeout)

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()
