"""Model doubles that ship with tether: users test their agents with them.

* :class:`ScriptedModel` is a strict queue: one more request than scripted
  raises :class:`~tether.errors.ScriptExhausted` naming the step, and
  :meth:`ScriptedModel.assert_exhausted` fails on leftovers at teardown.
* :class:`FunctionModel` lets a callable decide.
* :class:`MappingModel` looks its decision up by a key computed from the
  request (its canonical hash, the last user message, the last tool result):
  an unmapped request raises :class:`UnmappedRequest` naming the step and the
  closest key, and :meth:`MappingModel.assert_all_used` fails on mappings no
  request needed.
"""

from __future__ import annotations

import difflib
import inspect
import json
from collections import Counter
from typing import Awaitable, Callable, Iterable, Literal, Mapping

from ..errors import ScriptExhausted, ScriptLeftover, UsageError
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


# -- MappingModel ---------------------------------------------------------------
class UnmappedRequest(UsageError):
    """A :class:`MappingModel` got a request whose key it has no decision for."""

    def __init__(self, model: str, step: int, key: str, closest: str | None, mapped: int):
        self.model = model
        self.step = step
        self.key = key
        self.closest = closest
        hint = f"; closest mapped key: {closest!r}" if closest is not None else ""
        super().__init__(f"{model}: unmapped request at step {step}: key {key!r} is not one of the "
                         f"{mapped} mapped key(s){hint}")


class UnusedMappings(UsageError):
    """A :class:`MappingModel` ended with mappings no request needed (checked at teardown)."""

    def __init__(self, model: str, unused: list[str], mapped: int):
        self.model = model
        self.unused = unused
        super().__init__(f"{model}: {len(unused)} of {mapped} mapping(s) never used: "
                         + ", ".join(repr(k) for k in unused))


KeyFn = Callable[[ModelRequest], str]
KeyPreset = Literal["hash", "last_user_message", "last_tool_result"]


def key_request_hash(request: ModelRequest) -> str:
    """The request's canonical hash (messages and tool specs as canonical JSON)."""
    return request.canonical_hash()


def key_last_user_message(request: ModelRequest) -> str:
    """The text of the last user message."""
    return request.last_user_text


def key_last_tool_result(request: ModelRequest) -> str:
    """``"<tool>:ok"`` or ``"<tool>:<error_type>"`` for the last message when it is a
    tool result (the last one, when a decision made several calls); ``"start"``
    when the model has not seen a tool result since the last user message."""
    for m in reversed(request.messages):
        if m.role == "system":
            continue
        if m.role != "tool":
            return "start"
        try:
            envelope = json.loads(m.content)
        except json.JSONDecodeError:
            envelope = {}
        outcome = "ok" if envelope.get("ok", True) else (envelope.get("error_type") or "error")
        return f"{m.name}:{outcome}"
    return "start"


_PRESETS: dict[str, KeyFn] = {
    "hash": key_request_hash,
    "last_user_message": key_last_user_message,
    "last_tool_result": key_last_tool_result,
}


class MappingModel:
    """Answers each request with the decision mapped to the request's key.

    The key is the canonical request hash by default; ``key="last_user_message"``,
    ``key="last_tool_result"`` or any ``fn(request) -> str`` makes mappings by
    hand easy. A mapping may answer many requests (a retry that sees the same
    ``"check_refund:timeout"`` gets the same decision); an unmapped request
    fails loudly, it never falls back to a default.
    """

    def __init__(self, mapping: Mapping[str, Decision | ModelResponse], *,
                 key: KeyPreset | KeyFn = "hash", name: str = "mapping"):
        if isinstance(key, str):
            if key not in _PRESETS:
                raise UsageError(f"unknown key preset {key!r}; use one of {', '.join(_PRESETS)} or a function")
            key = _PRESETS[key]
        self.name = name
        self.key_fn: KeyFn = key
        self.mapping: dict[str, Decision | ModelResponse] = dict(mapping)
        self.used: Counter[str] = Counter()
        self.lookups: list[tuple[int, str]] = []   # (step, key) in request order
        self.requests: list[ModelRequest] = []

    def key_of(self, request: ModelRequest) -> str:
        return self.key_fn(request)

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        key = self.key_fn(request)
        if key not in self.mapping:
            close = difflib.get_close_matches(key, list(self.mapping), n=1, cutoff=0.0)
            raise UnmappedRequest(self.name, request.step, key, close[0] if close else None, len(self.mapping))
        self.used[key] += 1
        self.lookups.append((request.step, key))
        item = self.mapping[key]
        if isinstance(item, ModelResponse):
            return item
        return ModelResponse(decision=item, usage=_estimate_usage(request, item))

    @property
    def unused(self) -> list[str]:
        return [k for k in self.mapping if not self.used[k]]

    def assert_all_used(self) -> None:
        if self.unused:
            raise UnusedMappings(self.name, self.unused, len(self.mapping))
