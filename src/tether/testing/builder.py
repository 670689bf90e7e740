"""Build trajectories by hand: for testing scorers, guards and reports.

    t = (TrajectoryBuilder(case_id="C4-LD-01")
         .user("查一下下周五北京到上海的机票")
         .call("search_flights", {"date": "下周五"}, error="Error: Invalid date")
         .final("请告诉我具体日期"))
"""

from __future__ import annotations

from typing import Any

from ..events import (
    AgentMessage,
    ModelDecisionEvent,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
    UserMessage,
)
from ..messages import DecisionKind, ToolCallRequest
from ..status import TerminalStatus


class TrajectoryBuilder:
    def __init__(self, *, case_id: str | None = None, model: str = "hand-built"):
        self.t = Trajectory()
        self.step = 0
        self.t.append(RunStarted(run_id="built", model=model, case_id=case_id))

    def user(self, content: str, *, source: str = "input") -> "TrajectoryBuilder":
        self.t.append(UserMessage(content=content, source=source))  # type: ignore[arg-type]
        return self

    def history(self, role: str, content: str, *, question: bool = False) -> "TrajectoryBuilder":
        if role == "user":
            self.t.append(UserMessage(content=content, source="history"))
        else:
            self.t.append(AgentMessage(content=content, kind="question" if question else "text", source="history"))
        return self

    def call(self, tool: str, arguments: dict[str, Any] | None = None, *, data: Any = None,
             error: str | None = None, error_type: str = "tool_error", source: str = "tool") -> "TrajectoryBuilder":
        """One model step calling one tool, with its result (``error`` makes it fail)."""
        self.step += 1
        cid = f"c{self.step}"
        args = arguments or {}
        self.t.append(ModelDecisionEvent(step=self.step, kind=DecisionKind.TOOL_CALLS,
                                         tool_calls=[ToolCallRequest(id=cid, name=tool, arguments=args)]))
        self.t.append(ToolCallEvent(step=self.step, call_id=cid, tool=tool, arguments=args))
        self.t.append(ToolResultEvent(step=self.step, call_id=cid, tool=tool, ok=error is None, data=data,
                                      error=error, error_type=error_type if error else None, source=source))
        return self

    def repeat(self, n: int, tool: str, arguments: dict[str, Any] | None = None, **result: Any) -> "TrajectoryBuilder":
        for _ in range(n):
            self.call(tool, arguments, **result)
        return self

    def ask(self, question: str, answer: str | None = None) -> "TrajectoryBuilder":
        self.step += 1
        self.t.append(ModelDecisionEvent(step=self.step, kind=DecisionKind.QUESTION, text=question))
        self.t.append(AgentMessage(content=question, kind="question", source="model", step=self.step))
        if answer is not None:
            self.t.append(UserMessage(content=answer, source="simulator"))
        return self

    def final(self, reply: str, status: TerminalStatus = TerminalStatus.COMPLETED) -> Trajectory:
        self.step += 1
        self.t.append(ModelDecisionEvent(step=self.step, kind=DecisionKind.FINAL, text=reply))
        self.t.append(RunFinished(status=status, reply=reply, steps=self.step))
        return self.t

    def end(self, status: TerminalStatus, reply: str = "") -> Trajectory:
        self.t.append(RunFinished(status=status, reply=reply, steps=self.step))
        return self.t
