"""Canonicalization: what two requests, argument sets or results have in common.

Seed 004 section 6: comparing raw requests as strings is unreliable, but
dropping a field must have a reason (a ``timestamp`` the agent uses to decide
"is the refund window over?" must never be dropped). A :class:`Canon` is an
explicit, serializable equivalence: the cassette stores it, and every mismatch
says which canon it was compared under.

The default canon drops nothing: it sorts keys and normalizes whitespace
(line endings, trailing spaces, leading and trailing blank space). Dropping a
field is opt-in, per scope, with a JSON path and a reason::

    Canon(drop=[DropRule(path="$.messages[*].content.data.fetched_at",
                         reason="fetch time; the agent never reads it")])

Paths: ``$`` the document, ``.key`` or ``["key"]``, ``[*]`` every list item,
``.*`` every value of an object, ``[2]`` one item, ``..key`` the key at any depth.
In a canonical model request, a tool message's ``content`` is the parsed result
envelope ``{ok, data, error, error_type}``, so paths can reach into it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field

from ..messages import ToolSpec, canonical_json
from ..models import ModelRequest

Scope = Literal["model_request", "tool_arguments", "tool_result"]
Whitespace = Literal["exact", "trim", "collapse"]


class DropRule(BaseModel):
    """Leave a field out of the comparison, and say why it is safe to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    scope: Scope = "model_request"
    tool: str | None = None        # tool scopes: only this tool's arguments / results
    reason: str = ""

    def applies(self, scope: Scope, tool: str | None) -> bool:
        return self.scope == scope and (self.tool is None or self.tool == tool)

    def describe(self) -> str:
        where = f"{self.scope}" + (f" of {self.tool}" if self.tool else "")
        why = f" ({self.reason})" if self.reason else ""
        return f"{self.path} in {where}{why}"


class Canon(BaseModel):
    """The equivalence used to match recorded and live interactions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "default"
    whitespace: Whitespace = "trim"
    drop: tuple[DropRule, ...] = Field(default_factory=tuple)

    def apply(self, value: Any, scope: Scope, tool: str | None = None) -> Any:
        """A normalized copy of ``value`` (keys are sorted when serialized); with
        ``whitespace="exact"`` and nothing dropped, ``value`` itself: do not mutate it."""
        rules = [rule for rule in self.drop if rule.applies(scope, tool)]
        out = copy.deepcopy(value) if rules else value
        for rule in rules:
            _drop(out, _parse_path(rule.path))
        return _normalize_strings(out, self.whitespace)

    def key(self, value: Any, scope: Scope, tool: str | None = None) -> str:
        """Canonical JSON text: two values are equivalent when their keys are equal."""
        return canonical_json(self.apply(value, scope, tool))

    def hash(self, value: Any, scope: Scope, tool: str | None = None) -> str:
        return hashlib.sha256(self.key(value, scope, tool).encode("utf-8")).hexdigest()[:16]

    def describe(self, scope: Scope | None = None, tool: str | None = None) -> str:
        """One line for a mismatch's ``rule``: what this canon ignores here."""
        ws = {"exact": "whitespace kept as is", "trim": "whitespace trimmed (line endings, trailing spaces)",
              "collapse": "whitespace runs collapsed to one space"}[self.whitespace]
        rules = [r for r in self.drop if scope is None or r.applies(scope, tool)]
        dropped = "dropped: " + "; ".join(r.describe() for r in rules) if rules else "no fields dropped"
        return f"canon {self.name!r}: keys sorted, {ws}, {dropped}"


DEFAULT_CANON = Canon()


# -- canonical forms -----------------------------------------------------------
def tool_schema_hash(specs: Sequence[ToolSpec]) -> str:
    """sha256 of the canonical tool specs (name order does not matter)."""
    dumped = sorted((s.model_dump(mode="json") for s in specs), key=lambda d: d["name"])
    return hashlib.sha256(canonical_json(dumped).encode("utf-8")).hexdigest()[:16]


def canonical_request(request: ModelRequest) -> dict[str, Any]:
    """What a model request is, for matching: the messages (tool results parsed
    back into their envelopes), the tool names, and the tool-schema hash."""
    messages = []
    for m in request.messages:
        d = m.model_dump(mode="json", exclude_defaults=True)
        d["role"] = m.role
        if m.role == "tool" and isinstance(d.get("content"), str):
            try:
                d["content"] = json.loads(d["content"])
            except json.JSONDecodeError:
                pass
        messages.append(d)
    return {"messages": messages, "tools": [t.name for t in request.tools], "tools_hash": tool_schema_hash(request.tools)}


# -- differences -------------------------------------------------------------
def first_difference(expected: Any, actual: Any, path: str = "$") -> tuple[str, Any, Any] | None:
    """The first leaf where two JSON values differ: ``(path, expected, actual)``."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for k in sorted(set(expected) | set(actual), key=str):
            sub = f"{path}.{k}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k)) else f"{path}[{json.dumps(k)}]"
            if k not in expected:
                return sub, "(missing)", actual[k]
            if k not in actual:
                return sub, expected[k], "(missing)"
            found = first_difference(expected[k], actual[k], sub)
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for i, (a, b) in enumerate(zip(expected, actual)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(expected) != len(actual):
            return f"{path}.length", len(expected), len(actual)
        return None
    if canonical_json(expected) != canonical_json(actual):
        return path, expected, actual
    return None


def text_hint(expected: str, actual: str, width: int = 24) -> str:
    """Where two texts part: ``at char 12: expected "…退款 19900…", actual "…退款 199 元…"``."""
    i = next((k for k, (a, b) in enumerate(zip(expected, actual)) if a != b), min(len(expected), len(actual)))
    lo = max(0, i - width)

    def cut(s: str) -> str:
        return ("…" if lo else "") + s[lo:i + width] + ("…" if len(s) > i + width else "")

    return f"at char {i}: expected {json.dumps(cut(expected), ensure_ascii=False)}, actual {json.dumps(cut(actual), ensure_ascii=False)}"


def describe_difference(expected: Any, actual: Any, path: str = "$") -> str:
    found = first_difference(expected, actual, path)
    if found is None:
        return ""
    path, a, b = found
    if isinstance(a, str) and isinstance(b, str):
        return f"first difference at {path} {text_hint(a, b)}"
    return (f"first difference at {path}: expected {json.dumps(a, ensure_ascii=False, default=str)[:120]}, "
            f"actual {json.dumps(b, ensure_ascii=False, default=str)[:120]}")


# -- JSON paths ----------------------------------------------------------------
_TOKEN = re.compile(r"""\.\.(?P<deep>[^.\[\]]+)|\.(?P<key>[^.\[\]]+)|\[(?P<index>\*|-?\d+|"(?:[^"\\]|\\.)*")\]""")

Token = tuple[str, Any]   # ("key", name) | ("any", None) | ("index", n) | ("deep", name)


def _parse_path(path: str) -> list[Token]:
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    if text and text[0] not in ".[":
        text = "." + text
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"bad JSON path {path!r} near {text[pos:]!r}")
        if m["deep"] is not None:
            tokens.append(("deep", m["deep"]))
        elif m["key"] is not None:
            tokens.append(("any", None) if m["key"] == "*" else ("key", m["key"]))
        else:
            idx = m["index"]
            tokens.append(("any", None) if idx == "*" else ("key", json.loads(idx)) if idx.startswith('"')
                          else ("index", int(idx)))
        pos = m.end()
    if not tokens:
        raise ValueError(f"JSON path {path!r} selects the whole document; nothing to drop")
    return tokens


def _children(node: Any, token: Token) -> list[tuple[Any, Any]]:
    """(container key, child) pairs the token selects in ``node``."""
    kind, arg = token
    if kind == "any":
        if isinstance(node, dict):
            return list(node.items())
        if isinstance(node, list):
            return list(enumerate(node))
    elif kind == "key" and isinstance(node, dict) and arg in node:
        return [(arg, node[arg])]
    elif kind == "index" and isinstance(node, list) and -len(node) <= arg < len(node):
        return [(arg % len(node), node[arg])]
    return []


def _drop(node: Any, tokens: list[Token]) -> None:
    head, rest = tokens[0], tokens[1:]
    if head[0] == "deep":
        if isinstance(node, dict) or isinstance(node, list):
            for _, child in list(_children(node, ("any", None))):
                _drop(child, tokens)
        head = ("key", head[1])
    selected = _children(node, head)
    if not rest:
        for k, _ in sorted(selected, key=lambda kv: kv[0] if isinstance(kv[0], int) else 0, reverse=True):
            del node[k]
        return
    for _, child in selected:
        _drop(child, rest)


_TRAILING = re.compile(r"[ \t]+(?=\n)|[ \t]+$")
_RUNS = re.compile(r"\s+")


def normalize_text(text: str, mode: Whitespace) -> str:
    if mode == "exact":
        return text
    if mode == "collapse":
        return _RUNS.sub(" ", text).strip()
    return _TRAILING.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).strip()


def _normalize_strings(value: Any, mode: Whitespace) -> Any:
    if mode == "exact":
        return value
    if isinstance(value, str):
        return normalize_text(value, mode)
    if isinstance(value, dict):
        return {k: _normalize_strings(v, mode) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize_strings(v, mode) for v in value]
    return value


__all__ = [
    "DEFAULT_CANON",
    "Canon",
    "DropRule",
    "canonical_request",
    "describe_difference",
    "first_difference",
    "normalize_text",
    "text_hint",
    "tool_schema_hash",
]
