"""The MCP gateway (``tether guard mcp``): a lean JSON-RPC pass-through with
guards on ``tools/call``.

Why not the ``mcp`` SDK's server and client: they validate every message into
pydantic models and serialise it again, handle a session's requests through
one pipeline, drop what they do not model, and their stdio reader copies its
buffer on every chunk (a 60 MB result took minutes). The gateway reads only
what it must: the method of each client message, the arguments and result of
``tools/call`` (for the guards and the record) and the tool list (for the
guards' tool kinds). Everything else (resources, prompts, completions,
logging, server info, list-changed notifications, progress, the server's own
requests) passes through with only its id rewritten. Each client request runs
in its own task, so concurrent calls reach the server concurrently.

The server is started on the first message that needs it and again after it
died: its failures become JSON-RPC errors that name the cause
(:mod:`.mcp_upstream`); the gateway itself stays up.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import UpstreamFailure
from .mcp_upstream import (
    LAZY,
    RAW,
    UNAVAILABLE,
    Spliced,
    Upstream,
    default_initialize,
    dumps,
    lazy_result,
    parse_lazy,
    widen_pipe,
    with_id,
)
from .windows import GuardWindows

HINT_PREFIX = "[tether] "
MAX_LIST_PAGES = 100          # tools/list pages in one listing before the gateway calls it endless
MAX_TOOLS = 10_000

Send = Callable[[dict[str, Any]], Awaitable[None]]


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def check_tools(result: Any) -> list[dict[str, Any]]:
    """The tools of one tools/list page, or UpstreamFailure naming the first bad one."""
    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        raise UpstreamFailure("the MCP server's tools/list result has no list of tools")
    for i, tool in enumerate(result["tools"]):
        name = tool.get("name") if isinstance(tool, dict) else None
        where = f"tool #{i + 1}" + (f" ({name!r})" if isinstance(name, str) else "")
        if not isinstance(tool, dict) or not isinstance(name, str) or not name:
            raise UpstreamFailure(f"the MCP server's tools/list is invalid: {where} has no name")
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise UpstreamFailure(f"the MCP server's tools/list is invalid: {where} has an inputSchema that is not "
                                  f"a JSON Schema of type object: {json.dumps(schema)[:120]}")
        if "outputSchema" in tool and not isinstance(tool["outputSchema"], dict):
            raise UpstreamFailure(f"the MCP server's tools/list is invalid: {where} has an outputSchema that is "
                                  "not an object")
    return result["tools"]


class MCPGateway:
    """One client's connection through the gateway to one upstream server."""

    def __init__(self, connect: Callable[[Callable[[dict[str, Any]], Awaitable[None]]], Upstream], send: Send, *,
                 windows: GuardWindows | None, call_timeout: float):
        self.connect = connect
        self.send = send
        self.windows = windows
        self.call_timeout = call_timeout
        self.upstream: Upstream | None = None
        self.init_params: dict[str, Any] | None = None
        self.server_requests: dict[str, tuple[Upstream, Any]] = {}   # our id -> (connection, server's id)
        self.client_ids: dict[int, Any] = {}                          # upstream id -> client's id (for cancel)
        self.next_server_request = 0
        self.pages = 0
        self._starting: asyncio.Lock = asyncio.Lock()
        self.tasks: set[asyncio.Task] = set()

    # -- the client's messages ---------------------------------------------------------------
    def receive(self, message: Any) -> None:
        """Handle one message from the client in its own task."""
        task = asyncio.create_task(self._receive(message))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _receive(self, message: Any) -> None:
        try:
            reply = await self.handle(message)
        except Exception as exc:      # a bug here must not end the gateway, nor print a traceback
            rid = message.get("id") if isinstance(message, dict) else None
            reply = _error(rid, -32603, f"tether gateway: {type(exc).__name__}: {exc}") if rid is not None else None
            print(f"tether gateway: internal error on {str(message)[:100]!r}: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
        if reply is not None:
            await self.send(reply)

    async def handle(self, message: Any) -> dict[str, Any] | Spliced | None:
        if isinstance(message, list):
            for m in message:
                self.receive(m)
            return None
        if not isinstance(message, dict):
            return _error(None, -32600, "not a JSON-RPC message")
        method, rid = message.get("method"), message.get("id")
        if method is None:              # a response to one of the server's requests
            origin = self.server_requests.pop(str(rid), None)
            if origin is not None and origin[0].dead is None:
                await origin[0].notify({**message, "id": origin[1]})
            return None
        if rid is None:                 # a notification
            await self._notification(message)
            return None
        params = message.get("params")
        try:
            if method == "ping":
                return {"jsonrpc": "2.0", "id": rid, "result": {}}
            if method == "initialize":
                self.init_params = params if isinstance(params, dict) else default_initialize()
                result = await self._restart()
                return {"jsonrpc": "2.0", "id": rid, "result": result}
            upstream = await self._ready()
            if method == "tools/call":
                return await self._call(upstream, rid, params)
            reply = await self._forward(upstream, method, params, rid)
            if method == "tools/list" and "result" in reply:
                self._listed(params, reply["result"])
            return with_id(reply, rid)
        except UpstreamFailure as failure:
            return _error(rid, failure.code, f"tether gateway: {failure.detail}")

    async def _notification(self, message: dict[str, Any]) -> None:
        upstream = self.upstream
        if upstream is None or upstream.dead is not None:
            return
        method = message.get("method")
        if method == "notifications/initialized" and getattr(upstream, "announced", False):
            return
        if method == "notifications/cancelled":
            params = dict(message.get("params") or {})
            ours = next((uid for uid, cid in self.client_ids.items() if cid == params.get("requestId")), None)
            if ours is None:
                return
            message = {**message, "params": {**params, "requestId": ours}}
        await upstream.notify(message)

    # -- the server -----------------------------------------------------------------------------
    async def _restart(self) -> dict[str, Any]:
        async with self._starting:
            if self.upstream is not None:
                await self.upstream.close()
            self.upstream = self.connect(self._from_server)
            result = await self.upstream.start(self.init_params or default_initialize(), send_initialized=False)
            return result

    async def _ready(self) -> Upstream:
        """The live connection, (re)started with the client's own initialize when needed."""
        async with self._starting:
            if self.upstream is not None and self.upstream.dead is None:
                return self.upstream
            if self.upstream is not None:
                print(f"tether gateway: restarting; {self.upstream.dead}", file=sys.stderr, flush=True)
            self.upstream = self.connect(self._from_server)
            await self.upstream.start(self.init_params or default_initialize(), send_initialized=True)
            self.upstream.announced = True   # type: ignore[attr-defined]
            return self.upstream

    async def _forward(self, upstream: Upstream, method: str, params: Any, rid: Any) -> dict[str, Any]:
        ours = upstream.next_id + 1            # the id request() is about to take (no await in between)
        self.client_ids[ours] = rid
        try:
            reply = await upstream.request(method, params, timeout=self.call_timeout)
        except UpstreamFailure as failure:
            if failure.code != UNAVAILABLE and upstream.dead is None:
                asyncio.create_task(self._check(upstream))
            raise
        finally:
            self.client_ids.pop(ours, None)
        return reply

    async def _check(self, upstream: Upstream) -> None:
        """After a timeout: a server that does not even answer ping is restarted on the next call."""
        try:
            await upstream.request("ping", None, timeout=min(5.0, self.call_timeout))
        except UpstreamFailure:
            await upstream.fail(f"{upstream.label} stopped answering (no answer to ping after a call timeout); "
                                "it will be restarted on the next call")

    async def _from_server(self, message: dict[str, Any]) -> None:
        """A notification or a request from the server, to the client."""
        if "id" in message:
            self.next_server_request += 1
            ours = f"tether-{self.next_server_request}"
            upstream = self.upstream
            if upstream is not None:
                self.server_requests[ours] = (upstream, message["id"])
            message = {**message, "id": ours}
        elif message.get("method") == "notifications/tools/list_changed":
            self.pages = 0
        await self.send(message)

    def _listed(self, params: Any, result: Any) -> None:
        cursor = params.get("cursor") if isinstance(params, dict) else None
        self.pages = self.pages + 1 if cursor else 1
        tools = check_tools(result)
        if self.pages > MAX_LIST_PAGES or (self.windows is not None and len(self.windows.specs) > MAX_TOOLS):
            raise UpstreamFailure(f"the MCP server's tools/list did not end after {MAX_LIST_PAGES} pages "
                                  "(it keeps returning a nextCursor)")
        if self.windows is not None:
            self.windows.learn_tools(tools)

    # -- tools/call ---------------------------------------------------------------------------
    async def _call(self, upstream: Upstream, rid: Any, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return _error(rid, -32602, "tools/call needs params.name")
        name = params["name"]
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        error: dict[str, Any] | None = None
        replies: list[dict[str, Any]] = []

        async def forward() -> dict[str, Any]:
            nonlocal error
            reply = await self._forward(upstream, "tools/call", params, rid)
            if reply.get(LAZY):
                replies.append(reply)
                return lazy_result(reply[RAW])
            if "error" in reply:
                error = reply["error"]
                text = str(error.get("message", "error")) if isinstance(error, dict) else str(error)
                return {"content": [{"type": "text", "text": text}], "isError": True}
            result = reply.get("result")
            if not isinstance(result, dict):
                raise UpstreamFailure(f"{upstream.label} answered tools/call {name} without a result object")
            replies.append(reply)
            return result

        if self.windows is None:
            result = await forward()
            return _error(rid, error.get("code", -32603), error.get("message", "")) if isinstance(error, dict) \
                else with_id(replies[0], rid)
        outcome = await self.windows.call(name, arguments, forward)
        if outcome.result is None:
            text = outcome.error_text or "refused by tether"
            return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}],
                                                           "isError": True}}
        if error is not None and not outcome.hints:
            return {"jsonrpc": "2.0", "id": rid, "error": error}
        result = outcome.result
        if not outcome.hints and replies:
            return with_id(replies[0], rid)
        if replies and replies[0].get(LAZY):        # a hint on a big result: read it after all
            result = parse_lazy(replies[0]).get("result") or {}
        elif replies:
            replies[0].pop(RAW, None)
        if outcome.hints:
            content = list(result.get("content") or [])
            content += [{"type": "text", "text": HINT_PREFIX + h} for h in outcome.hints if h]
            result = {**result, "content": content}
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.upstream is not None:
            await self.upstream.close()


# -- stdio ------------------------------------------------------------------------------------
async def serve_stdio(connect: Callable[..., Upstream], *, windows: GuardWindows | None, call_timeout: float,
                      reader: asyncio.StreamReader | None = None, writer: Any = None) -> None:
    """Serve one client on this process's stdin / stdout until stdin closes."""
    loop = asyncio.get_running_loop()
    if reader is None:
        widen_pipe(sys.stdin.buffer)
        widen_pipe(sys.stdout.buffer)
        reader = asyncio.StreamReader(limit=512 * 1024 * 1024)
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        except ValueError:                 # stdin is a regular file: read it in a thread
            _feed_from_file(loop, reader, sys.stdin.buffer)
    if writer is None:
        try:
            transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout.buffer)
            writer = asyncio.StreamWriter(transport, protocol, None, loop)
        except ValueError:                 # stdout is a regular file
            writer = _FileWriter(sys.stdout.buffer)
    lock = asyncio.Lock()

    async def send(message: dict[str, Any] | Spliced) -> None:
        pieces = message if isinstance(message, Spliced) else (dumps(message),)
        async with lock:
            try:
                for piece in pieces:          # a big answer's pieces as they are: no copy to join them
                    writer.write(piece)
                writer.write(b"\n")
                await writer.drain()
            except (ConnectionError, OSError):
                pass

    gateway = MCPGateway(connect, send, windows=windows, call_timeout=call_timeout)
    main = asyncio.current_task()
    why = ["the MCP client disconnected"]

    def terminated() -> None:
        why[0] = "the gateway was terminated (SIGTERM)"
        if main:
            main.cancel()

    try:                                   # SIGTERM (a client closing us): end the window, write it out, exit
        import signal

        loop.add_signal_handler(signal.SIGTERM, terminated)
    except (NotImplementedError, RuntimeError, ValueError):
        pass
    try:
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial
                if not line.strip():
                    break
            except asyncio.LimitOverrunError:
                await send(_error(None, -32600, "message too large"))
                break
            if len(line) < 8 and not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                await send(_error(None, -32700, "parse error: not JSON"))
                continue
            gateway.receive(message)
        if gateway.tasks:                       # answers still on their way
            await asyncio.wait(list(gateway.tasks), timeout=call_timeout)
    except asyncio.CancelledError:
        pass
    finally:
        await gateway.close()
        if windows is not None:      # everything queued is written before the process exits
            await asyncio.to_thread(windows.shutdown, why[0])


class _FileWriter:
    """stdout redirected to a file: plain blocking writes."""

    def __init__(self, out: Any):
        self.out = out

    def write(self, data: bytes) -> None:
        self.out.write(data)

    async def drain(self) -> None:
        self.out.flush()


def _feed_from_file(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, source: Any) -> None:
    def pump() -> None:
        for chunk in iter(lambda: source.read1(1 << 16), b""):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)

    import threading

    threading.Thread(target=pump, daemon=True, name="tether-stdin").start()
