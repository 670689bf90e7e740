"""地图: ``maps_text_search``, ``maps_weather``, ``compute_google_maps_routes``,
``compute_google_maps_route_matrix``, over data/maps.yaml.

Text search uses the lexicon term rule of ``_text`` with one difference from
taobao: only *known* terms (place names, areas, districts, cities, categories,
tags, synonyms such as 饭店/美食 -> 餐厅) filter, unknown fragments like
「附近的」 are ignored; a query with no known term falls back to gram overlap.
Routes resolve free-text places (exact name/alias first, then the most specific
place named inside the query) and, inside Beijing, route transit over a
simplified subway graph (2.5 min a stop, 6 min a transfer).
"""

from __future__ import annotations

import heapq
from datetime import timedelta
from typing import Any

from ...tools._tool import Tool
from ._text import GramIndex, Lexicon, compact
from ._world import WorldState, enum, fail, haversine_km, ok, schema, text

_MODES = ["transit", "driving", "walking"]
_TRANSFER = 6  # minutes per interchange
_RANK = {"poi": 0, "station": 1, "district": 2, "city": 3}


class _Maps:
    def __init__(self, world: WorldState):
        self.world = world
        d = world.data["maps"]
        self.data = d
        self.station_xy = {s["name"]: s for s in d["stations"]}
        self.nodes: dict[str, list[tuple[str, str, float]]] = {}
        for line, stops in d["subway_lines"].items():
            step = d["slow_segments"].get(line, 2.5)
            for a, b in zip(stops, stops[1:]):
                self.nodes.setdefault(a, []).append((b, line, step))
                self.nodes.setdefault(b, []).append((a, line, step))
        self.places: list[dict[str, Any]] = []
        for c in d["cities"]:
            self.places.append({**c, "kind": "city", "city": c["name"], "station": None})
        for x in d["districts"]:
            self.places.append({**x, "kind": "district", "station": x.get("station")})
        for s in d["stations"]:
            short = s["name"].removesuffix("站") if s["name"] != "北京南站" else s["name"]
            self.places.append({**s, "kind": "station", "aliases": [short, s["area"]], "station": self.node(s["name"])})
        for p in d["pois"]:
            self.places.append({**p, "kind": "poi", "aliases": [], "station": self.node(p["station"]) if p.get("station") else None})
        # text search documents: POIs and stations
        self.docs: list[dict[str, Any]] = [dict(p) for p in d["pois"]]
        for i, s in enumerate(d["stations"]):
            self.docs.append({"poi_id": f"BS{i + 1:04d}", "name": s["name"], "category": "地铁站", "city": s["city"],
                              "district": s["district"], "area": s["area"], "lines": list(s["lines"]),
                              "address": f"{s['city']}{s['district']}{s['name']}（{'/'.join(s['lines'])}）",
                              "lat": s["lat"], "lng": s["lng"], "tags": ["地铁", *s["lines"]]})
        self.blobs = [compact(" ".join(str(v) for k in ("name", "category", "subcategory", "city", "district", "area", "address")
                                       if (v := doc.get(k)) is not None) + " ".join(doc.get("tags", [])))
                      for doc in self.docs]
        syn = dict(d["category_synonyms"])
        words: set[str] = set()
        for doc in self.docs:
            words.update([doc["name"], doc["category"], doc.get("subcategory") or "", doc["area"], doc["district"], doc["city"], *doc.get("tags", [])])
        for x in d["districts"] + d["cities"]:
            for a in x.get("aliases", []):
                syn[a] = x["name"]
            words.add(x["name"])
        self.lexicon = Lexicon(words, syn)
        self.gram_index = GramIndex(self.blobs)

    @staticmethod
    def label(node: str) -> str:
        return node if node.endswith("站") else f"{node}站"

    def node(self, station_name: str) -> str:
        return station_name if station_name in self.nodes else station_name.removesuffix("站")

    # -- places ---------------------------------------------------------------
    def resolve(self, query: str) -> dict[str, Any] | None:
        q = compact(query)
        if not q:
            return None
        named = [(compact(n), p) for p in self.places for n in [p["name"], *p.get("aliases", [])] if n]
        for n, p in named:
            if n == q:
                return p
        inside = [(n, p) for n, p in named if len(n) >= 2 and n in q]
        if inside:
            return min(inside, key=lambda np: (_RANK[np[1]["kind"]], -len(np[0])))[1]
        around = [(n, p) for n, p in named if len(q) >= 2 and q in n]
        if around:
            return min(around, key=lambda np: (_RANK[np[1]["kind"]], len(np[0])))[1]
        return None

    def walk_minutes_to_station(self, place: dict[str, Any]) -> int:
        if place["kind"] == "station":
            return 0
        s = self.station_xy.get(f"{place['station']}站") or self.station_xy.get(place["station"])
        if s is None:
            return 8
        km = haversine_km(place["lat"], place["lng"], s["lat"], s["lng"])
        return max(2, round(km * 1300 / 80))

    def subway(self, a: str, b: str) -> tuple[float, list[tuple[str, str, str, int]]] | None:
        """Cheapest ride a -> b: (minutes, [(line, from, to, stops)])."""
        heap: list[tuple[float, str, str, tuple]] = [(0.0, a, line, ()) for _, line, _ in self.nodes.get(a, [])]
        heapq.heapify(heap)
        seen: set[tuple[str, str]] = set()
        while heap:
            cost, node, line, path = heapq.heappop(heap)
            if (node, line) in seen:
                continue
            seen.add((node, line))
            if node == b:
                return cost, self._legs(a, path)
            for nxt, nline, step in self.nodes.get(node, []):
                extra = step + (_TRANSFER if nline != line and path else 0)
                heapq.heappush(heap, (cost + extra, nxt, nline, path + ((node, nxt, nline),)))
        return None

    @staticmethod
    def _legs(start: str, path: tuple) -> list[tuple[str, str, str, int]]:
        legs: list[list[Any]] = []
        for frm, to, line in path:
            if legs and legs[-1][0] == line:
                legs[-1][2] = to
                legs[-1][3] += 1
            else:
                legs.append([line, frm, to, 1])
        return [tuple(x) for x in legs]  # type: ignore[misc]

    # -- routes ---------------------------------------------------------------
    def route(self, origin: str, destination: str, mode: str) -> dict[str, Any] | str:
        o, d = self.resolve(origin), self.resolve(destination)
        for q, p in ((origin, o), (destination, d)):
            if p is None:
                return f"无法识别地点「{q}」"
        assert o is not None and d is not None
        km = haversine_km(o["lat"], o["lng"], d["lat"], d["lng"])
        meters = int(round(km * 1300, -1))
        steps: list[dict[str, Any]] = []
        if mode == "walking":
            if km > 30:
                return f"NO_ROUTE:步行距离过远（直线约 {km:.0f} 公里），请改用 transit 或 driving"
            minutes = max(1, round(km * 1250 / 80))
            steps.append({"mode": "walking", "instruction": f"从{o['name']}步行至{d['name']}", "duration_minutes": minutes})
        elif mode == "driving":
            speed = 25 if o["city"] == d["city"] else 85
            minutes = round(km * 1300 / 1000 / speed * 60) + 5
            steps.append({"mode": "driving", "instruction": f"从{o['name']}驾车至{d['name']}", "duration_minutes": minutes})
        elif o["city"] != d["city"]:
            rail = round(km / 250 * 60)
            minutes = rail + 90
            steps += [{"mode": "transit", "vehicle": "高铁/城际铁路", "instruction": f"从{o['city']}乘高铁至{d['city']}",
                       "duration_minutes": rail},
                      {"mode": "transit", "instruction": "两端市内接驳（估算）", "duration_minutes": 90}]
        elif o.get("station") and d.get("station") and o["station"] != d["station"]:
            ride = self.subway(o["station"], d["station"])
            if ride is None:
                return f"NO_ROUTE:{o['name']}与{d['name']}之间暂无地铁线路"
            ride_min, legs = ride
            w1, w2 = self.walk_minutes_to_station(o), self.walk_minutes_to_station(d)
            if w1:
                steps.append({"mode": "walking", "instruction": f"步行至{self.label(o['station'])}", "duration_minutes": w1})
            for i, (line, frm, to, stops) in enumerate(legs):
                if i:
                    steps.append({"mode": "walking", "instruction": f"在{self.label(frm)}换乘{line}",
                                  "duration_minutes": _TRANSFER})
                steps.append({"mode": "transit", "vehicle": "地铁", "line": line, "from": self.label(frm), "to": self.label(to),
                              "stops": stops, "instruction": f"乘坐{line}从{self.label(frm)}到{self.label(to)}（{stops} 站）",
                              "duration_minutes": round(stops * self.data["slow_segments"].get(line, 2.5))})
            if w2:
                steps.append({"mode": "walking", "instruction": f"出站步行至{d['name']}", "duration_minutes": w2})
            minutes = round(ride_min + w1 + w2 + 3)
        else:
            minutes = max(5, round(km * 1300 / 1000 / 22 * 60) + 12)
            steps.append({"mode": "transit", "instruction": f"从{o['name']}乘坐公交/地铁至{d['name']}（估算）",
                          "duration_minutes": minutes})
        lines = [s["line"] for s in steps if s.get("line")]
        summary = " → ".join(lines) if lines else steps[0]["instruction"]
        return {"origin": {"query": origin, "name": o["name"], "city": o["city"]},
                "destination": {"query": destination, "name": d["name"], "city": d["city"]},
                "travel_mode": mode,
                "routes": [{"summary": summary, "distance_meters": meters, "duration_minutes": minutes,
                            "duration": f"{minutes * 60}s", "steps": steps}]}


def build(world: WorldState) -> list[Tool]:
    m = _Maps(world)
    cities = world.data["maps"]["cities"]

    def maps_text_search(query: str, city: str | None = None) -> Any:
        pool = list(range(len(m.docs)))
        city_name = None
        if city:
            hit = next((c for c in cities if compact(city) in [compact(c["name"]), *map(compact, c["aliases"])]), None)
            if hit is None:
                return ok({"query": query, "city": city, "total": 0, "pois": [], "message": f"暂不支持城市「{city}」的地点搜索"})
            city_name = hit["name"]
            pool = [i for i in pool if m.docs[i]["city"] == city_name]
        known = [t for t, k in m.lexicon.terms(query) if k]
        if known:
            hits = [i for i in pool if all(t in m.blobs[i] for t in known)]
        else:
            ranked = m.gram_index.rank(query, min_score=0.5)
            hits = [i for i, _ in ranked if i in pool]
        hits.sort(key=lambda i: (-(m.docs[i].get("rating") or 0), i))
        out = []
        for i in hits[:10]:
            doc = m.docs[i]
            item = {k: doc[k] for k in ("poi_id", "name", "category", "subcategory", "address", "city", "district", "area",
                                        "rating", "avg_price", "open_hours", "lines") if doc.get(k) is not None}
            if doc.get("station"):
                item["nearest_station"] = doc["station"]
            item["location"] = {"lat": doc["lat"], "lng": doc["lng"]}
            out.append(item)
        res: dict[str, Any] = {"query": query, "city": city_name, "total": len(hits), "pois": out}
        if not out:
            res["message"] = "未找到相关地点"
        return ok(res)

    def maps_weather(city: str) -> Any:
        table = world.data["maps"]["weather"]
        q = compact(city)
        entry = next((w for w in table if q in [compact(w["city"]), *map(compact, w["aliases"])]), None)
        if entry is None:
            place = m.resolve(city)
            if place is not None:
                entry = next((w for w in table if w["city"] == place["city"]), None)
        if entry is None:
            return fail(f"暂无「{city}」的天气数据", "not_found")
        days = []
        for offset in range(4):
            day = world.today + timedelta(days=offset)
            rng = world.rng("weather", entry["city"], day.isoformat())
            days.append({"date": day.isoformat(), "condition": rng.choice(entry["conditions"]),
                         "high": entry["high"] + rng.randint(-3, 3), "low": entry["low"] + rng.randint(-2, 2)})
        rng = world.rng("weather-now", entry["city"], world.now.isoformat())
        today = days[0]
        current = {"condition": today["condition"],
                   "temperature": round(today["low"] + (today["high"] - today["low"]) * 0.6),
                   "humidity": entry["humidity"] + rng.randint(-8, 8),
                   "wind": f"{rng.choice(['北风', '南风', '东风', '西风', '东南风', '西北风'])}{rng.randint(1, 4)}级"}
        return ok({"city": entry["city"], "updated_at": world.now.isoformat(), "current": current,
                   "forecast": days, "climate": entry["climate"]})

    def as_result(res: dict[str, Any] | str) -> Any:
        if isinstance(res, str):
            if res.startswith("NO_ROUTE:"):
                return fail(res.removeprefix("NO_ROUTE:"), "no_route")
            return fail(res, "not_found")
        return ok(res)

    def compute_google_maps_routes(origin: str, destination: str, travel_mode: str = "transit") -> Any:
        return as_result(m.route(origin, destination, travel_mode))

    def compute_google_maps_route_matrix(origins: list[str], destinations: list[str], travel_mode: str = "transit") -> Any:
        elements = []
        for i, o in enumerate(origins):
            for j, d in enumerate(destinations):
                res = m.route(o, d, travel_mode)
                el: dict[str, Any] = {"origin_index": i, "destination_index": j, "origin": o, "destination": d}
                if isinstance(res, str):
                    el["status"] = "ZERO_RESULTS" if res.startswith("NO_ROUTE:") else "NOT_FOUND"
                    el["message"] = res.removeprefix("NO_ROUTE:")
                else:
                    r = res["routes"][0]
                    el.update(status="OK", distance_meters=r["distance_meters"], duration_minutes=r["duration_minutes"])
                elements.append(el)
        return ok({"travel_mode": travel_mode, "elements": elements})

    mode = enum("出行方式：transit 公共交通（地铁/公交），driving 驾车，walking 步行，默认 transit。Travel mode.", _MODES, "transit")
    places = {"type": "array", "minItems": 1, "maxItems": 10, "items": {"type": "string", "minLength": 1}}
    return [
        Tool("maps_text_search",
             "地图地点搜索：按关键词搜索餐厅、地铁站、商场、景点等地点（POI），如「朝阳区 餐厅」「望京 烤肉」「国贸站」，"
             "返回名称、地址、评分、人均价格、最近地铁站和坐标。Search places (POIs) by text.",
             schema({"query": text("搜索关键词，如「朝阳区餐厅」「三里屯」「地铁站」。Search text."),
                     "city": text("城市，如「北京」，可选。City, optional.")}, ["query"]),
             maps_text_search),
        Tool("maps_weather",
             "天气查询：查询城市（或海岛目的地）的当前天气和未来几天天气预报，附季节气候说明。Current weather and forecast for a city.",
             schema({"city": text("城市或目的地名称，如「北京」「米洛斯岛」。City name.")}),
             maps_weather),
        Tool("compute_google_maps_routes",
             "路线规划：计算从起点到终点的路线（地铁/公交、驾车或步行），返回距离、耗时和分步说明（含地铁线路与换乘）。"
             "Compute a route between two places.",
             schema({"origin": text("起点，地点名称或地址，如「国贸」「北京南站」。Origin."),
                     "destination": text("终点，地点名称或地址，如「北京朝阳区」「望京」。Destination."),
                     "travel_mode": mode}, ["origin", "destination"]),
             compute_google_maps_routes),
        Tool("compute_google_maps_route_matrix",
             "路线矩阵：批量计算多个起点到多个终点的距离和耗时（各最多 10 个）。Distance/duration matrix between places.",
             schema({"origins": {**places, "description": "起点列表，如 [\"国贸\", \"望京\"]。Origins."},
                     "destinations": {**places, "description": "终点列表，如 [\"三里屯太古里\"]。Destinations."},
                     "travel_mode": mode}, ["origins", "destinations"]),
             compute_google_maps_route_matrix),
    ]
