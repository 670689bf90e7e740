"""旅行/度假: ``travel_search_destinations`` -> ``travel_get_destination_detail``
-> ``travel_plan_itinerary``, over data/travel.yaml (海岛 destinations).

Budget for ``days`` = round-trip flight + days x daily cost (per person, CNY).
Derived tags: crowd ``low`` -> 人少, scenery >= 8.5 -> 景美, 7-day budget <=
10000 -> 平价. Filters:

* ``query``: lexicon terms (see ``_text``); only known terms (tags, names,
  countries, regions, synonyms such as 小众 -> 人少) must all match, unknown
  fragments are ignored; a query with no known term falls back to gram overlap.
  A known term right after a negation (不要/不去/除了/排除/非 ...), as in
  「不要东南亚」, is treated as an ``exclude_regions`` entry instead.
* ``exclude_regions``: drops a destination when an entry equals, contains or is
  contained in (>= 2 chars) its country, region list or English region.
* ``max_budget_cny``: per-person budget for ``days`` (default 7) must fit.
* ``crowd``: the most crowded level accepted (low < medium < high).
"""

from __future__ import annotations

from typing import Any

from ...tools._tool import Tool
from ._text import GramIndex, Lexicon, compact
from ._world import WorldState, fail, ok, schema, text

_NEGATIONS = ("不要", "不去", "不想去", "别去", "除了", "排除", "不含", "非")
_CROWD = {"low": 0, "medium": 1, "high": 2}
_CROWD_ZH = {"low": "人少", "medium": "适中", "high": "拥挤"}


def _tags(d: dict[str, Any]) -> list[str]:
    tags = list(d["tags"])
    if d["crowd_level"] == "low":
        tags.append("人少")
    if d["scenery_score"] >= 8.5:
        tags.append("景美")
    if d["flight_cost_cny"] + 7 * d["daily_cost_cny"] <= 10000:
        tags.append("平价")
    return list(dict.fromkeys(tags))


def _budget(d: dict[str, Any], days: int) -> int:
    return d["flight_cost_cny"] + days * d["daily_cost_cny"]


def build(world: WorldState) -> list[Tool]:
    data = world.data["travel"]
    dests: list[dict[str, Any]] = data["destinations"]
    by_id = {d["destination_id"]: d for d in dests}
    blobs = [compact(" ".join([d["name"], d["name_en"], d["country"], *d["regions"], d["region_en"], *_tags(d)])) for d in dests]
    words: set[str] = set()
    for d in dests:
        words.update([d["name"], d["country"], *d["regions"], *_tags(d)])
    lexicon = Lexicon(words, data["synonyms"])
    index = GramIndex([f"{d['name']} {d['country']} {' '.join(d['regions'])} {' '.join(_tags(d))} {d['description']}" for d in dests])

    def summary(d: dict[str, Any], days: int) -> dict[str, Any]:
        return {
            "destination_id": d["destination_id"],
            "name": d["name"],
            "country": d["country"],
            "region": d["region"],
            "crowd_level": d["crowd_level"],
            "crowd": _CROWD_ZH[d["crowd_level"]],
            "scenery_score": d["scenery_score"],
            "budget_per_7_days_cny": _budget(d, 7),
            "estimated_budget_cny": _budget(d, days),
            "best_season": d["best_season"],
            "tags": _tags(d),
            "highlights": list(d["highlights"]),
        }

    def excluded(d: dict[str, Any], regions: list[str]) -> bool:
        fields = [compact(x) for x in (d["country"], d["region_en"], *d["regions"])]
        for r in regions:
            key = compact(r)
            if len(key) < 2:
                continue
            if any(key == f or key in f or f in key for f in fields if len(f) >= 2):
                return True
        return False

    def travel_search_destinations(query: str | None = None, exclude_regions: list[str] | None = None,
                                   max_budget_cny: float | None = None, days: int | None = None,
                                   crowd: str | None = None) -> Any:
        n_days = days or 7
        pool = list(range(len(dests)))
        excludes = list(exclude_regions or [])
        if query:
            known = [t for t, k in lexicon.terms(query) if k]
            q = compact(query)
            negated = [t for t in known if any(f"{neg}{t}" in q for neg in _NEGATIONS)]
            excludes += negated
            known = [t for t in known if t not in negated]
            if known:
                pool = [i for i in pool if all(t in blobs[i] for t in known)]
            else:
                pool = [i for i, _ in index.rank(query, min_score=0.4)]
        if excludes:
            pool = [i for i in pool if not excluded(dests[i], excludes)]
        if crowd:
            pool = [i for i in pool if _CROWD[dests[i]["crowd_level"]] <= _CROWD[crowd]]
        if max_budget_cny is not None:
            pool = [i for i in pool if _budget(dests[i], n_days) <= max_budget_cny]
        pool.sort(key=lambda i: (-dests[i]["scenery_score"], _budget(dests[i], n_days), i))
        filters = {"query": query, "exclude_regions": exclude_regions, "max_budget_cny": max_budget_cny,
                   "days": n_days, "crowd": crowd}
        out: dict[str, Any] = {"filters": filters, "total": len(pool),
                               "destinations": [summary(dests[i], n_days) for i in pool[:10]],
                               "budget_note": f"预算为人均参考价（含国内往返机票和 {n_days} 天当地食宿交通），单位人民币"}
        if not pool:
            out["message"] = "没有符合条件的目的地，可以放宽预算、拥挤度或换个关键词再试"
        return ok(out)

    def lookup(destination_id: str) -> dict[str, Any] | None:
        return by_id.get(destination_id.strip())

    def missing(destination_id: str):
        return fail(f"未找到目的地 {destination_id!r}；destination_id 需来自 travel_search_destinations 的结果", "not_found")

    def travel_get_destination_detail(destination_id: str) -> Any:
        d = lookup(destination_id)
        if d is None:
            return missing(destination_id)
        out = summary(d, 7)
        out.update({k: d[k] for k in ("name_en", "description", "gateway", "visa", "min_days")})
        out["activities"] = list(d["activities"])
        out["cautions"] = list(d["cautions"])
        out["cost_breakdown_cny"] = {"round_trip_flight": d["flight_cost_cny"], "daily_local": d["daily_cost_cny"],
                                     "total_7_days": _budget(d, 7)}
        return ok(out)

    def travel_plan_itinerary(destination_id: str, days: int) -> Any:
        d = lookup(destination_id)
        if d is None:
            return missing(destination_id)
        acts = list(d["activities"])
        plan = []
        for day in range(1, days + 1):
            if day == 1:
                items = [f"抵达：{d['gateway']}", "入住、休整"]
            elif day == days:
                items = ["整理行李，返程"]
            else:
                k = day - 2
                items = [acts[k]] if k < len(acts) else ["自由活动：海边放空、补拍喜欢的地点"]
            plan.append({"day": day, "items": items})
        if days > 2 and days - 2 < len(acts):
            plan[-1]["items"].insert(0, f"上午：{acts[days - 2]}（时间允许）")
        out = {"destination_id": d["destination_id"], "name": d["name"], "days": days, "itinerary": plan,
               "estimated_budget_cny": _budget(d, days),
               "budget_note": f"人均：往返机票约 {d['flight_cost_cny']} 元 + 当地 {days} 天 × {d['daily_cost_cny']} 元",
               "best_season": d["best_season"], "visa": d["visa"], "tips": list(d["cautions"])}
        if days < d["min_days"]:
            out["warning"] = f"{d['name']}交通耗时较长，建议至少安排 {d['min_days']} 天"
        return ok(out)

    dest_id = text("目的地ID，需先调用 travel_search_destinations 获取（结果中的 destination_id）。"
                   "Destination id from travel_search_destinations.")
    return [
        Tool("travel_search_destinations",
             "旅行目的地搜索：按关键词（如「海岛」「人少 景美」「潜水」）、排除地区（如东南亚）、人均预算、天数和可接受的拥挤程度"
             "搜索度假目的地，返回目的地ID、国家/地区、拥挤度、景色评分和预算估算。Search holiday destinations (islands).",
             schema({
                 "query": text("关键词，如「海岛」「人少景美的海岛」，可选。Keywords, optional."),
                 "exclude_regions": {"type": "array", "items": {"type": "string", "minLength": 1},
                                     "description": "要排除的地区或国家，如 [\"东南亚\"]，可选。Regions/countries to exclude."},
                 "max_budget_cny": {"type": "number", "minimum": 0,
                                    "description": "人均总预算上限（人民币，含往返机票），可选。Max budget per person, CNY."},
                 "days": {"type": "integer", "minimum": 1, "maximum": 30,
                          "description": "出行天数，用于估算预算，默认 7。Trip length in days."},
                 "crowd": {"type": "string", "enum": ["low", "medium", "high"],
                           "description": "可接受的最高拥挤程度：low 只要人少的，medium 人少或适中，high 不限，可选。Max crowd level."},
             }, []),
             travel_search_destinations),
        Tool("travel_get_destination_detail",
             "目的地详情：根据目的地ID获取详细介绍、交通方式、签证、最佳季节、亮点、活动、注意事项和费用明细。Destination details.",
             schema({"destination_id": dest_id}),
             travel_get_destination_detail),
        Tool("travel_plan_itinerary",
             "行程规划：根据目的地ID和天数生成逐日行程安排和人均预算估算。Plan a day-by-day itinerary.",
             schema({"destination_id": dest_id,
                     "days": {"type": "integer", "minimum": 1, "maximum": 30, "description": "行程天数，1–30。Number of days."}}),
             travel_plan_itinerary),
    ]
