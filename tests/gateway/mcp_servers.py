"""Small real MCP servers (the mcp SDK's MCPServer, stdio or Streamable HTTP) for
the gateway tests: ``python mcp_servers.py KIND [--http PORT]``.

KIND ``tools``: a clock, a failing tool, a sleeper, a big result, resources and
prompts. KIND ``hang``: tools/list works, every tool call never answers.
KIND ``exit``: exits before start-up. KIND ``garbage``: answers tools/call with
a line that is not JSON. KIND ``badschema``: one tool's inputSchema is not an
object schema. KIND ``paging``: tools/list never stops paginating. KIND
``wrongid``: answers tools/call with another id.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time


def tools_server():
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("clockwork", instructions="a clock and friends")

    @server.tool()
    def get_time() -> str:
        """The current time, to the microsecond."""
        return f"{time.time():.6f}"

    @server.tool()
    def fetch_report(report_id: str) -> str:
        """Fetch a report by id."""
        raise ToolError(f"report {report_id}: access denied for this account")

    @server.tool()
    async def slow(n: int) -> str:
        """Sleep half a second."""
        await asyncio.sleep(0.5)
        return f"slept {n}"

    @server.tool()
    def big(megabytes: int) -> str:
        """A text result of this many megabytes."""
        return "x" * (megabytes * 1024 * 1024)

    @server.tool()
    def crash() -> str:
        """Exit the server process at once."""
        import os

        print("out of memory (pretend)", file=sys.stderr, flush=True)
        os._exit(1)

    @server.resource("notes://today")
    def today() -> str:
        """Today's notes."""
        return "buy milk"

    @server.resource("notes://{day}")
    def notes(day: str) -> str:
        """Notes of a day."""
        return f"notes of {day}"

    @server.prompt()
    def summarize(text: str) -> str:
        """Summarize a text."""
        return f"Summarize: {text}"

    return server


def raw(kind: str) -> None:
    """A hand-written misbehaving server on stdio."""
    if kind == "exit":
        print("cannot open the database", file=sys.stderr, flush=True)
        sys.exit(3)
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue
        if method == "initialize":
            out = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                   "serverInfo": {"name": kind, "version": "0"}}
        elif method == "tools/list":
            tool = {"name": "echo", "inputSchema": {"type": "object"}}
            if kind == "badschema":
                out = {"tools": [tool, {"name": "broken", "inputSchema": "not a schema"}]}
            elif kind == "paging":
                out = {"tools": [tool], "nextCursor": str(int(msg.get("params", {}).get("cursor") or 0) + 1)}
            else:
                out = {"tools": [tool]}
        elif method == "tools/call":
            if kind == "hang":
                continue
            if kind == "garbage":
                sys.stdout.write("this is not json\n")
                sys.stdout.flush()
                continue
            if kind == "wrongid":
                rid = 987654
            out = {"content": [{"type": "text", "text": "echo"}]}
        else:
            out = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": out}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "tools":
        server = tools_server()
        if "--http" in sys.argv:
            port = int(sys.argv[sys.argv.index("--http") + 1])
            server.run(transport="streamable-http", host="127.0.0.1", port=port)
        else:
            server.run()
    else:
        raw(kind)
