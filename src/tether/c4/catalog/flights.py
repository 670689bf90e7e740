"""``search_flights``: 机票/航班 over a seeded route network (data/flights.yaml).

Domestic cities are fully meshed; other cities fly only to their
``served_from`` list. Without a direct route the world offers connections with
at most two stops. Antarctica has no commercial route at all. The date must be
ISO ``YYYY-MM-DD`` (else ``invalid_arguments``, like a real API) and not in the
past relative to the world's ``now``. Schedules and fares are drawn from
``WorldState.rng`` keyed by route and date, so they are stable per seed.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Any

from ...tools._tool import Tool
from ._text import compact
from ._world import WorldState, fail, find_named, haversine_km, ok, schema, text

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MAX_STOPS = 2


class _Network:
    def __init__(self, data: dict[str, Any]):
        self.cities: list[dict[str, Any]] = data["cities"]
        self.by_name = {c["name"]: c for c in self.cities}
        self.antarctica = [compact(a) for a in data["antarctica_aliases"]]
        self.domestic_airlines = [tuple(a) for a in data["domestic_airlines"]]
        self.long_haul = [tuple(a) for a in data["chinese_long_haul"]]
        self.adj: dict[str, set[str]] = {c["name"]: set() for c in self.cities}
        domestic = [c["name"] for c in self.cities if c.get("domestic")]
        for a in domestic:
            self.adj[a].update(b for b in domestic if b != a)
        for c in self.cities:
            for other in c.get("served_from", []):
                self.adj[c["name"]].add(other)
                self.adj[other].add(c["name"])

    def is_antarctica(self, query: str) -> bool:
        q = compact(query)
        return any(a in q for a in self.antarctica)

    def resolve(self, query: str) -> dict[str, Any] | None:
        return find_named(self.cities, query)

    def distance(self, a: str, b: str) -> float:
        ca, cb = self.by_name[a], self.by_name[b]
        return haversine_km(ca["lat"], ca["lng"], cb["lat"], cb["lng"])

    def paths(self, dep: str, arr: str) -> list[list[str]]:
        """The fewest-stop paths (up to 3, shortest first)."""
        if arr in self.adj[dep]:
            return [[dep, arr]]
        level = [[dep]]
        for _ in range(_MAX_STOPS):
            level = [p + [n] for p in level for n in sorted(self.adj[p[-1]]) if n not in p and n != arr]
            found = [p + [arr] for p in level if arr in self.adj[p[-1]]]
            if found:
                found.sort(key=lambda p: (sum(self.distance(x, y) for x, y in zip(p, p[1:])), p))
                return found[:3]
        return []

    def carriers(self, a: str, b: str) -> list[tuple[str, str]]:
        ca, cb = self.by_name[a], self.by_name[b]
        if ca.get("domestic") and cb.get("domestic"):
            return self.domestic_airlines
        out = [tuple(x) for x in ca.get("carriers", []) + cb.get("carriers", [])]
        if ca.get("domestic") or cb.get("domestic"):
            out += self.long_haul
        return list(dict.fromkeys(out))


def _leg(net: _Network, a: str, b: str, depart: datetime, rng, airport: str | None = None) -> dict[str, Any]:
    ca, cb = net.by_name[a], net.by_name[b]
    dist = net.distance(a, b)
    minutes = int(round((dist / 820 * 60 + 40) / 5) * 5)
    arrive = depart + timedelta(hours=cb["tz"] - ca["tz"], minutes=minutes)
    code, airline = rng.choice(net.carriers(a, b))
    domestic = ca.get("domestic") and cb.get("domestic")
    if domestic:
        price = max(280, round((dist * 0.55 + 250) * rng.uniform(0.45, 1.25), -1))
    else:
        price = round((dist * 0.45 + 1500) * rng.uniform(0.7, 1.3), -1)
    return {
        "flight_no": f"{code}{rng.randint(101, 9899)}",
        "airline": airline,
        "departure_city": a,
        "arrival_city": b,
        "departure_airport": airport or rng.choice(ca["airports"]),
        "arrival_airport": rng.choice(cb["airports"]),
        "departure_time": depart.strftime("%Y-%m-%dT%H:%M"),
        "arrival_time": arrive.strftime("%Y-%m-%dT%H:%M"),
        "duration_minutes": minutes,
        "price": int(price),
        "_utc_depart": depart - timedelta(hours=ca["tz"]),
        "_utc_arrive": arrive - timedelta(hours=cb["tz"]),
        "_arrive_local": arrive,
    }


def _itinerary(net: _Network, path: list[str], day: date, rng) -> dict[str, Any]:
    start = datetime.combine(day, datetime.min.time()) + timedelta(minutes=rng.randrange(390, 1315, 5))
    legs = []
    depart = start
    for a, b in zip(path, path[1:]):
        leg = _leg(net, a, b, depart, rng, legs[-1]["arrival_airport"] if legs else None)
        legs.append(leg)
        depart = leg["_arrive_local"] + timedelta(minutes=rng.randrange(90, 300, 5))
    first, last = legs[0], legs[-1]
    elapsed = int((last["_utc_arrive"] - first["_utc_depart"]).total_seconds() // 60)
    price = sum(leg["price"] for leg in legs)
    if len(legs) > 1:
        price = int(round(price * 0.85, -1))
    out: dict[str, Any] = {
        "flight_no": " / ".join(leg["flight_no"] for leg in legs),
        "airline": " / ".join(dict.fromkeys(leg["airline"] for leg in legs)),
        "departure_airport": first["departure_airport"],
        "arrival_airport": last["arrival_airport"],
        "departure_time": first["departure_time"],
        "arrival_time": last["arrival_time"],
        "duration_minutes": elapsed,
        "stops": len(legs) - 1,
        "price": price,
        "currency": "CNY",
        "cabin": "经济舱",
        "seats_left": rng.randint(1, 9),
    }
    if len(legs) > 1:
        out["via"] = path[1:-1]
        out["segments"] = [{k: v for k, v in leg.items() if not k.startswith("_")} for leg in legs]
    return out


def _parse_date(value: str) -> date | None:
    if not _ISO_DATE.match(value.strip()):
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        return None


def build(world: WorldState) -> list[Tool]:
    net = _Network(world.data["flights"])

    def search_flights(departure_city: str, arrival_city: str, date: str) -> Any:
        day = _parse_date(date)
        if day is None:
            return fail(
                "Error: Invalid date parameter format. Expected ISO 8601 format (YYYY-MM-DD), "
                f"got {date!r}. 日期格式错误，请提供明确的日期，如 {world.today.isoformat()}。",
                "invalid_arguments")
        if day < world.today:
            return fail(f"出发日期 {day.isoformat()} 早于今天（{world.today.isoformat()}），无法查询已过去的航班。",
                        "invalid_arguments")
        for q in (departure_city, arrival_city):
            if net.is_antarctica(q):
                return ok({"departure_city": departure_city, "arrival_city": arrival_city, "date": day.isoformat(),
                           "total": 0, "flights": [],
                           "message": f"未找到{departure_city}至{arrival_city}的任何航班信息"})
        dep, arr = net.resolve(departure_city), net.resolve(arrival_city)
        empty = {"departure_city": departure_city, "arrival_city": arrival_city, "date": day.isoformat(),
                 "total": 0, "flights": []}
        missing = [q for q, c in ((departure_city, dep), (arrival_city, arr)) if c is None]
        if missing:
            return ok({**empty, "message": f"未识别的城市：{'、'.join(missing)}，暂无相关航班信息"})
        assert dep is not None and arr is not None
        if dep["name"] == arr["name"]:
            return fail(f"出发城市与到达城市相同（{dep['name']}），请检查参数。", "invalid_arguments")
        empty.update(departure_city=dep["name"], arrival_city=arr["name"])
        if day > world.today + timedelta(days=330):
            return ok({**empty, "message": f"{day.isoformat()} 的航班尚未开放预订"})
        paths = net.paths(dep["name"], arr["name"])
        if not paths:
            return ok({**empty, "message": f"未找到{dep['name']}至{arr['name']}的航班（无直飞或两次以内中转的航线）"})
        rng = world.rng("flights", dep["name"], arr["name"], day.isoformat())
        flights = []
        if len(paths[0]) == 2:
            both_domestic = dep.get("domestic") and arr.get("domestic")
            count = rng.randint(4, 8) if both_domestic else rng.randint(1, 3)
            flights = [_itinerary(net, paths[0], day, rng) for _ in range(count)]
        else:
            flights = [_itinerary(net, p, day, rng) for p in paths]
        flights.sort(key=lambda f: (f["departure_time"], f["flight_no"]))
        out = {**empty, "total": len(flights), "flights": flights}
        if arr.get("note"):
            out["note"] = arr["note"]
        return ok(out)

    return [Tool(
        "search_flights",
        "查询机票/航班：按出发城市、到达城市和出发日期搜索航班（含国内主要城市与部分国际航线，无直飞时给出中转联程），"
        "返回航班号、航空公司、起降时间、时长和票价。Search flights between two cities on a given date.",
        schema({
            "departure_city": text("出发城市，如「北京」「上海」。Departure city."),
            "arrival_city": text("到达城市，如「上海」「伊斯坦布尔」。Arrival city."),
            "date": text("出发日期，必须为 ISO 8601 格式 YYYY-MM-DD，如 2026-04-17（不接受「明天」「下周五」等相对日期）。"
                         "Departure date, YYYY-MM-DD."),
        }),
        search_flights,
    )]
