"""A fault library: the failures real tools have, injected per tool, deterministically.

Faults sit between the agent and the tools as a :class:`FaultLayer` (a
``ToolLayer``), so they reach any tool: a real one, a :class:`~tether.tools.doubles.Stub`
or a stateful :class:`~tether.tools.doubles.Fake`::

    layer = FaultLayer({
        "check_refund": FailFirst(1, Timeout()),            # times out once, then works
        "create_refund": OnCalls([1], ResponseLost()),      # committed, but the answer is lost
    })
    tools = fake.toolset().with_layer(layer)

The same faults as data (so a case file can carry them)::

    FaultLayer.from_data([
        {"tool": "check_refund", "fault": "timeout", "first": 1},
        {"tool": "create_refund", "fault": "response_lost", "calls": [1]},
        {"tool": "get_order", "fault": {"type": "partial_result", "fields": ["total_amount"]}},
        {"tool": "search", "sequence": ["rate_limited", None, "empty_result"]},
    ])

| fault | the tool runs? | the agent sees |
|---|---|---|
| ``timeout`` | no | error ``timeout`` |
| ``rate_limited`` | no | error ``rate_limited``, ``data: {"retry_after": seconds}`` |
| ``empty_result`` | no | success with an empty value (``{}`` unless given) |
| ``partial_result`` | yes | its result with the chosen fields set to ``null`` |
| ``permission_denied`` | no | error ``permission_denied`` |
| ``unknown_error`` | no | error ``unknown_error`` |
| ``latency`` | yes, after a delay | its result |
| ``response_lost`` | **yes**: the side effect happens | error ``timeout``, same text as ``timeout`` |

Calls are counted per tool, from 1, by the layer. Nothing is random: the same
calls get the same faults on every run. Delays go through the layer's
``sleep`` (``asyncio.sleep`` by default), so tests can pass a fake sleeper.
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Any, Awaitable, Callable, Iterable, Literal, Mapping, Protocol, Union

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, TypeAdapter, field_validator, model_validator

from ._tool import CallNext, ToolResult, ToolSet

Sleep = Callable[[float], Awaitable[Any]]
SOURCE = "fault"   # ToolResult.source of every injected answer


class BaseFault(BaseModel):
    """Base of every fault. Subclass it (``apply``) for a fault of your own; the
    built-in ones also load from data (see :data:`FaultSpec`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    async def apply(self, name: str, arguments: dict[str, Any], call_next: CallNext, *, sleep: Sleep) -> ToolResult:
        raise NotImplementedError

    def fault_for(self, call: int) -> "BaseFault | None":
        """A bare fault hits every call."""
        return self

    @property
    def kind(self) -> str:
        """The fault's data name (``"timeout"``), or its class name for your own faults."""
        return str(getattr(self, "type", type(self).__name__))


def _timed_out(name: str, seconds: float) -> ToolResult:
    return ToolResult.failure(f"{name} timed out after {seconds:g}s", "timeout", source=SOURCE)


class Timeout(BaseFault):
    """The request never got an answer; the tool did not run."""

    type: Literal["timeout"] = "timeout"
    seconds: float = 30.0

    async def apply(self, name: str, arguments: dict[str, Any], call_next: CallNext, *, sleep: Sleep) -> ToolResult:
        return _timed_out(name, self.seconds)


class RateLimited(BaseFault):
    type: Literal["rate_limited"] = "rate_limited"
    retry_after: float = 1.0

    async def apply(self, name: str, arguments: dict[str, Any], call_next: CallNext, *, sleep: Sleep) -> ToolResult:
        return ToolResult.failure(f"429 Too Many Requests: {name} rate limited, retry after {self.retry_after:g}s",
                                  "rate_limited", data={"retry_after": self.retry_after}, source=SOURCE)


class EmptyResult(BaseFault):
    """A success with nothing in it (``value``: ``{}`` by default, ``[]`` for a search)."""

    type: Literal["empty_result"] = "empty_result"
    value: Any = Field(default_factory=dict)

    async def apply(self, name: str, arguments: dict[str, Any], call_next: CallNext, *, sleep: Sleep) -> ToolResult:
        return ToolResult.success(copy.deepcopy(self.value), source=SOURCE)


class PartialResult(BaseFault):
    """The tool runs, but chosen fields of its data come back ``null``.

    A field is a key or a dotted path (``"items.price"``); lists are walked
    element by element. Error results pass through unchanged."""

    type: Literal["partial_result"] = "partial_result"
    fields: list[str] = Field(min_length=1)

    async def apply(self, name: str, arguments: dict[str, Any], call_next: CallNext, *, sleep: Sleep) -> ToolResult:
        result = await call_next(name, arguments)
        if not result.ok:
            return result
        data = copy.deepcopy(result.data)
        for path in self.fields:
            _null_out(data, path.split("."))
        return ToolResult.success(data, source=SOURCE)


def _null_out(data: Any, parts: list[str]) -> None:
    if isinstance(data, list):
        for item in data:
            _null_out(item, parts)
    elif isinstance(data, dict) and parts[0] in data:
        if len(parts) == 1:
            data[parts[0]] = None
        else:
            _null_out(data[parts[0]], parts[1:])


class PermissionDenied(BaseFault):
    type: Literal["permission_denied"] = "permission_denied"
    message: str = "the caller lacks the permission for this operation"

    async def apply(self, name: str, arguments: dict[str, Any], call_next: CallNext, *, sleep: Sleep) -> ToolResult:
        return ToolResult.failure(f"403 Forbidden: {name}: {self.message}", "permission_denied", source=SOURCE)


class UnknownError(BaseFault):
    type: Literal["unknown_error"] = "unknown_error"
    message: str = "internal server error"

    async def apply(self, name: str, arguments: dict[str, Any], call_next: CallNext, *, sleep: Sleep) -> ToolResult:
        return ToolResult.failure(f"500 {name}: {self.message}", "unknown_error", source=SOURCE)


class Latency(BaseFault):
    """The tool answers, ``seconds`` late (through the layer's ``sleep``)."""

    type: Literal["latency"] = "latency"
    seconds: float = Field(gt=0)

    async def apply(self, name: str, arguments: dict[str, Any], call_next: CallNext, *, sleep: Sleep) -> ToolResult:
        await sleep(self.seconds)
        return await call_next(name, arguments)


class ResponseLost(BaseFault):
    """Committed, but the response is lost: the tool **runs** (its side effect
    happens) and the caller gets the same timeout error as :class:`Timeout`."""

    type: Literal["response_lost"] = "response_lost"
    seconds: float = 30.0

    async def apply(self, name: str, arguments: dict[str, Any], call_next: CallNext, *, sleep: Sleep) -> ToolResult:
        await call_next(name, arguments)
        return _timed_out(name, self.seconds)


FaultSpec = Annotated[
    Union[Timeout, RateLimited, EmptyResult, PartialResult, PermissionDenied, UnknownError, Latency, ResponseLost],
    Field(discriminator="type"),
]
FAULT_ADAPTER: TypeAdapter[FaultSpec] = TypeAdapter(FaultSpec)
FAULT_TYPES: tuple[str, ...] = ("timeout", "rate_limited", "empty_result", "partial_result", "permission_denied",
                                "unknown_error", "latency", "response_lost")


def parse_fault(value: "str | Mapping[str, Any] | BaseFault") -> BaseFault:
    """``"timeout"``, ``{"type": "rate_limited", "retry_after": 2}`` or a fault object."""
    if isinstance(value, BaseFault):
        return value
    if isinstance(value, str):
        value = {"type": value}
    return FAULT_ADAPTER.validate_python(dict(value))


# -- schedules: which calls get which fault ---------------------------------------
class Schedule(Protocol):
    def fault_for(self, call: int) -> BaseFault | None: ...


@dataclass(frozen=True)
class FailFirst:
    """The first ``n`` calls get ``fault``; later calls reach the tool."""

    n: int
    fault: BaseFault

    def fault_for(self, call: int) -> BaseFault | None:
        return self.fault if call <= self.n else None


@dataclass(frozen=True)
class OnCalls:
    """The listed calls (counted from 1) get ``fault``."""

    calls: frozenset[int]
    fault: BaseFault

    def __init__(self, calls: Iterable[int], fault: BaseFault):
        object.__setattr__(self, "calls", frozenset(calls))
        object.__setattr__(self, "fault", fault)

    def fault_for(self, call: int) -> BaseFault | None:
        return self.fault if call in self.calls else None


@dataclass(frozen=True)
class FaultSequence:
    """Call *i* gets the *i*-th item (``None``: no fault); calls past the end reach the tool."""

    items: tuple[BaseFault | None, ...]

    def __init__(self, *items: BaseFault | None):
        object.__setattr__(self, "items", tuple(items))

    def fault_for(self, call: int) -> BaseFault | None:
        return self.items[call - 1] if call <= len(self.items) else None


class FaultRule(BaseModel):
    """One fault rule as data: ``{"tool", "fault" | "sequence", "calls"? | "first"?}``.

    ``tool: "*"`` applies to every tool. Without ``calls`` or ``first`` the
    fault hits every call."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    fault: FaultSpec | None = None
    calls: list[PositiveInt] | None = None
    first: PositiveInt | None = None
    sequence: list[FaultSpec | None] | None = None

    @field_validator("fault", mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"type": v} if isinstance(v, str) else v

    @field_validator("sequence", mode="before")
    @classmethod
    def _shorthand_seq(cls, v: Any) -> Any:
        return [{"type": x} if isinstance(x, str) else x for x in v] if isinstance(v, list) else v

    @model_validator(mode="after")
    def _one_schedule(self) -> "FaultRule":
        if (self.fault is None) == (self.sequence is None):
            raise ValueError("give exactly one of 'fault' or 'sequence'")
        if self.calls is not None and self.first is not None:
            raise ValueError("give 'calls' or 'first', not both")
        if self.sequence is not None and (self.calls is not None or self.first is not None):
            raise ValueError("'sequence' already says which calls fail; drop 'calls' / 'first'")
        return self

    def schedule(self) -> Schedule:
        if self.sequence is not None:
            return FaultSequence(*self.sequence)
        if self.fault is None:  # unreachable after validation; keeps the type checker honest
            raise ValueError("a fault rule needs 'fault' or 'sequence'")
        if self.first is not None:
            return FailFirst(self.first, self.fault)
        if self.calls is not None:
            return OnCalls(self.calls, self.fault)
        return self.fault


@dataclass(frozen=True)
class Injection:
    """One fault the layer injected: which tool, which call, which fault type."""

    tool: str
    call: int
    fault: str


class FaultLayer:
    """A ToolLayer injecting faults per tool, by call number. ``injected`` logs each one.

    The layer counts calls across everything it sees: use one per run, or
    :meth:`reset` it between runs."""

    def __init__(self, faults: Mapping[str, Schedule] | Iterable[FaultRule | Mapping[str, Any]] = (), *,
                 sleep: Sleep = asyncio.sleep):
        self.rules: list[tuple[str, Schedule]] = []
        if isinstance(faults, Mapping):
            self.rules = [(tool, schedule) for tool, schedule in faults.items()]
        else:
            for rule in faults:
                rule = rule if isinstance(rule, FaultRule) else FaultRule.model_validate(dict(rule))
                self.rules.append((rule.tool, rule.schedule()))
        self.sleep = sleep
        self.counts: Counter[str] = Counter()
        self.injected: list[Injection] = []

    @classmethod
    def from_data(cls, rules: Iterable[Mapping[str, Any]], *, sleep: Sleep = asyncio.sleep) -> "FaultLayer":
        return cls([FaultRule.model_validate(dict(r)) for r in rules], sleep=sleep)

    def reset(self) -> None:
        self.counts.clear()
        self.injected.clear()

    def fault_for(self, name: str, call: int) -> BaseFault | None:
        for tool, schedule in self.rules:
            if tool in (name, "*"):
                fault = schedule.fault_for(call)
                if fault is not None:
                    return fault
        return None

    async def __call__(self, name: str, arguments: dict[str, Any], call_next: CallNext) -> ToolResult:
        self.counts[name] += 1
        call = self.counts[name]
        fault = self.fault_for(name, call)
        if fault is None:
            return await call_next(name, arguments)
        self.injected.append(Injection(name, call, fault.kind))
        return await fault.apply(name, arguments, call_next, sleep=self.sleep)


def with_faults(tools: ToolSet, faults: Mapping[str, Schedule] | Iterable[FaultRule | Mapping[str, Any]], *,
                sleep: Sleep = asyncio.sleep) -> ToolSet:
    """``tools`` with a :class:`FaultLayer` added (inside any layers already there)."""
    return tools.with_layer(FaultLayer(faults, sleep=sleep))


__all__ = [
    "FAULT_TYPES", "BaseFault", "EmptyResult", "FailFirst", "FaultLayer", "FaultRule", "FaultSequence", "Injection",
    "Latency", "OnCalls", "PartialResult", "PermissionDenied", "RateLimited", "ResponseLost", "FaultSpec", "Schedule",
    "Timeout", "UnknownError", "parse_fault", "with_faults",
]
