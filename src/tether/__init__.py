"""tether: keep LLM tool-using agents on a short leash.

Guard a running agent, test agents deterministically, measure their stability.
The public API is what ``__all__`` lists; everything else is private.
"""

# Public names are imported on first use (PEP 562), so `import tether` and the
# CLI start fast; `from tether import X` works as usual.
_PUBLIC = {
    "CaseFileError": ".errors",
    "ModelFailure": ".errors",
    "ModelRequestsForbidden": ".errors",
    "RunFailure": ".errors",
    "RunStop": ".errors",
    "ScriptExhausted": ".errors",
    "ScriptLeftover": ".errors",
    "TetherError": ".errors",
    "UnknownModelSpec": ".errors",
    "UsageError": ".errors",
    "Trajectory": ".events",
    "Decision": ".messages",
    "DecisionKind": ".messages",
    "Message": ".messages",
    "ToolCallRequest": ".messages",
    "ToolSpec": ".messages",
    "Usage": ".messages",
    "FunctionModel": ".models",
    "Model": ".models",
    "ModelRequest": ".models",
    "ModelResponse": ".models",
    "ScriptedModel": ".models",
    "allow_model_requests": ".models",
    "resolve_model": ".models",
    "Agent": ".runtime",
    "AgentTask": ".runtime",
    "RunConfig": ".runtime",
    "RunResult": ".runtime",
    "RunSession": ".runtime",
    "Turn": ".runtime",
    "run_agent": ".runtime",
    "run_agent_sync": ".runtime",
    "run_task": ".runtime",
    "TerminalStatus": ".status",
    "Tool": ".tools",
    "ToolResult": ".tools",
    "ToolSet": ".tools",
    "tool": ".tools",
}


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if False:  # pragma: no cover - for type checkers and IDEs only
    from .errors import (CaseFileError, ModelFailure, ModelRequestsForbidden, RunFailure, RunStop, ScriptExhausted,
                         ScriptLeftover, TetherError, UnknownModelSpec, UsageError)
    from .events import Trajectory
    from .messages import Decision, DecisionKind, Message, ToolCallRequest, ToolSpec, Usage
    from .models import (FunctionModel, Model, ModelRequest, ModelResponse, ScriptedModel, allow_model_requests,
                         resolve_model)
    from .runtime import Agent, AgentTask, RunConfig, RunResult, RunSession, Turn, run_agent, run_agent_sync, run_task
    from .status import TerminalStatus
    from .tools import Tool, ToolResult, ToolSet, tool

from ._version import __version__

__all__ = [
    "Agent",
    "AgentTask",
    "CaseFileError",
    "Decision",
    "DecisionKind",
    "FunctionModel",
    "Message",
    "Model",
    "ModelFailure",
    "ModelRequest",
    "ModelRequestsForbidden",
    "ModelResponse",
    "RunConfig",
    "RunFailure",
    "RunResult",
    "RunSession",
    "RunStop",
    "ScriptExhausted",
    "ScriptLeftover",
    "ScriptedModel",
    "TerminalStatus",
    "TetherError",
    "Tool",
    "ToolCallRequest",
    "ToolResult",
    "ToolSet",
    "ToolSpec",
    "Trajectory",
    "Turn",
    "UnknownModelSpec",
    "Usage",
    "UsageError",
    "__version__",
    "allow_model_requests",
    "resolve_model",
    "run_agent",
    "run_agent_sync",
    "run_task",
    "tool",
]
