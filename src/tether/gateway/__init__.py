"""Gateways: tether's guards in front of clients tether has no adapter for.

* :mod:`.mcp` (``tether guard mcp``): an MCP pass-through with guards on tool
  calls, over stdio or Streamable HTTP; each burst of calls is a run of kind
  ``mcp`` (:mod:`.windows`).
* :mod:`.llm` (``tether gateway``): an OpenAI-compatible HTTP gateway in front
  of a model API; each conversation is a run of kind ``gateway``.
"""
