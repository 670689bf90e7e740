"""Framework adapters: tether's guards, harness tools and recording inside other agents' loops.

Each adapter is an optional extra, imported lazily:

* :mod:`tether.adapters.pydantic_ai` (``pip install 'tether[pydantic-ai]'``): a
  pydantic-ai capability that brings the harness tools and records and guards
  every model request;
* :mod:`tether.adapters.openai_agents` (``pip install 'tether[openai-agents]'``):
  the OpenAI Agents SDK, through a wrapped ``Model``, function tools and run hooks;
* :mod:`tether.adapters.langchain` (``pip install 'tether[langchain]'``): LangChain
  v1 agent middleware (``wrap_model_call``, ``wrap_tool_call``);
* :mod:`tether.adapters.mcp_proxy` (``pip install 'tether[mcp]'``): a guarded stdio
  proxy in front of any MCP server (``tether guard mcp``).

Every adapter drives a :class:`tether.runtime.RunSession`: the framework's own
loop decides, the session records, guards and runs the harness's tools.
"""

from __future__ import annotations

__all__: list[str] = []
