"""The one place the adapters import the run-session API from.

``tether.runtime.RunSession`` is being written on main; until it lands the
adapters run on :mod:`._shim`, which implements the same contract.
"""

from __future__ import annotations

try:  # pragma: no cover - which branch runs depends on main
    from ..runtime import AgentTask, RunSession, RunStop  # type: ignore[attr-defined]
    from ..runtime import drive_agent  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    from ._shim import AgentTask, RunSession, RunStop, drive_agent

from ..models import ModelRequest, ModelResponse
from typing import Awaitable, Callable


def attach_finisher(session: RunSession, finisher: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> None:
    """Give the session the adapter's own model for a guard's finish-up request
    (one last request without tools, so the user gets an answer)."""
    setter = getattr(session, "set_finisher", None)
    if setter is not None:
        setter(finisher)


__all__ = ["AgentTask", "RunSession", "RunStop", "attach_finisher", "drive_agent"]
