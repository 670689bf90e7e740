"""Case-driven tool injection: the seed's ``tool_intercept`` and ``tool_mock``.

The harness owns the tools an agent sees, so a case can inject faults into any
agent: the layer below sits between the agent and the real (or world) tools.
"""

from __future__ import annotations

import json
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


class ToolIntercept(_Strict):
    """Every call to the named tool(s) returns the injected result."""

    type: Literal["tool_intercept"]
    intercept_tool: str | None = None
    intercept_tools: list[str] | None = None
    inject_tool_result: InjectedResult

    @model_validator(mode="after")
    def _one_of(self) -> "ToolIntercept":
        if not self.intercept_tool and not self.intercept_tools:
            raise ValueError("tool_intercept needs intercept_tool or intercept_tools")
        if self.intercept_tool and self.intercept_tools:
            raise ValueError("give intercept_tool or intercept_tools, not both")
        return self

    @property
    def tools(self) -> list[str]:
        return [self.intercept_tool] if self.intercept_tool else list(self.intercept_tools or [])


class MockedCall(_Strict):
    """One mocked call. Without ``params_match`` it answers every call to ``tool``.

    ``params_match`` maps argument names to expected values. A call matches when
    every listed argument is present and equal after normalization: Unicode NFKC,
    case folded, and all whitespace removed (so ``"羽毛球鞋 李宁"`` matches
    ``"羽毛球鞋李宁"`` but neither ``"李宁羽毛球鞋"`` nor ``"羽毛球鞋 李宁 男"``:
    equality, not containment). Non-string values compare as canonical JSON
    text, so ``3`` and ``"3"`` match. Arguments not listed are ignored.
    """

    tool: str
    params_match: dict[str, Any] | None = None
    inject_result: InjectedResult


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


def params_match(expected: dict[str, Any] | None, arguments: dict[str, Any]) -> bool:
    if not expected:
        return True
    for key, want in expected.items():
        if key not in arguments:
            return False
        if normalize_match_value(arguments[key]) != normalize_match_value(want):
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
    """A ToolLayer applying a case's intercepts and mocks, in file order."""

    def __init__(self, configs: Iterable[ToolConfig]):
        self.intercepts: dict[str, InjectedResult] = {}
        self.mocks: dict[str, list[MockedCall]] = {}
        self.unmatched: dict[str, str] = {}
        for cfg in configs:
            if isinstance(cfg, ToolIntercept):
                for name in cfg.tools:
                    self.intercepts.setdefault(name, cfg.inject_tool_result)
            elif isinstance(cfg, ToolMock):
                for call in cfg.mocked_calls:
                    self.mocks.setdefault(call.tool, []).append(call)
                    self.unmatched.setdefault(call.tool, cfg.unmatched)

    async def __call__(self, name: str, arguments: dict[str, Any], call_next: CallNext) -> ToolResult:
        if name in self.intercepts:
            return injected_to_result(self.intercepts[name], "intercept")
        if name in self.mocks:
            for call in self.mocks[name]:
                if params_match(call.params_match, arguments):
                    return injected_to_result(call.inject_result, "mock")
            policy = self.unmatched[name]
            if policy == "empty":
                return ToolResult.success({}, source="mock")
            if policy == "error":
                return ToolResult.failure(f"no mocked result for {name} with these arguments", "not_found", source="mock")
        return await call_next(name, arguments)
