"""The MCP gateway's connection to the real server: a child process over stdio,
or a Streamable HTTP endpoint.

Both speak plain JSON-RPC: a request is sent with the gateway's own id and
answered through a future; whatever else the server sends (notifications, its
own requests) goes to ``on_message``. Everything that can go wrong with a
server ends as :class:`~tether.errors.UpstreamFailure` naming the cause: it
cannot be started, it did not answer ``initialize`` in time, it exited (with
the last lines it wrote on stderr), it wrote something that is not JSON-RPC.
A connection that failed is ``dead``; the gateway starts a new one on the next
call.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..errors import UpstreamFailure

# One JSON-RPC message on stdio is one line; a line may be this long.
MAX_LINE = 512 * 1024 * 1024
PROTOCOL_VERSION = "2025-06-18"
TIMEOUT, UNAVAILABLE = -32001, -32002

OnMessage = Callable[[dict[str, Any]], Awaitable[None]]
RAW = "\x00raw"      # key under which a response keeps the bytes it was read from
LAZY = "\x00lazy"    # a big response passed on unparsed (its RAW bytes are the message)
LAZY_BYTES = 4 * 1024 * 1024
PIPE_BYTES = 1024 * 1024
_READ_METHODS = frozenset({"initialize", "tools/list", "ping"})     # answers the gateway itself reads
_HEAD = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+)\s*(?=[,}])')


class Spliced(tuple):
    """A message as pieces of bytes, written one after the other: the bytes a reply was
    read from, with the client's id in place of the gateway's, never joined into one
    more copy of a big result."""

    @property
    def size(self) -> int:
        return sum(len(p) for p in self)


def with_id(reply: dict[str, Any], rid: Any) -> dict[str, Any] | Spliced:
    """``reply`` for the client, under the client's id. A reply read from bytes
    that start with its id is answered with those bytes, the id swapped, so a
    large result is not serialised again (nor copied: see :class:`Spliced`)."""
    raw = reply.pop(RAW, None)
    if raw is not None:
        m = _HEAD.match(raw[:200])
        if m is not None and int(m.group(1)) == reply.get("id"):
            end = len(raw)
            while end and raw[end - 1] in (9, 10, 13, 32):     # trailing whitespace, without copying
                end -= 1
            return Spliced((raw[:m.start(1)], dumps(rid), memoryview(raw)[m.end(1):end]))
    return {**reply, "id": rid}


def message_bytes(message: dict[str, Any] | Spliced | bytes) -> bytes:
    """One message as one bytes object (small messages; a Spliced one is joined)."""
    if isinstance(message, Spliced):
        return b"".join(message)
    return message if isinstance(message, bytes) else dumps(message)


def widen_pipe(fileobj: Any, size: int = PIPE_BYTES) -> None:
    """Give a pipe a bigger kernel buffer (Linux; anything else: left as it is), so a
    big message crosses it in 1 MB steps instead of 64 KB ones: 16 times fewer
    wake-ups of the processes on both ends, which on a busy machine is most of
    what a 60 MB result costs beyond the server's own time."""
    try:
        import fcntl

        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (OSError, ValueError, AttributeError, ImportError):
        pass                 # not a pipe, not Linux, or over /proc/sys/fs/pipe-max-size


def dumps(message: Any) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _short(data: bytes | str, n: int = 120) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = text.strip()
    return repr(text[:n] + ("…" if len(text) > n else ""))


def lazy_result(raw: bytes) -> dict[str, Any]:
    """What the guards and the record see of a big tools/call answer passed on unparsed:
    its size and digest (the same bytes again are the same result) and its error flag."""
    import zlib

    head = _HEAD.match(raw[:200])
    body = memoryview(raw)[head.end() if head is not None else 0:]      # without the id: same answer, same checksum
    text = f"[a result of {len(raw)} bytes, passed on unread; crc32 {zlib.crc32(body):08x}]"
    return {"content": [{"type": "text", "text": text}], "isError": b'"isError":true' in raw}


def parse_lazy(reply: dict[str, Any]) -> dict[str, Any]:
    """The whole message of a lazy reply (when the gateway must change it after all)."""
    message = json.loads(reply.pop(RAW))
    return message if isinstance(message, dict) else {"id": reply.get("id"), "result": {}}


def default_initialize() -> dict[str, Any]:
    """What the gateway says when it must (re)start a server before the client said initialize."""
    return {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "tether-gateway", "version": "1"}}


class Upstream:
    """The common half: ids, pending requests, start-up."""

    label = "the MCP server"

    def __init__(self, on_message: OnMessage, *, startup_timeout: float):
        self.on_message = on_message
        self.startup_timeout = startup_timeout
        self.pending: dict[int, asyncio.Future] = {}
        self.next_id = 0
        self.dead: str | None = None          # why it is no longer usable
        self.stray: list[Any] = []            # ids the server answered that no request had
        self.init_result: dict[str, Any] | None = None
        self.methods: dict[int, str] = {}     # pending request id -> method

    # -- to implement -------------------------------------------------------------------------
    async def _open(self) -> None: ...

    async def _send(self, message: dict[str, Any]) -> None: ...

    async def close(self) -> None: ...

    # -- shared -------------------------------------------------------------------------------
    async def start(self, init_params: dict[str, Any], *, send_initialized: bool) -> dict[str, Any]:
        """Start the server and run the MCP handshake; returns the server's initialize result."""
        try:
            await asyncio.wait_for(self._open(), self.startup_timeout)
            reply = await self.request("initialize", init_params, timeout=self.startup_timeout, startup=True)
        except TimeoutError:
            await self.fail(f"{self.label} did not start within the start-up timeout ({self.startup_timeout:g} s)")
            raise UpstreamFailure(self.dead or "start-up timeout", code=TIMEOUT) from None
        except UpstreamFailure:
            await self.close()
            raise
        if "error" in reply:
            await self.fail(f"{self.label} refused initialize: {_short(json.dumps(reply['error']), 300)}")
            raise UpstreamFailure(self.dead or "initialize refused")
        result = reply.get("result")
        if not isinstance(result, dict) or "protocolVersion" not in result:
            await self.fail(f"{self.label} answered initialize with something that is not an initialize result: "
                            f"{_short(json.dumps(result), 200)}")
            raise UpstreamFailure(self.dead or "bad initialize result")
        self.init_result = result
        if send_initialized:
            await self.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    async def request(self, method: str, params: Any, *, timeout: float, startup: bool = False) -> dict[str, Any]:
        """Send one request; the server's response message (``result`` or ``error``)."""
        if self.dead is not None:
            raise UpstreamFailure(self.dead)
        self.next_id += 1
        rid = self.next_id
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self.pending[rid] = future
        self.methods[rid] = method
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(message)
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            if startup:
                raise
            stray = f"; meanwhile it answered id(s) {', '.join(map(repr, self.stray[-3:]))} that no request had" \
                if self.stray else ""
            await self.notify({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": rid, "reason": "tether gateway: call timeout"}})
            raise UpstreamFailure(f"{self.label} did not answer {method} within {timeout:g} s{stray}",
                                  code=TIMEOUT) from None
        finally:
            self.pending.pop(rid, None)
            self.methods.pop(rid, None)

    async def notify(self, message: dict[str, Any]) -> None:
        """A notification or a response to the server's own request (no answer expected)."""
        if self.dead is None:
            try:
                await self._send(message)
            except UpstreamFailure:
                pass

    async def fail(self, why: str) -> None:
        """The connection is unusable: every waiting request gets ``why``."""
        if self.dead is None:
            self.dead = why
        for future in self.pending.values():
            if not future.done():
                future.set_exception(UpstreamFailure(self.dead))
        await self.close()

    async def received(self, message: Any, raw: bytes | None = None) -> None:
        """One message from the server (``raw``: the bytes it was read from)."""
        if isinstance(message, list):           # a batch (older protocol versions)
            for m in message:
                await self.received(m)
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            await self.fail(f"{self.label} sent a message that is not JSON-RPC 2.0: {_short(json.dumps(message))}; "
                            "it will be restarted on the next call")
            return
        if "method" in message:
            await self.on_message(message)
            return
        rid = message.get("id")
        future = self.pending.get(rid) if isinstance(rid, int) else None
        if future is None:
            self.stray.append(rid)
            del self.stray[:-10]
            print(f"tether gateway: {self.label} answered id {rid!r}, which no request had; ignored",
                  file=sys.stderr, flush=True)
            return
        if raw is not None:
            message[RAW] = raw
        if not future.done():
            future.set_result(message)


_EOF = object()
_TOO_LONG = object()


class _Lines(asyncio.Protocol):
    """The server's stdout cut into lines as it arrives. A line is joined once from
    the chunks it came in (a stream reader copies a long line two more times), and
    reading pauses while lines wait to be handled."""

    def __init__(self, limit: int):
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self.queue: asyncio.Queue = asyncio.Queue()
        self.transport: Any = None
        self.paused = False
        self.partial = b""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                rest = data[start:] if start else data
                if rest and self.size >= 0:
                    self.parts.append(rest)
                    self.size += len(rest)
                    if self.size > self.limit:       # dropped, and nothing more is read from this server
                        self.parts, self.size = [], -1
                        self.queue.put_nowait(_TOO_LONG)
                break
            if self.size >= 0:
                self.parts.append(data[start:end + 1] if start or end + 1 < len(data) else data)
                line = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
                self.parts, self.size = [], 0
                self.queue.put_nowait(line)
            start = end + 1
        if self.queue.qsize() > 64 and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    async def next(self) -> Any:
        item = await self.queue.get()
        if self.paused and self.queue.qsize() < 16 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return item

    def connection_lost(self, exc: Exception | None) -> None:
        self.partial = b"".join(self.parts) if self.size > 0 else b""
        self.parts = []
        self.queue.put_nowait(_EOF)


class StdioUpstream(Upstream):
    """The server as a child process speaking newline-delimited JSON-RPC on stdio."""

    def __init__(self, command: Sequence[str], on_message: OnMessage, *, startup_timeout: float,
                 env: dict[str, str] | None = None):
        super().__init__(on_message, startup_timeout=startup_timeout)
        self.command = list(command)
        self.label = f"the MCP server ({' '.join(self.command)[:80]})"
        self.env = env
        self.proc: asyncio.subprocess.Process | None = None
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=5)
        self.tasks: list[asyncio.Task] = []
        self.lines: _Lines | None = None

    async def _open(self) -> None:
        # stdout is a pipe of our own, read by _Lines: a 1 MB kernel buffer, each line joined once
        out_r, out_w = os.pipe()
        widen_pipe(out_w)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=out_w,
                stderr=asyncio.subprocess.PIPE, env=self.env if self.env is not None else dict(os.environ))
        except (OSError, ValueError) as exc:
            os.close(out_r)
            self.dead = f"cannot start {self.label}: {exc.strerror if isinstance(exc, OSError) else exc}"
            raise UpstreamFailure(self.dead) from None
        finally:
            os.close(out_w)
        loop = asyncio.get_running_loop()
        _, self.lines = await loop.connect_read_pipe(lambda: _Lines(MAX_LINE), os.fdopen(out_r, "rb", buffering=0))
        self.tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._stderr())]

    async def _send(self, message: dict[str, Any]) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            raise UpstreamFailure(self.dead or f"{self.label} is not running")
        try:
            proc.stdin.write(dumps(message) + b"\n")
            await proc.stdin.drain()
        except (ConnectionError, OSError) as exc:
            await self.fail(f"{self.label} stopped reading its stdin ({type(exc).__name__})")
            raise UpstreamFailure(self.dead or "stdin closed") from None

    async def _read(self) -> None:
        assert self.proc is not None and self.lines is not None
        lines = self.lines
        try:
            while True:
                line = await lines.next()
                if line is _EOF:
                    if lines.partial.strip():
                        await self.fail(f"{self.label} ended with a partial message: {_short(lines.partial)}")
                    break
                if line is _TOO_LONG:
                    await self.fail(f"{self.label} wrote a message over {MAX_LINE // 2**20} MB; "
                                    "it will be restarted on the next call")
                    return
                if len(line) < 8 and not line.strip():
                    continue
                if len(line) > LAZY_BYTES:          # a big answer: passed on as read, parsed only if needed
                    head = _HEAD.match(line[:200])
                    rid = int(head.group(1)) if head is not None else None
                    if rid is not None and self.methods.get(rid, "initialize") not in _READ_METHODS:
                        await self.received({"jsonrpc": "2.0", "id": rid, LAZY: True}, line)
                        continue
                try:
                    message = json.loads(line)
                except ValueError:
                    await self.fail(f"{self.label} wrote invalid JSON on stdout: {_short(line)}; "
                                    "it will be restarted on the next call")
                    return
                await self.received(message, line)
        except Exception as exc:      # never let a reader task die with a traceback
            await self.fail(f"{self.label}: reading its output failed ({type(exc).__name__}: {exc})")
            return
        code = await self.proc.wait()
        tail = " | ".join(self.stderr_tail)
        await self.fail(f"{self.label} exited with code {code}" + (f" (its last words on stderr: {tail[-400:]})"
                                                                  if tail else "")
                        + "; it will be restarted on the next call")

    async def _stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        err = self.proc.stderr
        try:
            while True:
                line = await err.readline()
                if not line:
                    return
                text = line.decode("utf-8", "replace").rstrip()
                if text:
                    self.stderr_tail.append(text[:300])
                    sys.stderr.write(line.decode("utf-8", "replace"))
                    sys.stderr.flush()
        except Exception:
            return

    async def close(self) -> None:
        proc, self.proc = self.proc, None
        if self.lines is not None and self.lines.transport is not None:
            self.lines.transport.close()
        if proc is not None and proc.returncode is None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                try:
                    await asyncio.wait_for(proc.wait(), 2.0)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
            except (ProcessLookupError, OSError):
                pass
        current = asyncio.current_task()
        for task in self.tasks:
            if task is not current:
                task.cancel()


class HttpUpstream(Upstream):
    """A Streamable HTTP MCP endpoint (``--upstream URL``)."""

    def __init__(self, url: str, on_message: OnMessage, *, startup_timeout: float, headers: dict[str, str] | None = None):
        super().__init__(on_message, startup_timeout=startup_timeout)
        self.url = url
        self.label = f"the MCP server at {url}"
        self.headers = dict(headers or {})
        self.session_id: str | None = None
        self.protocol: str | None = None
        self.client: Any = None
        self.tasks: set[asyncio.Task] = set()

    async def _open(self) -> None:
        import httpx

        self.client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=self.startup_timeout),
                                        limits=httpx.Limits(max_connections=64))

    def _headers(self) -> dict[str, str]:
        h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **self.headers}
        if self.session_id:
            h["Mcp-Session-Id"] = self.session_id
        if self.protocol:
            h["MCP-Protocol-Version"] = self.protocol
        return h

    async def _send(self, message: dict[str, Any]) -> None:
        if self.client is None:
            raise UpstreamFailure(self.dead or f"{self.label} is not connected")
        if "id" in message and "method" in message:     # a request: read its answer in the background
            task = asyncio.create_task(self._post(message))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        else:
            await self._post(message)

    async def _post(self, message: dict[str, Any]) -> None:
        import httpx

        try:
            async with self.client.stream("POST", self.url, content=dumps(message), headers=self._headers()) as resp:
                if resp.status_code == 404 and self.session_id:
                    await self.fail(f"{self.label} no longer knows this session (HTTP 404); "
                                    "a new session starts on the next call")
                    return
                if resp.status_code >= 400:
                    body = await resp.aread()
                    await self._answer_error(message, f"{self.label} answered HTTP {resp.status_code}: {_short(body)}")
                    return
                sid = resp.headers.get("mcp-session-id")
                if sid and message.get("method") == "initialize":
                    self.session_id = sid
                kind = resp.headers.get("content-type", "")
                if resp.status_code == 202 or "id" not in message:
                    return
                if kind.startswith("text/event-stream"):
                    await self._events(resp)
                else:
                    body = await resp.aread()
                    try:
                        parsed = json.loads(body)
                    except ValueError:
                        await self._answer_error(message, f"{self.label} answered with invalid JSON: {_short(body)}")
                        return
                    await self.received(parsed)
                if message.get("method") == "initialize" and self.init_result is None:
                    pass
        except httpx.HTTPError as exc:
            await self.fail(f"{self.label} cannot be reached ({type(exc).__name__}: {exc}); "
                            "retried on the next call")
        except Exception as exc:
            await self.fail(f"{self.label}: {type(exc).__name__}: {exc}")

    async def _answer_error(self, message: dict[str, Any], why: str) -> None:
        future = self.pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is not None and not future.done():
            future.set_exception(UpstreamFailure(why))

    async def _events(self, resp: Any) -> None:
        data: list[str] = []
        async for line in resp.aiter_lines():
            if line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
            elif not line.strip() and data:
                text, data = "\n".join(data), []
                try:
                    parsed = json.loads(text)
                except ValueError:
                    await self.fail(f"{self.label} sent an event that is not JSON: {_short(text)}")
                    return
                await self.received(parsed)

    async def start(self, init_params: dict[str, Any], *, send_initialized: bool) -> dict[str, Any]:
        result = await super().start(init_params, send_initialized=send_initialized)
        self.protocol = str(result.get("protocolVersion") or "") or None
        return result

    async def close(self) -> None:
        client, self.client = self.client, None
        for task in list(self.tasks):
            if task is not asyncio.current_task():
                task.cancel()
        if client is not None:
            try:
                await client.aclose()
            except Exception:
                pass
