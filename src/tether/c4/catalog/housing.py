"""贝壳找房 (二手房): ``beike_lookup_city_id`` -> ``beike_search_resale_housing``
-> ``beike_get_community_detail``, over data/beike.yaml.

The chain is the point: the search needs the city_id that only the lookup
gives (6 digits; anything else is ``invalid_arguments``), and the detail needs
a community_id from the search. ``district`` accepts ``朝阳`` or ``朝阳区``, or
a 板块 name such as ``望京``.
"""

from __future__ import annotations

import re
from typing import Any

from ...tools._tool import Tool
from ._text import compact
from ._world import WorldState, fail, find_named, ok, schema, text

_CITY_ID = re.compile(r"^\d{6}$")


def _district_key(name: str) -> str:
    key = compact(name)
    for suffix in ("新区", "区"):
        if key.endswith(suffix) and len(key) > len(suffix) + 1:
            return key[: -len(suffix)]
    return key


def build(world: WorldState) -> list[Tool]:
    data = world.data["beike"]
    cities = {c["city_id"]: c for c in data["cities"]}
    communities = {c["community_id"]: c for c in data["communities"]}

    def unit_price(listing: dict[str, Any]) -> int:
        return int(round(listing["total_price_wan"] * 10000 / listing["area_sqm"]))

    def listing_view(listing: dict[str, Any]) -> dict[str, Any]:
        c = communities[listing["community_id"]]
        return {
            "listing_id": listing["listing_id"],
            "title": listing["title"],
            "community_id": c["community_id"],
            "community_name": c["name"],
            "district": c["district"],
            "area": c["area"],
            "layout": listing["layout"],
            "area_sqm": listing["area_sqm"],
            "total_price_wan": listing["total_price_wan"],
            "unit_price_yuan": unit_price(listing),
            "floor": listing["floor"],
            "orientation": listing["orientation"],
            "decoration": listing["decoration"],
            "listed_date": listing["listed_date"],
        }

    def beike_lookup_city_id(city_name: str) -> Any:
        c = find_named(data["cities"], city_name)
        if c is None:
            known = "、".join(x["name"] for x in data["cities"])
            return fail(f"未找到城市「{city_name}」。当前支持：{known}", "not_found")
        return ok({"city_id": c["city_id"], "city_name": c["name"], "districts": list(c["districts"])})

    def beike_search_resale_housing(city_id: str, district: str | None = None, max_price_wan: float | None = None) -> Any:
        cid = city_id.strip()
        if not _CITY_ID.match(cid):
            return fail(f"city_id 格式错误：{city_id!r} 不是城市ID。city_id 为 6 位数字，需先调用 beike_lookup_city_id 获取。",
                        "invalid_arguments")
        city = cities.get(cid)
        if city is None:
            return fail(f"未知的 city_id {cid}，请先调用 beike_lookup_city_id 获取有效的城市ID。", "not_found")
        pool = [c for c in communities.values() if c["city_id"] == cid]
        label = None
        if district:
            key = _district_key(district)
            named = [d for d in city["districts"] if _district_key(d) == key or (len(key) >= 2 and key in compact(d))]
            if named:
                label = named[0]
                pool = [c for c in pool if c["district"] == label]
            else:
                by_area = [c for c in pool if compact(c["area"]) == compact(district)]
                if not by_area:
                    return ok({"city_id": cid, "city_name": city["name"], "district": district, "total": 0, "listings": [],
                               "message": f"未找到区域「{district}」，可选区域：{'、'.join(city['districts'])}"})
                label = by_area[0]["area"]
                pool = by_area
        ids = {c["community_id"] for c in pool}
        hits = [x for x in data["listings"] if x["community_id"] in ids]
        if max_price_wan is not None:
            hits = [x for x in hits if x["total_price_wan"] <= max_price_wan]
        hits.sort(key=lambda x: (x["listed_date"], x["listing_id"]), reverse=True)
        out: dict[str, Any] = {"city_id": cid, "city_name": city["name"], "district": label, "total": len(hits),
                               "listings": [listing_view(x) for x in hits]}
        if hits:
            out["avg_unit_price_yuan"] = int(round(sum(unit_price(x) for x in hits) / len(hits)))
        else:
            out["message"] = "暂无符合条件的在售二手房源"
        return ok(out)

    def beike_get_community_detail(community_id: str) -> Any:
        c = communities.get(community_id.strip())
        if c is None:
            return fail(f"未找到小区 {community_id!r}；community_id 需来自 beike_search_resale_housing 的结果", "not_found")
        on_sale = [x for x in data["listings"] if x["community_id"] == c["community_id"]]
        detail = {k: v for k, v in c.items() if k not in ("property_fee",)}
        detail.update(
            city_name=cities[c["city_id"]]["name"],
            property_fee=f"{c['property_fee']} 元/㎡/月",
            on_sale_count=len(on_sale),
            avg_listing_unit_price_yuan=int(round(sum(unit_price(x) for x in on_sale) / len(on_sale))) if on_sale else None,
            listings=[{"listing_id": x["listing_id"], "title": x["title"], "layout": x["layout"],
                       "area_sqm": x["area_sqm"], "total_price_wan": x["total_price_wan"]} for x in on_sale],
        )
        return ok(detail)

    return [
        Tool("beike_lookup_city_id",
             "贝壳找房·城市ID查询：根据城市名称（如「北京」）获取贝壳的城市ID（city_id）及该城市的区域列表，查二手房前需先调用。"
             "Look up Beike's city id by city name.",
             schema({"city_name": text("城市名称，如「北京」「上海」。City name.")}),
             beike_lookup_city_id),
        Tool("beike_search_resale_housing",
             "贝壳找房·二手房搜索：按城市ID、区域（如朝阳区）和最高总价搜索在售二手房源，返回房源、所在小区（community_id）、户型、面积、总价和单价。"
             "Search resale (second-hand) housing listings on Beike.",
             schema({
                 "city_id": text("城市ID，需先调用 beike_lookup_city_id 获取。City id from beike_lookup_city_id."),
                 "district": text("区域或板块，如「朝阳区」「望京」，可选。District, optional."),
                 "max_price_wan": {"type": "number", "minimum": 0,
                                   "description": "最高总价（万元，含），可选。Max total price in 10k CNY."},
             }, ["city_id"]),
             beike_search_resale_housing),
        Tool("beike_get_community_detail",
             "贝壳找房·小区详情：根据小区ID获取小区的建成年代、物业费、户数、周边地铁与学校、在售房源和挂牌均价。"
             "Get a residential community's details on Beike.",
             schema({"community_id": text("小区ID，需先调用 beike_search_resale_housing 获取（结果中的 community_id）。"
                                          "Community id from beike_search_resale_housing.")}),
             beike_get_community_detail),
    ]
