"""The guarded run: one session object, one driver, agents on top.

* :class:`RunSession`: a run in progress (record, state, guards, gates);
  tether's loop and every framework adapter drive it.
* :func:`run_agent`: tether's own loop around a Model; :func:`run_task`:
  any agent under test (:class:`Agent`) on a task.
* :func:`run_plan_execute_review`: the plan-execute-review agent.
* :func:`resume_agent`, :func:`resume_task`, :func:`resume_plan_execute_review`:
  continue a stored run from its last checkpoint (loaded on first use).
"""

from typing import TYPE_CHECKING

from .._faces import lazy_names

from ..errors import RunStop
from .loop import Agent, AgentTask, LoopAgent, drive
from .plan import PlanExecuteReview, PlanRunResult, PlanStep, run_plan_execute_review, run_plan_execute_review_sync
from .runner import run_agent, run_agent_sync, run_task
from .session import RunConfig, RunResult, RunSession, RunState, SimulatedUser, Turn, current_session, side_request

_LAZY = {"resume_agent": ".durable", "resume_task": ".durable", "resume_plan_execute_review": ".plan"}
__getattr__, __dir__ = lazy_names(__name__, _LAZY)

if TYPE_CHECKING:
    from .durable import resume_agent, resume_task
    from .plan import resume_plan_execute_review

__all__ = ["Agent", "AgentTask", "LoopAgent", "PlanExecuteReview", "PlanRunResult", "PlanStep", "RunConfig",
           "RunResult", "RunSession", "RunState", "RunStop", "SimulatedUser", "Turn", "current_session", "drive",
           "resume_agent", "resume_plan_execute_review", "resume_task", "run_agent", "run_agent_sync",
           "run_plan_execute_review", "run_plan_execute_review_sync", "run_task", "side_request"]
