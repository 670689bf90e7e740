"""The world object every scenario tool is bound to, plus small helpers.

Seeded data lives in ``data/*.yaml`` next to this module (UTF-8, read with
:mod:`importlib.resources`). Each :class:`WorldState` gets its own deep copy, so
state never leaks between worlds. Randomness only ever comes from
:meth:`WorldState.rng`, a :class:`random.Random` seeded with the world seed and
the call's own key, so the same seed and arguments give the same answer.
"""

from __future__ import annotations

import functools
import math
import random
from datetime import datetime, timedelta, timezone
from importlib import resources
from typing import Any

import orjson
import yaml

from ...tools._tool import ToolResult
from ._text import compact

DEFAULT_NOW = datetime(2026, 4, 7, 10, 0, tzinfo=timezone(timedelta(hours=8)))

DATA_FILES = ("flights", "weibo", "zhihu", "taobao", "beike", "maps", "travel", "web")


@functools.lru_cache(maxsize=None)
def _frozen(name: str) -> bytes:
    return orjson.dumps(_load(name))


@functools.lru_cache(maxsize=None)
def _load(name: str) -> Any:
    text = resources.files(__package__).joinpath("data", f"{name}.yaml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))   # libyaml when built in


class _LazyData(dict):
    """This world's own copy of each data file, made when a tool first reads it."""

    def __missing__(self, name: str) -> Any:
        if name not in DATA_FILES:
            raise KeyError(name)
        value = self[name] = orjson.loads(_frozen(name))    # a JSON round trip: a deep copy, 10x faster
        return value


class WorldState:
    """Seeded data, the clock and a seeded random source."""

    def __init__(self, now: datetime | None = None, seed: int = 0):
        now = now or DEFAULT_NOW
        if now.tzinfo is None:
            now = now.replace(tzinfo=DEFAULT_NOW.tzinfo)
        self.now = now
        self.seed = seed
        self.data: dict[str, Any] = _LazyData()

    @property
    def today(self):
        return self.now.date()

    def rng(self, *key: Any) -> random.Random:
        return random.Random("|".join([str(self.seed), *map(str, key)]))


# -- results ------------------------------------------------------------------
def ok(data: Any) -> ToolResult:
    return ToolResult.success(data, source="world")


def fail(message: str, error_type: str = "tool_error") -> ToolResult:
    return ToolResult.failure(message, error_type, source="world")


# -- schemas ------------------------------------------------------------------
def schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    out["required"] = list(required if required is not None else properties)
    return out


def text(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "pattern": r"\S", "description": description, **extra}


def enum(description: str, values: list[str], default: str) -> dict[str, Any]:
    return {"type": "string", "enum": values, "default": default, "description": description}


# -- places -------------------------------------------------------------------
def find_named(items: list[dict[str, Any]], query: str, *, keys: tuple[str, ...] = ("name", "aliases")) -> dict[str, Any] | None:
    """Exact match on name or alias (compacted), else the longest name the
    query contains, else the shortest name containing the query."""
    q = compact(query)
    if not q:
        return None
    names: list[tuple[str, dict[str, Any]]] = []
    for item in items:
        for key in keys:
            val = item.get(key)
            for v in (val if isinstance(val, list) else [val]):
                if v:
                    names.append((compact(str(v)), item))
    for n, item in names:
        if n == q:
            return item
    inside = [(n, it) for n, it in names if len(n) >= 2 and n in q]
    if inside:
        return max(inside, key=lambda p: len(p[0]))[1]
    around = [(n, it) for n, it in names if len(q) >= 2 and q in n]
    if around:
        return min(around, key=lambda p: len(p[0]))[1]
    return None


def haversine_km(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    r = 6371.0
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lng2 - lng1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(math.sqrt(a))
