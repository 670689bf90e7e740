"""``tether guard mcp``: the MCP gateway, guarded, in front of any MCP server."""

from __future__ import annotations

import asyncio
import os
from typing import Annotated

import typer

from ..guards.stacks import gateway_stack
from ._common import err_console, user_errors

app = typer.Typer(help="Put tether's guards in front of another agent's tools.\n\n"
                       "Example:\n\n  tether guard mcp --guards on -- python my_mcp_server.py",
                  no_args_is_help=True)


@app.callback()
def _guard() -> None:
    """Put tether's guards in front of another agent's tools (a group, even with one subcommand)."""


MCP_HELP = """Serve an MCP server through tether's gateway, with the guard stack on every tool call.

Starts COMMAND ARGS... as the upstream MCP server (stdio) or connects to --upstream URL
(Streamable HTTP), and serves it on this process's stdin/stdout, or over Streamable HTTP
with --listen HOST:PORT. Everything passes through (tools, resources, prompts,
completions, logging, notifications); tool calls go through the guards.

Guard state lives in a window: a burst of calls; --idle seconds without a call end it.
Each window is a run of kind mcp in the store (tether runs list --kind mcp): it ends
ended (an idle gap, the client gone; the gateway never sees a final answer, so never
completed) or as a guard stopped it. A stop ends the window's calls; the next call after
an idle gap opens a new window. The record is written by a thread of its own: a store
locked by another process delays the record, never a call. No time or call
cap unless --budget sets one. A server that dies, hangs or misbehaves gives the client a
JSON-RPC error naming the cause, and is restarted on the next call.

Point any MCP client at it instead of the server, e.g. in Claude Desktop's config:

  "command": "tether", "args": ["guard", "mcp", "--guards", "on", "--", "python", "server.py"]

Examples:

  tether guard mcp -- python my_mcp_server.py

  tether guard mcp --idle 120 --budget tool_calls=50 -- npx -y @modelcontextprotocol/server-filesystem .

  tether guard mcp --listen 127.0.0.1:8765 -- python my_mcp_server.py

  tether guard mcp --listen 127.0.0.1:8765 --upstream http://127.0.0.1:9000/mcp
"""


@app.command("mcp", help=MCP_HELP, context_settings={"allow_interspersed_args": False})
def mcp_command(
    command: Annotated[list[str] | None, typer.Argument(help="the MCP server to start, after --: COMMAND ARGS...")] = None,
    guards: Annotated[str, typer.Option("--guards", "-g", help="guard stack: on (loop and result checks), off, or a comma list such as loop,result")] = "on",
    budget: Annotated[str | None, typer.Option(help="a budget per window, e.g. tool_calls=50,seconds=600 (none by default)")] = None,
    idle: Annotated[float, typer.Option(min=0.01, help="seconds without a call that end a window (its guard state and run)")] = 300.0,
    call_timeout: Annotated[float, typer.Option(min=0.01, help="seconds the server has to answer one request")] = 120.0,
    startup_timeout: Annotated[float, typer.Option(min=0.01, help="seconds the server has to start and answer initialize")] = 30.0,
    listen: Annotated[str | None, typer.Option(help="serve Streamable HTTP on HOST:PORT instead of stdio")] = None,
    upstream: Annotated[str | None, typer.Option(help="a Streamable HTTP MCP server's URL, instead of COMMAND")] = None,
    exempt: Annotated[list[str] | None, typer.Option("--exempt", help="a tool the loop guard does not count, e.g. a status asked for again and again (repeatable)")] = None,
    store: Annotated[str | None, typer.Option(help="the run store: a file or a postgresql:// URL (default $TETHER_STORE or .tether/tether.db)")] = None,
    run_id: Annotated[str | None, typer.Option(help="prefix of the windows' run ids (default mcp-<random>; window n is PREFIX-wn; a prefix already in the store goes on after its last window)")] = None,
) -> None:
    with user_errors():
        from ..errors import UsageError
        from ..gateway.mcp import serve_stdio
        from ..gateway.mcp_upstream import HttpUpstream, StdioUpstream
        from ..gateway.windows import GuardWindows
        from ..ids import check_id
        from ..store import open_store
        from ._harness import parse_budget

        if bool(command) == bool(upstream):
            raise UsageError("give the MCP server either as COMMAND ARGS... after -- or as --upstream URL, not both"
                             if command else "no MCP server: give COMMAND ARGS... after --, or --upstream URL")
        if upstream and not upstream.startswith(("http://", "https://")):
            raise UsageError(f"--upstream {upstream!r}: expected an http:// or https:// URL")
        if run_id is not None:
            check_id(run_id, "run id")
        stack = gateway_stack(guards, parse_budget(budget) if budget else None, exempt or ())
        label = f"{guards}+budget" if budget else guards
        db = open_store(store)
        windows = GuardWindows(guards=stack, guards_label=label, store=db, idle=idle, base_id=run_id,
                               meta={"gateway": "mcp", "server": list(command or []) or upstream,
                                     "budget": budget})
        if command:
            env = dict(os.environ)

            def connect(on_message):
                return StdioUpstream(command, on_message, startup_timeout=startup_timeout, env=env)
        else:
            def connect(on_message):
                return HttpUpstream(upstream, on_message, startup_timeout=startup_timeout)

        try:
            if listen:
                from ..gateway._http import parse_listen, serve
                from ..gateway.mcp_http import mcp_app

                host, port = parse_listen(listen)
                err_console.print(f"tether guard mcp: serving Streamable HTTP on http://{host}:{port}/mcp "
                                  f"(windows {windows.base_id}-w*, store {db.where})", highlight=False)
                serve(mcp_app(connect, windows=windows, call_timeout=call_timeout), host, port)
            else:
                try:
                    asyncio.run(serve_stdio(connect, windows=windows, call_timeout=call_timeout))
                except KeyboardInterrupt:
                    windows.shutdown("interrupted")
        finally:                 # a no-op when the server's own ending wrote everything
            windows.shutdown("the gateway stopped")
    # stdout is the MCP wire: the summary goes to stderr
    runs = ", ".join(windows.run_ids) or "no tool calls"
    err_console.print(f"tether guard mcp: {len(windows.run_ids)} window(s): {runs} · {db.where}", highlight=False)
