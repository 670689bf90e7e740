"""The guarded run loop."""

from .runner import RunConfig, RunResult, SimulatedUser, Turn, run_agent, run_agent_sync

__all__ = ["RunConfig", "RunResult", "SimulatedUser", "Turn", "run_agent", "run_agent_sync"]
