"""The scenario world: realistic tools for every tool the C4 cases name.

Case mocks and intercepts (:mod:`tether.tools.injection`) sit in front of
these tools; any call no mock covers falls through to this deterministic fake
world. Each call of :func:`scenario_tools` builds a fresh world (its own data
copy and caches) from seeded YAML data, a clock ``now`` (default
2026-04-07T10:00:00+08:00, used for dates) and a ``seed`` (used only where the
world draws numbers: flight schedules and fares, weather, generated comments).
No network, no wall clock.

Every tool answers ``ToolResult(source="world")``. Errors a real API would
give are errors here too: ``invalid_arguments`` (e.g. a non-ISO date for
``search_flights``, a malformed ``city_id``), ``not_found`` (unknown ids),
``no_route``. Parameters that are ids produced by another tool name that tool
in their description ("需先调用 beike_lookup_city_id 获取").
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterable

from ...errors import UsageError
from ...tools._tool import Tool, ToolSet
from . import flights, housing, maps, shopping, social, travel, websearch
from ._world import DEFAULT_NOW, WorldState

__all__ = ["catalog_names", "scenario_tools", "scenario_toolset"]

_MODULES = (flights, social, shopping, housing, maps, websearch, travel)

_NAMES = (
    "search_flights",
    "weibo_search_posts",
    "weibo_get_post_detail",
    "weibo_get_post_comments",
    "taobao_search_products",
    "beike_lookup_city_id",
    "beike_search_resale_housing",
    "beike_get_community_detail",
    "maps_text_search",
    "maps_weather",
    "compute_google_maps_routes",
    "compute_google_maps_route_matrix",
    "web_search",
    "zhihu_search_questions",
    "zhihu_get_answers",
    "travel_search_destinations",
    "travel_get_destination_detail",
    "travel_plan_itinerary",
)


def catalog_names() -> list[str]:
    """Every tool the scenario world provides."""
    return list(_NAMES)


# Which module builds each tool (a world builds only the modules a case needs).
_MODULE_OF = {
    "search_flights": flights, "weibo_search_posts": social, "weibo_get_post_detail": social,
    "weibo_get_post_comments": social, "zhihu_search_questions": social, "zhihu_get_answers": social,
    "taobao_search_products": shopping, "beike_lookup_city_id": housing, "beike_search_resale_housing": housing,
    "beike_get_community_detail": housing, "maps_text_search": maps, "maps_weather": maps,
    "compute_google_maps_routes": maps, "compute_google_maps_route_matrix": maps, "web_search": websearch,
    "travel_search_destinations": travel, "travel_get_destination_detail": travel, "travel_plan_itinerary": travel,
}


def scenario_tools(now: datetime | None = None, seed: int = 0, names: Iterable[str] | None = None) -> dict[str, Tool]:
    """A fresh world and its tools, by name (in :func:`catalog_names` order);
    with ``names``, only the modules that provide them are built."""
    world = WorldState(now or DEFAULT_NOW, seed)
    wanted = list(_NAMES) if names is None else [n for n in _NAMES if n in set(names)]
    built: dict[str, Tool] = {}
    for module in dict.fromkeys(_MODULE_OF[n] for n in wanted):
        for t in module.build(world):
            built[t.name] = t
    return {name: built[name] for name in wanted}


def scenario_toolset(names: Iterable[str] | None = None, *, now: datetime | None = None, seed: int = 0) -> ToolSet:
    """A ToolSet with the named world tools (all when ``names`` is None)."""
    if isinstance(names, str):
        names = [names]
    wanted = list(dict.fromkeys(names)) if names is not None else list(_NAMES)
    unknown = [n for n in wanted if n not in _NAMES]
    if unknown:
        raise UsageError(
            f"unknown scenario tool(s) {', '.join(map(repr, unknown))}; known tools: {', '.join(_NAMES)}")
    tools = scenario_tools(now, seed, wanted)
    return ToolSet(tools[n] for n in wanted)
