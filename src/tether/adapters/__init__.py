"""Framework adapters: tether's guards, harness tools and recording inside other agents' loops.

Each adapter is an optional extra, imported lazily:

* :mod:`tether.adapters.pydantic_ai` (``pip install 'tether[pydantic-ai]'``): a
  pydantic-ai capability that brings the harness tools and records and guards
  every model request;
* :mod:`tether.adapters.openai_agents` (``pip install 'tether[openai-agents]'``):
  the OpenAI Agents SDK, through a wrapped ``Model``, function tools and run hooks;
* :mod:`tether.adapters.langchain` (``pip install 'tether[langchain]'``): LangChain
  v1 agent middleware (``wrap_model_call``, ``wrap_tool_call``);

MCP servers and agents in other languages are guarded from outside, by the
gateways in :mod:`tether.gateway` (``tether guard mcp``, ``tether gateway``).

Every adapter drives a :class:`tether.runtime.RunSession`: the framework's own
loop decides, the session records, guards and runs the harness's tools.
"""

from __future__ import annotations

__all__: list[str] = []
