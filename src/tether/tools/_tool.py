"""The Tool seam: a named, schema'd callable, and one result envelope.

Every tool answer, whatever happened, is a :class:`ToolResult`
``{ok, data, error, error_type}``. An unknown tool, arguments that fail the
schema, or a tool that raises become error results the agent sees; they never
crash the run.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
from typing import Any, Awaitable, Callable, Iterable, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..messages import ToolSpec


class ToolResult(BaseModel):
    """The one result envelope."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    data: Any = None
    error: str | None = None
    error_type: str | None = None
    source: str = Field(default="tool", exclude=True)  # who answered; kept out of what the model sees

    @classmethod
    def success(cls, data: Any, *, source: str = "tool") -> "ToolResult":
        return cls(ok=True, data=data, source=source)

    @classmethod
    def failure(cls, error: str, error_type: str = "tool_error", *, data: Any = None, source: str = "tool") -> "ToolResult":
        return cls(ok=False, error=error, error_type=error_type, data=data, source=source)

    def for_model(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


ToolFn = Callable[..., Any]
StatusQuery = Callable[[str, dict[str, Any]], "ToolResult | None | Awaitable[ToolResult | None]"]

# The idempotency key of the side-effecting call in flight (set by the run loop,
# read by Tool.invoke for tools that take one).
current_idempotency_key: contextvars.ContextVar[str | None] = contextvars.ContextVar("tether_idempotency_key", default=None)


_VALIDATORS: dict[str, Any] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """A checked validator per distinct schema, built once per process (schema
    checks and validator construction were most of a fresh world's cost)."""
    key = json.dumps(schema, sort_keys=True, default=str)
    found = _VALIDATORS.get(key)
    if found is None:
        import jsonschema          # ~0.1 s to import: only where a tool is built (not for `tether runs ...`)

        jsonschema.Draft202012Validator.check_schema(schema)
        found = _VALIDATORS[key] = jsonschema.Draft202012Validator(schema)
    return found


class Tool:
    """A tool: name, description, JSON-schema parameters and an implementation.

    ``fn`` receives the arguments as keyword arguments and may be sync or
    async. It may return a :class:`ToolResult`, or plain data (wrapped as a
    success); an exception becomes an error result.
    """

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any] | type[BaseModel] | None = None,
        fn: ToolFn | None = None,
        *,
        side_effect: bool = False,
        idempotency_param: str | None = None,
        status_query: StatusQuery | None = None,
    ):
        """``side_effect``: the tool changes the world (the run loop records an
        intent and an outcome around each call, and never blindly repeats one).
        ``idempotency_param``: the keyword the run loop's idempotency key is
        passed as (not part of the schema the model sees). ``status_query``:
        ``fn(key, arguments)`` returning the effect's result if it happened,
        ``None`` if it did not; used when an outcome is unknown."""
        self.name = name
        self.description = description
        self.side_effect = side_effect
        self.idempotency_param = idempotency_param
        self.status_query = status_query
        self.fn = fn
        self._args_model: type[BaseModel] | None = None
        if isinstance(parameters, type) and issubclass(parameters, BaseModel):
            self._args_model = parameters
            schema = parameters.model_json_schema()
            schema.pop("title", None)
            self.parameters = schema
        else:
            self.parameters = parameters or {"type": "object", "properties": {}}
        self._validator = _validator(self.parameters)

    @property
    def spec(self) -> ToolSpec:
        # the fields are already checked (a run builds every tool's spec: no second validation)
        return ToolSpec.model_construct(name=self.name, description=self.description, parameters=self.parameters,
                                        side_effect=bool(self.side_effect))

    def validate(self, arguments: dict[str, Any]) -> str | None:
        """None when the arguments fit the schema, else a readable reason."""
        if self._args_model is not None:
            try:
                self._args_model.model_validate(arguments)
            except Exception as exc:
                errs = getattr(exc, "errors", lambda: [])()
                return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(arguments)'}: {e['msg']}" for e in errs) or str(exc)
            return None
        errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.path))
        if not errors:
            return None
        return "; ".join(f"{'.'.join(map(str, e.path)) or '(arguments)'}: {e.message}" for e in errors[:5])

    async def invoke(self, arguments: dict[str, Any]) -> ToolResult:
        if self.fn is None:
            return ToolResult.failure(f"tool {self.name!r} has no implementation", "not_implemented", source="runner")
        kwargs = dict(arguments)
        key = current_idempotency_key.get()
        if self.idempotency_param and key is not None:
            kwargs[self.idempotency_param] = key
        try:
            out = self.fn(**kwargs)
            if inspect.isawaitable(out):
                out = await out
        except asyncio.TimeoutError as exc:
            return ToolResult.failure(f"{self.name} timed out: {exc}", "timeout")
        except Exception as exc:  # a tool that raises is an error result, not a crash
            return ToolResult.failure(f"{type(exc).__name__}: {exc}", "exception")
        if isinstance(out, ToolResult):
            return out
        return ToolResult.success(out)


def tool(name: str | None = None, *, description: str | None = None, side_effect: bool = False,
         parameters: dict[str, Any] | type[BaseModel] | None = None, idempotency_param: str | None = None,
         status_query: StatusQuery | None = None) -> Callable[[ToolFn], Tool]:
    """Decorator: turn a function into a :class:`Tool`.

    Without ``parameters`` the schema is built from the signature's type hints
    (the ``idempotency_param``, if any, is left out of it).
    """

    def wrap(fn: ToolFn) -> Tool:
        params = parameters if parameters is not None else _schema_from_signature(fn, skip=idempotency_param)
        return Tool(name or fn.__name__, description or (inspect.getdoc(fn) or "").strip(), params, fn,
                    side_effect=side_effect, idempotency_param=idempotency_param, status_query=status_query)

    return wrap


def _schema_from_signature(fn: ToolFn, skip: str | None = None) -> type[BaseModel]:
    from pydantic import create_model

    fields: dict[str, Any] = {}
    for pname, p in inspect.signature(fn).parameters.items():
        if pname == skip:
            continue
        ann = p.annotation if p.annotation is not inspect.Parameter.empty else Any
        default = p.default if p.default is not inspect.Parameter.empty else ...
        fields[pname] = (ann, default)
    return create_model(f"{fn.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields)


class CallNext(Protocol):
    def __call__(self, name: str, arguments: dict[str, Any]) -> Awaitable[ToolResult]: ...


class ToolLayer(Protocol):
    """Middleware around tool calls: case intercepts, mocks, faults, recorders."""

    async def __call__(self, name: str, arguments: dict[str, Any], call_next: CallNext) -> ToolResult: ...


class ToolSet:
    """The tools an agent sees, plus the layers the harness puts around them."""

    def __init__(self, tools: Iterable[Tool] = (), layers: Iterable[ToolLayer] = ()):
        self.tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)
        self.layers: list[ToolLayer] = list(layers)

    def add(self, t: Tool) -> None:
        self.tools[t.name] = t

    def __contains__(self, name: str) -> bool:
        return name in self.tools

    def names(self) -> list[str]:
        return list(self.tools)

    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self.tools.values()]

    def with_layer(self, layer: ToolLayer) -> "ToolSet":
        return ToolSet(self.tools.values(), [*self.layers, layer])

    def check(self, name: str, arguments: Any) -> ToolResult | None:
        """The error result for an unknown tool or bad arguments; None when the call may go ahead."""
        t = self.tools.get(name)
        if t is None:
            known = ", ".join(sorted(self.tools)) or "(none)"
            return ToolResult.failure(f"unknown tool {name!r}; available tools: {known}", "unknown_tool", source="runner")
        if not isinstance(arguments, dict):
            return ToolResult.failure(
                f"arguments for {name} must be a JSON object, got {type(arguments).__name__}",
                "invalid_arguments", source="runner")
        problem = t.validate(arguments)
        if problem:
            return ToolResult.failure(f"invalid arguments for {name}: {problem}", "invalid_arguments", source="runner")
        return None

    async def call(self, name: str, arguments: Any) -> ToolResult:
        """Validate, run through the layers, invoke. Never raises for bad input."""
        problem = self.check(name, arguments)
        if problem is not None:
            return problem

        async def terminal(n: str, a: dict[str, Any]) -> ToolResult:
            return await self.tools[n].invoke(a)

        call_next: CallNext = terminal
        for layer in reversed(self.layers):
            call_next = _bind(layer, call_next)
        try:
            return await call_next(name, arguments)
        except Exception as exc:  # a faulty layer is still an error result
            return ToolResult.failure(f"{type(exc).__name__}: {exc}", "exception", source="runner")


def _bind(layer: ToolLayer, nxt: CallNext) -> CallNext:
    async def call(name: str, arguments: dict[str, Any]) -> ToolResult:
        return await layer(name, arguments, nxt)

    return call
