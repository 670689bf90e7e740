"""Framework adapters: tether's guards, harness tools and recording inside other agents' loops.

Each adapter is an optional extra, imported lazily (its names are on this face,
``from tether.adapters import TetherMiddleware``):

* :mod:`tether.adapters.pydantic_ai` (``pip install 'tether[pydantic-ai]'``): the
  ``TetherGuard()`` capability (``Agent(..., capabilities=[TetherGuard()])``);
* :mod:`tether.adapters.openai_agents` (``pip install 'tether[openai-agents]'``):
  ``guard_runs()``, the SDK's runner with tether around every ``Runner.run``;
* :mod:`tether.adapters.langchain` (``pip install 'tether[langchain]'``): the
  ``TetherMiddleware()`` agent middleware for ``create_agent``.

MCP servers and agents in other languages are guarded from outside, by the
gateways in :mod:`tether.gateway` (``tether guard mcp``, ``tether gateway``).

Each is one line in production (every model call and tool call of the agent
guarded, gated and recorded as a run in the store, :mod:`._guarded`) and the
same object runs the agent unchanged under ``tether eval --agent``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._faces import lazy_names

# Each name loads its adapter (and so needs its extra) on first use; an adapter
# imported without its extra says which one to install.
_LAZY = {
    "PydanticAIAgent": ".pydantic_ai",
    "TetherGuard": ".pydantic_ai",
    "tether_function_model": ".pydantic_ai",
    "GuardedModel": ".openai_agents",
    "OpenAIAgentsAgent": ".openai_agents",
    "TetherRunner": ".openai_agents",
    "guard_runs": ".openai_agents",
    "tether_responder": ".openai_agents",
    "LangChainAgent": ".langchain",
    "TetherChatModel": ".langchain",
    "TetherMiddleware": ".langchain",
    "cassette": ".replay",
}
__getattr__, __dir__ = lazy_names(__name__, _LAZY)

if TYPE_CHECKING:
    from .langchain import LangChainAgent, TetherChatModel, TetherMiddleware
    from .openai_agents import GuardedModel, OpenAIAgentsAgent, TetherRunner, guard_runs, tether_responder
    from .pydantic_ai import PydanticAIAgent, TetherGuard, tether_function_model
    from .replay import cassette

__all__ = sorted(["framework_agent", *_LAZY])


def framework_agent(obj: Any) -> Any:
    """A framework's own agent object as a tether agent under test (None if it is not one):
    a ``pydantic_ai.Agent``, an Agents SDK ``agents.Agent``, or a compiled LangChain
    ``create_agent`` graph (carrying :class:`~tether.adapters.langchain.TetherMiddleware`)."""
    module = type(obj).__module__ or ""
    if module.startswith("pydantic_ai.") and hasattr(obj, "run_sync") and hasattr(obj, "override"):
        from .pydantic_ai import PydanticAIAgent

        return PydanticAIAgent(obj)
    if module.startswith("agents.") and type(obj).__name__ == "Agent":
        from .openai_agents import OpenAIAgentsAgent

        return OpenAIAgentsAgent(obj)
    if module.startswith("langgraph.") and hasattr(obj, "ainvoke"):
        from .langchain import LangChainAgent

        return LangChainAgent(obj, name=f"langchain:{getattr(obj, 'name', None) or 'agent'}")
    return None
