"""Case validation errors in the words of the case format, not of pydantic.

A pydantic error (``model_type`` at ``criteria.0.call_count.pass``) becomes
``expected a range like {min: 1, max: 4} ...``: key names and an example of
the right form, never an internal class name.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import Any

from pydantic import BaseModel

from ..tools.injection import ToolIntercept, ToolMock
from .case import (
    CallCount,
    Case,
    IdenticalCalls,
    Mentions,
    NoInvented,
    QuestionsAsked,
    Range,
    Rubric,
    StatusIn,
    Strategies,
    ToolCalled,
)

CHECKS: dict[str, type[BaseModel]] = {
    "call_count": CallCount, "identical_calls": IdenticalCalls, "strategies": Strategies,
    "questions_asked": QuestionsAsked, "mentions": Mentions, "no_invented": NoInvented, "status_in": StatusIn,
    "tool_called": ToolCalled,
}
# Union tags pydantic puts in an error's path: they pick a model, they are not keys.
TAGS: dict[str, type[BaseModel] | None] = {
    **CHECKS, "judge": Rubric, "auto": None, "tool_intercept": ToolIntercept, "tool_mock": ToolMock,
}


def is_tag(part: Any) -> bool:
    return isinstance(part, str) and (part in TAGS or part.startswith("function-") or "[" in part)


def data_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The error path as keys and indexes of the file (union tags dropped)."""
    return tuple(p for p in loc if not is_tag(p))


def shown(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in data_loc(loc))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """Pydantic models an annotation can hold (through Optional, list, dict values, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _models_in(args[0])
    if origin in (list, tuple, set, typing.Union, types.UnionType):
        return [m for a in args for m in _models_in(a)]
    if origin is dict and len(args) == 2:
        return _models_in(args[1])
    return []


def _field(model: type[BaseModel], key: str):
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info
    return None


def model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model whose keys are valid at ``loc`` (the error path, tags included)."""
    model: type[BaseModel] | None = Case
    candidates: list[type[BaseModel]] = [Case]
    for part in loc:
        if is_tag(part):
            if TAGS.get(part) is not None:
                model, candidates = TAGS[part], [TAGS[part]]
            continue
        if isinstance(part, int):
            continue
        if model is None:
            return None
        info = _field(model, str(part))
        if info is None:
            return None
        candidates = _models_in(info.annotation)
        model = candidates[0] if len(candidates) == 1 else None
    return model


def keys_of(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _got(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _choices(expected: str) -> str:
    return ", ".join(re.findall(r"'([^']*)'", expected)) or expected


RANGE_HINT = ("expected a range like {min: 1, max: 4} (keys min and max, whole numbers, inclusive; leave one "
              "out for an open end: {min: 7} is 7 or more, {max: 0} is none)")


def friendly(err: dict[str, Any]) -> str:
    """One pydantic error as a sentence about the case file."""
    kind, loc, ctx = err["type"], tuple(err["loc"]), err.get("ctx") or {}
    has_input = "input" in err and kind != "missing"
    got = f" (got {_got(err['input'])})" if has_input else ""
    keys = data_loc(loc)
    last = keys[-1] if keys else None
    if kind == "missing":
        model = model_at(loc[:-1])
        hint = f"; a {model_label(model)} needs it" if model is not None else ""
        return f"missing required key {last!r}{hint}"
    if kind == "extra_forbidden":
        model = model_at(loc[:-1])
        allowed = keys_of(model) if model is not None else []
        close = difflib.get_close_matches(str(last), allowed, n=1)
        msg = f"unknown key {last!r}"
        if close:
            msg += f" (did you mean {close[0]!r}?)"
        if allowed:
            msg += f"; keys here: {', '.join(allowed)}"
        return msg
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        if ctx.get("class_name") == Range.__name__ or last in ("pass", "fail"):
            return f"{RANGE_HINT}{got}"
        model = model_at(loc)
        if model is not None:
            return f"expected a mapping (key: value) with keys {', '.join(keys_of(model))}{got}"
        return f"expected a mapping (key: value){got}"
    if kind == "list_type":
        if len(keys) >= 2 and keys[-2] == "groups":
            return ("each group is a list of terms; write groups: [[机票, 航班], [日期, 哪天]] "
                    f"(a group is hit when the reply contains one of its terms){got}")
        if last == "groups":
            return f"expected a list of term lists, like groups: [[机票, 航班], [日期]]{got}"
        return f"expected a list, like [a, b] or one '- item' per line{got}"
    if kind == "union_tag_invalid":
        tag = ctx.get("tag")
        if ctx.get("discriminator") == "'check'":
            return (f"unknown check {tag!r}; checks: {', '.join(CHECKS)}; or kind: judge with a rubric "
                    "for a criterion a judge decides")
        return f"unknown {ctx.get('discriminator', 'type').strip(chr(39))} {tag!r}; use one of {_choices(ctx.get('expected_tags', ''))}"
    if kind == "union_tag_not_found":
        if ctx.get("discriminator") == "'check'":
            return (f"a criterion needs check: (one of {', '.join(CHECKS)}), or kind: judge with a rubric")
        return f"missing key {ctx.get('discriminator', '').strip(chr(39))}"
    if kind == "literal_error":
        if last == "check" and len(loc) > 1 and "judge" in loc:
            return ("a kind: judge criterion takes check: rubric (or no check); automatic checks "
                    f"({', '.join(CHECKS)}) are kind: auto, the default{got}")
        return f"expected one of {_choices(ctx.get('expected', ''))}{got}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"expected a whole number{got}"
    if kind in ("float_parsing", "float_type"):
        return f"expected a number{got}"
    if kind in ("bool_parsing", "bool_type"):
        return f"expected true or false{got}"
    if kind in ("string_type",):
        return f"expected text (quote it if YAML reads it as something else){got}"
    if kind == "string_pattern_mismatch":
        if last == "dimension":
            return f"a dimension is a short label: a letter, then letters, digits, _ or - (e.g. LD, SEARCH){got}"
        if last == "name":
            return f"a tool name is a letter or _, then letters, digits, _, . or - (at most 64){got}"
        return f"does not match the pattern {ctx.get('pattern')}{got}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        bound = next(iter(ctx.values()), "")
        return f"expected a number {op} {bound}{got}"
    if kind == "too_short" and last == "criteria":
        return "a case needs at least one criterion (see docs/cases.md, or tether case new)"
    if kind == "too_short":
        return f"expected at least {ctx.get('min_length')} item(s){got}"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"])).removeprefix("Value error, ")
    msg = err["msg"].replace("Input should be", "expected")
    msg = re.sub(r" or instance of \w+", "", msg)
    return f"{msg}{got}"


def model_label(model: type[BaseModel]) -> str:
    if model is Case:
        return "case"
    for tag, cls in TAGS.items():
        if cls is model:
            return "judge criterion" if tag == "judge" else f"{tag} " + ("criterion" if tag in CHECKS else "config")
    return {"HistoryTurn": "history turn", "MockToolSpec": "mock tool", "MockedCall": "mocked call",
            "InjectedResult": "injected result", "CaseInput": "input", "Persona": "persona"}.get(
        model.__name__, model.__name__.lower())
