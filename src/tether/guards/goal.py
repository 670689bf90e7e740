"""The goal guard: pin the goal, check drift, decide completion by evidence.

* The goal (task, constraints, acceptance criteria) is pinned into every model
  request as a system message that is never trimmed (seed 002 section 5.1).
* Every ``check_every`` steps a drift check asks a judge through the Model seam
  (any model; a scripted one in tests) whether the recent actions serve the
  goal; it must answer starting with ``OK`` or ``DRIFT``. The check is recorded
  in the run (``model_request`` / ``model_decision`` with ``role="drift"``,
  through ``GuardContext.side_request``, which the session provides). The first drift is a
  hint to re-plan; ``max_drift`` drifts in a row escalate to a human (5.2).
* Completion is decided by evidence, not by the model's word (5.3): each
  acceptance criterion names the tool result that proves it. A final answer
  with evidence missing ends as ``partial``, never as success.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from ..events import Trajectory
from ..messages import Message, canonical_json
from ..status import TerminalStatus
from ._base import BaseGuard, GuardContext, Intervention
from .result import _get


class Acceptance(BaseModel):
    """One acceptance criterion and the evidence that proves it: a successful
    result of ``tool`` (whose ``field``, a dotted path, equals ``equals`` when given)."""

    id: str
    description: str = ""
    tool: str
    field: str | None = None
    equals: Any = None


class GoalSpec(BaseModel):
    task: str
    constraints: list[str] = Field(default_factory=list)
    acceptance: list[Acceptance] = Field(default_factory=list)

    def render(self) -> str:
        lines = [f"【目标】{self.task}"]
        if self.constraints:
            lines.append("【约束】" + "；".join(self.constraints))
        if self.acceptance:
            lines.append("【验收】" + "；".join(a.description or a.id for a in self.acceptance))
        lines.append("只有工具返回 ok=true 且字段齐全，才能声称该步骤完成。")
        return "\n".join(lines)


def evidence_for(goal: GoalSpec, trajectory: Trajectory) -> dict[str, str | None]:
    """Acceptance id -> the call id that proves it (None when missing)."""
    found: dict[str, str | None] = {a.id: None for a in goal.acceptance}
    for call, result in trajectory.calls_with_results():
        if result is None or not result.ok or not result.took_effect:
            continue
        for a in goal.acceptance:
            if found[a.id] or a.tool != call.tool:
                continue
            if a.field is not None:
                value = _get(result.data, a.field) if isinstance(result.data, dict) else None
                if value in (None, "", [], {}) or (a.equals is not None and value != a.equals):
                    continue
            found[a.id] = call.call_id
    return found


DRIFT_PROMPT = """目标：{task}
约束：{constraints}
验收：{acceptance}

最近的动作：
{actions}

判断：这些动作是否直接服务于目标？只回答 DRIFT 或 OK，并给一句理由。"""


@dataclass
class GoalGuard(BaseGuard):
    goal: GoalSpec
    judge: Any = None                  # a Model; None disables the drift check
    check_every: int = 3
    max_drift: int = 2
    name: str = "goal"
    drifts_in_a_row: int = 0
    checks: int = 0

    def pinned(self, ctx: GuardContext) -> list[str]:
        return [self.goal.render()]

    async def before_model(self, ctx: GuardContext, request: Any) -> Intervention | None:
        if self.judge is None or ctx.step <= 1 or (ctx.step - 1) % self.check_every:
            return None
        calls = ctx.trajectory.tool_calls()[-self.check_every:]
        if not calls:
            return None
        from ..models import ModelRequest

        prompt = DRIFT_PROMPT.format(
            task=self.goal.task, constraints="；".join(self.goal.constraints),
            acceptance="；".join(a.description or a.id for a in self.goal.acceptance),
            actions="\n".join(f"- {c.tool}({canonical_json(c.arguments)})" for c in calls))
        # recorded as events of the run (role "drift"), its cost kept apart from the agent's
        request = ModelRequest(messages=[Message(role="user", content=prompt)], tools=[], step=ctx.step)
        response = await ctx.side_request(self.judge, request, role="drift")
        answer = response.decision.text.strip()
        self.checks += 1
        if not answer.upper().startswith("DRIFT"):
            self.drifts_in_a_row = 0
            return None
        self.drifts_in_a_row += 1
        numbers = {"drifts_in_a_row": self.drifts_in_a_row, "limit": self.max_drift}
        if self.drifts_in_a_row >= self.max_drift:
            return Intervention("escalate", "goal.drift", f"{self.drifts_in_a_row} drift checks in a row: {answer}", numbers)
        return Intervention("hint", "goal.drift", f"偏离目标：{answer}。请停止当前方向，回到目标重新规划。", numbers)

    def on_final(self, ctx: GuardContext, reply: str) -> Intervention | None:
        found = evidence_for(self.goal, ctx.trajectory)
        missing = [a for a, proof in found.items() if proof is None]
        if not missing:
            return None
        return Intervention("stop", "goal.evidence_missing",
                       f"partially complete: no evidence for {', '.join(missing)} "
                       f"({len(found) - len(missing)} of {len(found)} acceptance criteria proven)",
                       {"proven": len(found) - len(missing), "required": len(found)},
                       status=TerminalStatus.PARTIAL)

    def state(self) -> dict[str, Any]:
        return {"drifts_in_a_row": self.drifts_in_a_row, "checks": self.checks}

    def load_state(self, state: dict[str, Any]) -> None:
        self.drifts_in_a_row = int(state.get("drifts_in_a_row", 0))
        self.checks = int(state.get("checks", 0))
