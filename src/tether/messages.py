"""Conversation data shared by the Model seam, the run loop and the events.

The shapes follow the OpenAI chat format closely enough that an adapter is a
thin mapping, but they are provider-neutral.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._vocab import canonical_json  # noqa: F401  (re-exported: tether.messages.canonical_json)


class ToolCallRequest(BaseModel):
    """One tool call the model wants made."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # Raw arguments text when a provider sent something that is not a JSON object.
    raw_arguments: str | None = None


class Message(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class ToolSpec(BaseModel):
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: dict[str, Any]
    side_effect: bool = False


class DecisionKind(StrEnum):
    TOOL_CALLS = "tool_calls"
    FINAL = "final"
    QUESTION = "question"   # the agent asks the user something and waits


class Decision(BaseModel):
    """What the model decided: tool calls, a final answer, or a question."""

    kind: DecisionKind
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    text: str = ""

    @classmethod
    def call(cls, name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None, text: str = "") -> "Decision":
        return cls(
            kind=DecisionKind.TOOL_CALLS,
            tool_calls=[ToolCallRequest(id=id or f"call_{name}", name=name, arguments=arguments or {})],
            text=text,
        )

    @classmethod
    def calls(cls, *calls: tuple[str, dict[str, Any]], text: str = "") -> "Decision":
        return cls(
            kind=DecisionKind.TOOL_CALLS,
            tool_calls=[ToolCallRequest(id=f"call_{i}_{n}", name=n, arguments=a) for i, (n, a) in enumerate(calls)],
            text=text,
        )

    @classmethod
    def final(cls, text: str) -> "Decision":
        return cls(kind=DecisionKind.FINAL, text=text)

    @classmethod
    def ask(cls, text: str) -> "Decision":
        return cls(kind=DecisionKind.QUESTION, text=text)


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost=self.cost + other.cost,
        )

