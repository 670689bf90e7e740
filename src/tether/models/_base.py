"""The Model seam: one async method.

``await model.request(ModelRequest) -> ModelResponse``. A response holds one
decision (tool calls, a final answer, or a question to the user) and usage.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
from typing import Any, Iterator, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ..errors import ModelRequestsForbidden
from ..messages import Decision, Message, ToolSpec, Usage, canonical_json


class ModelRequest(BaseModel):
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    step: int = 0

    def canonical_hash(self) -> str:
        payload = {
            "messages": [m.model_dump(mode="json", exclude_defaults=True) for m in self.messages],
            "tools": [t.model_dump(mode="json") for t in self.tools],
        }
        return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:16]

    @property
    def last_user_text(self) -> str:
        for m in reversed(self.messages):
            if m.role == "user":
                return m.content
        return ""


class ModelResponse(BaseModel):
    decision: Decision
    usage: Usage = Field(default_factory=Usage)
    # The provider's stop reason as it sent it ("stop", "tool_calls", "length", ...);
    # "length" means the reply was cut by the token limit. None: not reported.
    finish_reason: str | None = None
    # Provider adapters: every HTTP attempt of this request (outcome, wire_ms on the
    # wire, queued_ms waiting for a connection slot); the last one answered.
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    # The request parameters sent besides messages and tools (temperature, max_tokens, tool_choice, ...).
    params: dict[str, Any] = Field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        """The reply was cut by the output token limit."""
        return self.finish_reason in TRUNCATED_REASONS

    @property
    def wire_ms(self) -> float | None:
        """Time on the wire of the attempt that answered (None: no attempts reported)."""
        return float(self.attempts[-1].get("wire_ms") or 0.0) if self.attempts else None

    @property
    def queued_ms(self) -> float:
        """Time spent waiting for a connection slot, over all attempts."""
        return sum(float(a.get("queued_ms") or 0.0) for a in self.attempts)


# Stop reasons that mean "cut by the token limit": OpenAI's and Anthropic's spelling.
TRUNCATED_REASONS = frozenset({"length", "max_tokens"})


@runtime_checkable
class Model(Protocol):
    """Anything with a ``name`` and an async ``request`` is a model."""

    name: str

    async def request(self, request: ModelRequest) -> ModelResponse: ...


# -- the switch that forbids real model requests ---------------------------
_ALLOW: contextvars.ContextVar[bool] = contextvars.ContextVar("tether_allow_model_requests", default=True)


def model_requests_allowed() -> bool:
    return _ALLOW.get()


def check_model_requests_allowed(model_name: str) -> None:
    """Real provider adapters call this before any network request."""
    if not _ALLOW.get():
        raise ModelRequestsForbidden(model_name)


@contextlib.contextmanager
def allow_model_requests(allow: bool = True) -> Iterator[None]:
    """Allow (or forbid) real model requests inside the block."""
    token = _ALLOW.set(allow)
    try:
        yield
    finally:
        _ALLOW.reset(token)


def set_model_requests_allowed(allow: bool) -> None:
    """Flip the switch for the whole context (the pytest plugin does this)."""
    _ALLOW.set(allow)
