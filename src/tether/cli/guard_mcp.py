"""``tether guard mcp``: a guarded stdio proxy in front of any MCP server."""

from __future__ import annotations

import asyncio
from typing import Annotated, Optional

import typer

from ..guards.stacks import guard_stack
from ._common import err_console, user_errors

app = typer.Typer(help="Put tether's guards in front of another agent's tools.\n\n"
                       "Example:\n\n  tether guard mcp --guards on -- python my_mcp_server.py",
                  no_args_is_help=True)



@app.callback()
def _guard() -> None:
    """Put tether's guards in front of another agent's tools (a group, even with one subcommand)."""


MCP_HELP = """Serve an MCP server's tools over stdio, with the guard stack applied to every call.

Starts COMMAND ARGS... as the upstream MCP server (stdio), and serves the same tools on this
process's stdin/stdout. Every tool call and result goes through the guards: a blocked or stopped
call comes back to the client as a tool error its model reads; once a guard stops the session,
every further call is refused. The session is recorded as a run in the store (tether runs list).

Point any MCP client at it instead of the server, e.g. in Claude Desktop's config:

  "command": "tether", "args": ["guard", "mcp", "--guards", "on", "--", "python", "server.py"]

Examples:

  tether guard mcp -- python my_mcp_server.py

  tether guard mcp --guards loop,budget --store runs.db -- npx -y @modelcontextprotocol/server-filesystem .
"""


@app.command("mcp", help=MCP_HELP, no_args_is_help=True,
             context_settings={"allow_interspersed_args": False})
def mcp_command(
    command: Annotated[list[str], typer.Argument(help="the MCP server to start, after --: COMMAND ARGS...")],
    guards: Annotated[str, typer.Option("--guards", "-g", help="guard stack: on (the reference stack), off, or a comma list such as loop,budget")] = "on",
    store: Annotated[Optional[str], typer.Option(help="the run store: a file or a postgresql:// URL (default $TETHER_STORE or .tether/tether.db)")] = None,
    run_id: Annotated[Optional[str], typer.Option(help="id of the recorded run (default mcp-<random>)")] = None,
) -> None:
    with user_errors():
        from ..adapters.mcp_proxy import serve_stdio
        from ..store import open_store

        stack = guard_stack(guards)
        db = open_store(store)
        result = asyncio.run(serve_stdio(command, guards=stack(), guards_label=guards, store=db, run_id=run_id))
    # stdout is the MCP wire: the summary goes to stderr
    err_console.print(f"tether guard mcp: run {result.run_id} · {result.status} · {db.path}", highlight=False)
