"""tether: keep LLM tool-using agents on a short leash.

Guard a running agent, test agents deterministically, measure their stability.
The public API is what ``__all__`` lists; everything else is private.
"""

from .errors import (
    CaseFileError,
    ModelFailure,
    ModelRequestsForbidden,
    RunFailure,
    ScriptExhausted,
    ScriptLeftover,
    TetherError,
    UnknownModelSpec,
    UsageError,
)
from .events import Trajectory
from .messages import Decision, DecisionKind, Message, ToolCallRequest, ToolSpec, Usage
from .models import (
    FunctionModel,
    Model,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    allow_model_requests,
    resolve_model,
)
from .runtime import RunConfig, RunResult, Turn, run_agent, run_agent_sync
from .status import TerminalStatus
from .tools import Tool, ToolResult, ToolSet, tool

__version__ = "0.1.0"

__all__ = [
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
    "tool",
]
