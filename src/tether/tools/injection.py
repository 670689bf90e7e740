"""Case-driven tool injection: the seed's ``tool_intercept`` and ``tool_mock``.

The harness owns the tools an agent sees, so a case can inject faults into any
agent: the layer below sits between the agent and the real (or world) tools.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Annotated, Any, Iterable, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..messages import canonical_json
from ._tool import CallNext, ToolResult


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- tool configs, in the seed's shapes ---------------------------------------
class InjectedResult(_Strict):
    """``{is_error, content}`` exactly as the seed writes it.

    ``content`` is what the tool returns: a JSON string is parsed into data, any
    other text is kept as text. ``error_type`` is tether's optional addition.
    """

    is_error: bool = False
    content: str
    error_type: str | None = None


DEFAULT_FAILURE = InjectedResult(is_error=True, content="Error: Service temporarily unavailable (HTTP 503). "
                                  "Please try again later.", error_type="unavailable")


class _Behaviour(_Strict):
    """How an entry answers over repeated calls (counted per tool, from 1):

    * ``results``: a sequence, the n-th call gets the n-th result (the last repeats);
    * ``fail_first: N``: the first N calls get ``failure``, later ones the result;
    * ``fail_on: [n, ...]``: those calls get ``failure``;
    * ``failure``: the failing result (default: an HTTP 503 ``unavailable`` error);
    * ``latency_ms``: every answer takes this long (a slow tool).
    """

    results: list[InjectedResult] | None = Field(default=None, min_length=1)
    fail_first: int = Field(default=0, ge=0, le=1000)
    fail_on: list[Annotated[int, Field(ge=1)]] = Field(default_factory=list)
    failure: InjectedResult | None = None
    latency_ms: int = Field(default=0, ge=0, le=60_000)

    def _answer(self, n: int, base: InjectedResult | None) -> InjectedResult:
        if n <= self.fail_first or n in self.fail_on:
            return self.failure or DEFAULT_FAILURE
        if self.results:
            return self.results[min(n, len(self.results)) - 1]
        assert base is not None
        return base

    def _one_result(self, base: InjectedResult | None, key: str) -> None:
        if base is None and not self.results:
            raise ValueError(f"give {key} (every call's result) or results (a sequence of them)")
        if base is not None and self.results:
            raise ValueError(f"give {key} or results, not both")


class ToolIntercept(_Behaviour):
    """Every call to the named tool(s) returns the injected result."""

    type: Literal["tool_intercept"]
    intercept_tool: str | None = None
    intercept_tools: list[str] | None = None
    inject_tool_result: InjectedResult | None = None

    @model_validator(mode="after")
    def _one_of(self) -> "ToolIntercept":
        if not self.intercept_tool and not self.intercept_tools:
            raise ValueError("tool_intercept needs intercept_tool or intercept_tools")
        if self.intercept_tool and self.intercept_tools:
            raise ValueError("give intercept_tool or intercept_tools, not both")
        self._one_result(self.inject_tool_result, "inject_tool_result")
        return self

    @property
    def tools(self) -> list[str]:
        return [self.intercept_tool] if self.intercept_tool else list(self.intercept_tools or [])

    def answer(self, n: int) -> InjectedResult:
        return self._answer(n, self.inject_tool_result)


class MockedCall(_Behaviour):
    """One mocked call. Without ``params_match`` it answers every call to ``tool``.

    ``params_match`` maps argument names to expected values. A call matches when
    every listed argument is present and equal after normalization: Unicode NFKC,
    case folded, and all whitespace removed (so ``"羽毛球鞋 李宁"`` matches
    ``"羽毛球鞋李宁"`` but neither ``"李宁羽毛球鞋"`` nor ``"羽毛球鞋 李宁 男"``:
    equality, not containment). Non-string values compare as canonical JSON
    text, so ``3`` and ``"3"`` match. Arguments not listed are ignored. A value
    may instead be a mapping of operators (see :func:`match_value`):
    ``{contains: 李宁}``, ``{regex: '^\\d{4}-'}``, ``{any_of: [北京, 首都]}``,
    ``{min: 1, max: 5}``.
    """

    tool: str
    params_match: dict[str, Any] | None = None
    inject_result: InjectedResult | None = None

    @model_validator(mode="after")
    def _one(self) -> "MockedCall":
        self._one_result(self.inject_result, "inject_result")
        return self

    def answer(self, n: int) -> InjectedResult:
        return self._answer(n, self.inject_result)


class ToolMock(_Strict):
    """Mocked calls, tried in file order; the first match answers.

    A call to a mocked tool that no entry matches falls through to the
    scenario world (``unmatched: world``, the default), or gets an empty
    success (``unmatched: empty``) or a ``not_found`` error (``unmatched: error``).
    """

    type: Literal["tool_mock"]
    mocked_calls: list[MockedCall]
    unmatched: Literal["world", "empty", "error"] = "world"


ToolConfig = Annotated[Union[ToolIntercept, ToolMock], Field(discriminator="type")]




def normalize_match_value(value: Any) -> str:
    """What ``params_match`` compares: NFKC, case folded, whitespace removed.

    Strings only; other values compare as canonical JSON.
    """
    if not isinstance(value, str):
        return canonical_json(value)
    text = unicodedata.normalize("NFKC", value).casefold()
    return "".join(ch for ch in text if not ch.isspace())


OPERATORS = ("contains", "regex", "any_of", "min", "max")


def is_operator(want: Any) -> bool:
    """A ``params_match`` value that is a mapping of operators only (``{contains: 李宁}``)."""
    return isinstance(want, dict) and bool(want) and all(k in OPERATORS for k in want)


def operator_error(want: Any) -> str | None:
    """What is wrong with an operator mapping (None when it is fine or not an operator)."""
    if not is_operator(want):
        return None
    if "regex" in want:
        if not isinstance(want["regex"], str):
            return "regex: expected a regular expression as text"
        try:
            re.compile(want["regex"])
        except re.error as exc:
            return f"regex: not a regular expression ({exc})"
    if "any_of" in want and (not isinstance(want["any_of"], list) or not want["any_of"]):
        return "any_of: expected a non-empty list of values, like any_of: [北京, 首都]"
    if "contains" in want and not isinstance(want["contains"], (str, int, float)):
        return "contains: expected text"
    for bound in ("min", "max"):
        if bound in want and (isinstance(want[bound], bool) or not isinstance(want[bound], (int, float))):
            return f"{bound}: expected a number"
    if isinstance(want.get("min"), (int, float)) and isinstance(want.get("max"), (int, float)) \
            and want["min"] > want["max"]:
        return f"inverted range: min {want['min']} is above max {want['max']}, so no value matches"
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(unicodedata.normalize("NFKC", value).strip())
        except ValueError:
            return None
    return None


def match_value(want: Any, got: Any) -> bool:
    """One ``params_match`` entry against one argument: equality after
    :func:`normalize_match_value`, or every operator of an operator mapping:
    ``contains`` (normalized containment), ``regex`` (``re.search`` on the text),
    ``any_of`` (equal to one of the values), ``min`` / ``max`` (a number, or text
    that reads as one, within the inclusive bounds)."""
    if not is_operator(want):
        return normalize_match_value(got) == normalize_match_value(want)
    text = got if isinstance(got, str) else canonical_json(got)
    if "contains" in want and normalize_match_value(str(want["contains"])) not in normalize_match_value(text):
        return False
    if "regex" in want and re.search(str(want["regex"]), text) is None:
        return False
    if "any_of" in want and not any(normalize_match_value(got) == normalize_match_value(v)
                                    for v in want["any_of"] or []):
        return False
    if "min" in want or "max" in want:
        n = _number(got)
        if n is None or ("min" in want and n < want["min"]) or ("max" in want and n > want["max"]):
            return False
    return True


def params_match(expected: dict[str, Any] | None, arguments: dict[str, Any]) -> bool:
    if not expected:
        return True
    for key, want in expected.items():
        if key not in arguments:
            return False
        if not match_value(want, arguments[key]):
            return False
    return True


def injected_to_result(injected: InjectedResult, source: str) -> ToolResult:
    """Turn the seed's ``{is_error, content}`` into the envelope."""
    content = injected.content
    data: Any = content
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        pass
    if injected.is_error:
        return ToolResult.failure(content, injected.error_type or "tool_error", source=source)
    return ToolResult.success(data, source=source)


class CaseInjection:
    """A ToolLayer applying a case's intercepts and mocks, in file order. It counts
    the calls each entry answered, per tool (for ``results``, ``fail_first``,
    ``fail_on``): make one per trial."""

    def __init__(self, configs: Iterable[ToolConfig]):
        self.intercepts: dict[str, ToolIntercept] = {}
        self.mocks: dict[str, list[MockedCall]] = {}
        self.unmatched: dict[str, str] = {}
        self.counts: dict[tuple[int, str], int] = {}
        for cfg in configs:
            if isinstance(cfg, ToolIntercept):
                for name in cfg.tools:
                    self.intercepts.setdefault(name, cfg)
            elif isinstance(cfg, ToolMock):
                for call in cfg.mocked_calls:
                    self.mocks.setdefault(call.tool, []).append(call)
                    self.unmatched.setdefault(call.tool, cfg.unmatched)

    async def _answer(self, entry: ToolIntercept | MockedCall, name: str, source: str) -> ToolResult:
        key = (id(entry), name)
        self.counts[key] = n = self.counts.get(key, 0) + 1
        if entry.latency_ms:
            import asyncio

            await asyncio.sleep(entry.latency_ms / 1000)
        return injected_to_result(entry.answer(n), source)

    async def __call__(self, name: str, arguments: dict[str, Any], call_next: CallNext) -> ToolResult:
        if name in self.intercepts:
            return await self._answer(self.intercepts[name], name, "intercept")
        if name in self.mocks:
            for call in self.mocks[name]:
                if params_match(call.params_match, arguments):
                    return await self._answer(call, name, "mock")
            otherwise = self.unmatched[name]
            if otherwise == "empty":
                return ToolResult.success({}, source="mock")
            if otherwise == "error":
                return ToolResult.failure(f"no mocked result for {name} with these arguments", "not_found", source="mock")
        return await call_next(name, arguments)
