"""``tether gateway``: an OpenAI-compatible LLM gateway with tether's guards."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import err_console, user_errors

HELP = """Serve an OpenAI-compatible API in front of a model API, with tether's guards.

Point any agent (Python, TypeScript, Go, any framework) at http://HOST:PORT/v1 instead of its
model API; nothing else changes. /v1/chat/completions and /v1/responses (streamed or not) are
guarded and recorded; every other path passes through untouched. API keys go through in
headers and are never recorded.

A conversation is a run (kind gateway): named by an X-Tether-Run header, else by its opening
messages. The tool calls in each request's history go through the guards before the request
is forwarded: a hint is added as a system message; a stop is answered by the gateway itself,
with the model's own final answer from one request without tools (or --stop-reply), so the
agent's loop ends normally. --budget applies per conversation.

Examples:

  tether gateway --upstream https://api.openai.com/v1 --port 8787

  tether gateway --upstream http://127.0.0.1:8000/v1 --guards on --budget tool_calls=30,tokens=200000

  OPENAI_BASE_URL=http://127.0.0.1:8787/v1 node my-agent.js

Runs: tether runs list --kind gateway; tether runs show RUN_ID.
"""


def gateway_command(
    upstream: Annotated[str, typer.Option(help="the model API's base URL, e.g. https://api.openai.com/v1")],
    port: Annotated[int, typer.Option(min=0, max=65535, help="port to listen on")] = 8787,
    host: Annotated[str, typer.Option(help="address to listen on (loopback by default)")] = "127.0.0.1",
    guards: Annotated[str, typer.Option("--guards", "-g", help="guard stack: on (loop and result checks), off, or a comma list such as loop,result")] = "on",
    budget: Annotated[str | None, typer.Option(help="a budget per conversation, e.g. tool_calls=30,model_calls=40,tokens=200000,cost=0.5")] = None,
    stop_reply: Annotated[str | None, typer.Option(help="answer a stop with this text instead of asking the model for a finish-up")] = None,
    timeout: Annotated[float, typer.Option(min=1, help="seconds the upstream has to answer one request")] = 600.0,
    exempt: Annotated[list[str] | None, typer.Option("--exempt", help="a tool the loop guard does not count, e.g. a status asked for again and again (repeatable)")] = None,
    store: Annotated[str | None, typer.Option(help="the run store: a file or a postgresql:// URL (default $TETHER_STORE or .tether/tether.db)")] = None,
) -> None:
    with user_errors():
        from ..errors import UsageError
        from ..gateway._http import serve
        from ..gateway.llm import GatewayConfig, gateway_app
        from ..guards.stacks import gateway_stack
        from ..store import open_store
        from ._harness import parse_budget

        if not upstream.startswith(("http://", "https://")):
            raise UsageError(f"--upstream {upstream!r}: expected an http:// or https:// URL such as "
                             "https://api.openai.com/v1")
        stack = gateway_stack(guards, parse_budget(budget) if budget else None, exempt or ())
        db = open_store(store)
        config = GatewayConfig(upstream=upstream, guards=stack, guards_label=f"{guards}+budget" if budget else guards,
                               store=db, stop_reply=stop_reply, timeout=timeout)
        err_console.print(f"tether gateway: http://{host}:{port}/v1 -> {upstream} · guards {config.guards_label} · "
                          f"store {db.where}", highlight=False)
        serve(gateway_app(config), host, port)
