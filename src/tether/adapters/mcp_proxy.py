"""A guarded stdio proxy in front of any MCP server (``tether guard mcp``).

``pip install 'tether[mcp]'``. The proxy starts the real server as a child
process (stdio), lists its tools, and serves the same tools over its own
stdio. Every ``tools/call`` goes through a :class:`RunSession`: the guard
stack is asked before and after the call and the call and its result are
recorded as tether events, so the MCP client's session is a run in the
store (``tether runs list``, ``guard-check``, ``diff`` work on it).

What the client's model reads:

* an allowed call: the upstream server's result, as is (a guard's hint is
  appended as one more text block, ``[tether] ...``);
* a blocked call: a tool error (``isError``) saying why; the server is not called;
* a stopped session: a tool error saying the session was stopped and why;
  every later call gets the same answer without reaching the server.

The proxy has no model of its own: a guard's finish-up request is skipped and
the run's reply is empty.
"""

from __future__ import annotations

import os
import uuid
from contextlib import AsyncExitStack
from typing import Any, Sequence

from ..guards import Guard
from ..messages import ToolCallRequest
from ..errors import RunStop
from ..runtime import RunConfig, RunSession
from ..status import TerminalStatus
from ..tools import Tool, ToolResult, ToolSet
from ._common import require

require("mcp", "mcp")

import mcp.types as mt  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402

__all__ = ["GuardedMCPProxy", "serve_stdio"]

HINT_PREFIX = "[tether] "


def _text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in (result.content or []) if getattr(c, "type", "") == "text")


def _error(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)], is_error=True)


class GuardedMCPProxy:
    """The proxy's state: the upstream session, the tether session and the stop, if any."""

    def __init__(self, upstream: Any, tools: list[Any], *, guards: Sequence[Guard] = (), guards_label: str = "off",
                 store: Any = None, run_id: str | None = None, command: Sequence[str] = ()):
        self.upstream = upstream
        self.upstream_tools = {t.name: t for t in tools}
        self._raw: dict[str, Any] = {}
        self.calls = 0
        self.stopped: RunStop | None = None
        self.result: Any = None
        toolset = ToolSet(self._tool(t) for t in tools)
        config = RunConfig(guards=tuple(guards), guards_label=guards_label, store=store, max_steps=10**9,
                           meta={"proxy": "mcp", "command": list(command)})
        self.session = RunSession.start(model_name="mcp-client", tools=toolset, config=config,
                                        run_id=run_id or f"mcp-{uuid.uuid4().hex[:10]}")

    @property
    def run_id(self) -> str:
        return self.session.run_id

    def _tool(self, spec: Any) -> Tool:
        name = spec.name

        async def call(**arguments: Any) -> ToolResult:
            raw = await self.upstream.call_tool(name, arguments)
            self._raw[name] = raw
            structured = getattr(raw, "structured_content", None)
            if getattr(raw, "is_error", False):
                return ToolResult.failure(_text_of(raw) or "tool error", "tool_error", data=structured)
            return ToolResult.success(structured if structured is not None else _text_of(raw))

        schema = dict(spec.input_schema or {"type": "object", "properties": {}})
        try:
            return Tool(name, spec.description or "", schema, call)
        except Exception:   # a schema tether's validator rejects: let the upstream server judge the arguments
            return Tool(name, spec.description or "", {"type": "object"}, call)

    async def list_tools(self) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=list(self.upstream_tools.values()))

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> mt.CallToolResult:
        if self.stopped is not None:
            return _error(f"tether stopped this session ({self.stopped.reason}). Do not call tools again: "
                          "tell the user what was done, what was not, and why.")
        self.calls += 1
        self._raw.pop(name, None)
        call = ToolCallRequest(id=f"mcp_{self.calls}", name=name, arguments=dict(arguments or {}))
        try:
            result = await self.session.tool(call)
        except RunStop as stop:
            self.stopped = stop
            self.finish()
            return _error(f"tether stopped this session: {stop.reason}. Do not call tools again: "
                          "tell the user what was done, what was not, and why.")
        hints = self.session.take_hints()
        raw = self._raw.pop(name, None)
        if raw is not None and result.source not in ("guard", "runner"):
            out = raw
        elif result.ok:
            out = mt.CallToolResult(content=[mt.TextContent(type="text", text=str(result.data))])
        else:
            out = _error(result.error or "error")
        if hints:
            content = [*out.content, *[mt.TextContent(type="text", text=HINT_PREFIX + h) for h in hints]]
            out = out.model_copy(update={"content": content})
        return out

    def finish(self) -> Any:
        if self.result is None:
            if self.stopped is not None:
                stop, reply = self.stopped, self.stopped.reply
                if stop.verdict is not None and self.session.stopped_by is not None:   # the budget's ledger
                    reply = self.session.stopped_by.on_stop(self.session.ctx(), stop.verdict, reply)
                self.result = self.session.finish(stop.status, reply, stop.reason)
            else:
                self.result = self.session.finish(TerminalStatus.COMPLETED, "",
                                                  f"MCP client disconnected after {self.calls} call(s)")
        return self.result


def make_server(proxy: GuardedMCPProxy, name: str = "tether-guard") -> Server:
    async def on_list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        return await proxy.list_tools()

    async def on_call_tool(ctx: Any, params: Any) -> mt.CallToolResult:
        return await proxy.call_tool(params.name, params.arguments)

    return Server(name, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def serve_stdio(command: Sequence[str], *, guards: Sequence[Guard] = (), guards_label: str = "off",
                      store: Any = None, run_id: str | None = None, streams: tuple[Any, Any] | None = None) -> Any:
    """Start ``command`` as the upstream MCP server and serve its tools, guarded,
    on this process's stdio (or on ``streams``) until the client goes away.
    Returns the finished run (RunResult)."""
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(os.environ))
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        upstream = await stack.enter_async_context(ClientSession(read, write))
        await upstream.initialize()
        tools: list[Any] = []
        cursor = None
        while True:
            page = await upstream.list_tools(params=mt.PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        proxy = GuardedMCPProxy(upstream, tools, guards=guards, guards_label=guards_label, store=store,
                                run_id=run_id, command=command)
        server = make_server(proxy)
        try:
            if streams is not None:
                await server.run(streams[0], streams[1], server.create_initialization_options())
            else:
                async with stdio_server() as (r, w):
                    await server.run(r, w, server.create_initialization_options())
        finally:
            proxy.finish()
        return proxy.result
