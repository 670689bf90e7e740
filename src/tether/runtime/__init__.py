"""The guarded run loop."""

from .runner import RunConfig, RunResult, SimulatedUser, Turn, run_agent, run_agent_sync
from .plan import PlanRunResult, PlanStep, run_plan_execute_review, run_plan_execute_review_sync

__all__ = ["RunConfig", "RunResult", "SimulatedUser", "Turn", "run_agent", "run_agent_sync",
           "PlanRunResult", "PlanStep", "run_plan_execute_review", "run_plan_execute_review_sync"]
