"""Model doubles that ship with tether: users test their agents with them.

* :class:`ScriptedModel` is a strict queue: one more request than scripted
  raises :class:`~tether.errors.ScriptExhausted` naming the step, and
  :meth:`ScriptedModel.assert_exhausted` fails on leftovers at teardown.
* :class:`FunctionModel` lets a callable decide.
"""

from __future__ import annotations

import inspect
from typing import Awaitable, Callable, Iterable

from ..errors import ScriptExhausted, ScriptLeftover
from ..messages import Decision, Usage
from ._base import ModelRequest, ModelResponse


def _estimate_usage(request: ModelRequest, decision: Decision) -> Usage:
    """A deterministic token estimate (4 characters a token) for doubles."""
    chars_in = sum(len(m.content) for m in request.messages) + sum(len(t.description) for t in request.tools)
    chars_out = len(decision.text) + sum(len(str(c.arguments)) + len(c.name) for c in decision.tool_calls)
    return Usage(input_tokens=max(1, chars_in // 4), output_tokens=max(1, chars_out // 4))


class ScriptedModel:
    """Plays a fixed list of decisions, in order, exactly once each."""

    def __init__(self, decisions: Iterable[Decision | ModelResponse], *, name: str = "scripted"):
        self.name = name
        self._script: list[Decision | ModelResponse] = list(decisions)
        self.used = 0
        self.requests: list[ModelRequest] = []

    @property
    def remaining(self) -> int:
        return len(self._script) - self.used

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.used >= len(self._script):
            raise ScriptExhausted(self.name, request.step, len(self._script))
        item = self._script[self.used]
        self.used += 1
        if isinstance(item, ModelResponse):
            return item
        return ModelResponse(decision=item, usage=_estimate_usage(request, item))

    def assert_exhausted(self) -> None:
        if self.remaining:
            step = self.requests[-1].step + 1 if self.requests else 1
            raise ScriptLeftover(self.name, self.used, len(self._script), step)


DecideFn = Callable[[ModelRequest], "Decision | ModelResponse | Awaitable[Decision | ModelResponse]"]


class FunctionModel:
    """A model whose decisions come from a function of the request."""

    def __init__(self, fn: DecideFn, *, name: str | None = None):
        self.fn = fn
        self.name = name or f"function:{getattr(fn, '__name__', 'fn')}"
        self.requests: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        out = self.fn(request)
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, ModelResponse):
            return out
        return ModelResponse(decision=out, usage=_estimate_usage(request, out))
