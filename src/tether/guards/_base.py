"""The Guard seam (the guards themselves come with the guards issue).

A guard observes the run and returns a verdict before each model request and
before each tool call: ``allow`` (None), ``hint`` (a note the model sees on
its next request), ``block`` (the tool call is not executed; the model sees
why), ``stop`` (the run ends with a terminal status), ``escalate`` (a human
decides; until approval gates exist, the run ends as ``needs_human``).
Guards run in list order; the first non-hint verdict wins, hints accumulate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from ..events import Trajectory
from ..messages import ToolCallRequest
from ..status import TerminalStatus


@dataclass(frozen=True)
class Verdict:
    action: Literal["hint", "block", "stop", "escalate"]
    rule: str
    message: str
    numbers: dict[str, float | int | str] = field(default_factory=dict)
    status: TerminalStatus | None = None   # for stop: which ending


@runtime_checkable
class Guard(Protocol):
    name: str

    def before_model(self, trajectory: Trajectory, step: int) -> Verdict | None: ...

    def before_tool(self, trajectory: Trajectory, step: int, call: ToolCallRequest) -> Verdict | None: ...
