"""Which tools to call, in which order, with which arguments.

Tool choice scores each tool's name and description against the request
(character bigrams). Parameters are classified by name, description and
schema, and filled from the :class:`~._extract.Task`. An id parameter names
the tool that produces it in its description ("需先调用 X 获取"); a chain is
the producers, the chosen tool, then the relevant tools that consume ids
the chain produces (search posts -> detail -> comments).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...messages import ToolSpec
from ._extract import Task, find_places, subject_of
from ._lexicon import bigrams

GENERIC_NAME_TOKENS = {"search", "get", "lookup", "compute", "list", "query", "detail", "details", "google",
                       "plan", "text", "by", "id", "info", "find", "fetch", "the", "a"}
# Words that carry a request's intent to a tool's vocabulary (generic, not per case).
_INTENT = (
    (r"元|块钱|买|购|款|商品|价格|便宜|贵", "商品 购物 价格"),
    (r"机票|航班|飞", "机票 航班"),
    (r"房|租|买房", "房源 二手房"),
    (r"餐厅|吃|美食|饭店|咖啡|附近|周边|商场|景点", "餐厅 地点 周边"),
    (r"路线|怎么去|怎么走|怎么坐|地铁|公交|开车|步行|导航", "路线 规划 起点 终点"),
    (r"旅游|度假|旅行|景点|海岛|目的地", "旅游 目的地"),
    (r"天气|下雨|气温", "天气"),
)


@dataclass(frozen=True)
class Param:
    name: str
    kind: str            # id | query | origin | destination | city | district | date | days | price | exclude | option | other
    required: bool
    schema: dict[str, Any]
    description: str
    producer: str | None = None

    @property
    def is_list(self) -> bool:
        return self.schema.get("type") == "array"

    @property
    def label(self) -> str:
        return {"origin": "出发地", "destination": "目的地", "city": "城市", "district": "区域", "date": "日期",
                "days": "天数", "price": "预算", "query": "关键词"}.get(self.kind, _short(self.description) or self.name)


def _short(description: str) -> str:
    return re.split(r"[，,。.（(：:]", description.strip())[0][:12]


@dataclass(frozen=True)
class ToolInfo:
    spec: ToolSpec
    params: tuple[Param, ...]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def family(self) -> str:
        tokens = [t for t in self.name.lower().split("_") if t and t not in GENERIC_NAME_TOKENS]
        return tokens[0] if tokens else self.name

    @property
    def is_web(self) -> bool:
        return "web" in self.name.lower().split("_") or self.name.lower() in ("search", "web_search", "google_search")

    def param(self, kind: str) -> Param | None:
        return next((p for p in self.params if p.kind == kind), None)

    @property
    def id_params(self) -> list[Param]:
        return [p for p in self.params if p.kind == "id" and p.required]


def classify(name: str, schema: dict[str, Any], description: str) -> str:
    n = name.lower()
    d = description
    if n == "id" or n.endswith("_id") or n.endswith("ids"):
        return "id"
    if "exclude" in n or "排除" in d[:10]:
        return "exclude"
    if n in ("keyword", "keywords", "query", "q", "term", "search", "text", "topic") or "keyword" in n or "query" in n:
        return "query"
    if "departure" in n or n.startswith("origin") or n in ("from", "from_city", "start"):
        return "origin"
    if "arrival" in n or n.startswith("destination") or n in ("to", "to_city", "end"):
        return "destination"
    if "district" in n:
        return "district"
    if "city" in n or n.startswith("城市"):
        return "city"
    if n in ("days", "duration", "nights", "num_days") or n.endswith("_days"):
        return "days"
    if "date" in n or n == "day":
        return "date"
    if "price" in n or "budget" in n:
        return "price"
    if n in ("limit", "count", "page", "size", "sort", "order", "mode", "travel_mode") or "sort" in n:
        return "option"
    for kind, words in (("query", "关键词"), ("city", "城市"), ("date", "日期"), ("origin", "出发"),
                        ("destination", "到达"), ("days", "天数"), ("price", "预算")):
        if words in d[:8]:
            return kind
    return "other"


def tool_infos(specs: list[ToolSpec]) -> dict[str, ToolInfo]:
    names = [s.name for s in specs]
    out: dict[str, ToolInfo] = {}
    for spec in specs:
        props = (spec.parameters or {}).get("properties", {}) or {}
        required = set((spec.parameters or {}).get("required", []) or [])
        params = []
        for pname, pschema in props.items():
            desc = str(pschema.get("description", ""))
            kind = classify(pname, pschema, desc)
            producer = _producer(pname, desc, spec.name, names, specs) if kind == "id" else None
            params.append(Param(pname, kind, pname in required, pschema, desc, producer))
        out[spec.name] = ToolInfo(spec, tuple(params))
    return out


def _producer(pname: str, desc: str, owner: str, names: list[str], specs: list[ToolSpec]) -> str | None:
    for name in sorted(names, key=len, reverse=True):
        if name != owner and name in desc:
            return name
    entity = pname.lower().removesuffix("_id").removesuffix("id").strip("_")
    family = owner.split("_")[0]
    for spec in specs:
        n = spec.name.lower()
        if spec.name != owner and n.startswith(family) and entity and entity in n and "search" in n:
            return spec.name
    return None


def _intent(text: str) -> str:
    return " ".join(words for pattern, words in _INTENT if re.search(pattern, text))


def relevance(text: str, info: ToolInfo) -> int:
    """Shared bigrams between the request (plus its intent words) and the tool.

    Place names are left out: they say where, not what to do."""
    bare = text
    for place in sorted({p.name for p in find_places(text)}, key=len, reverse=True):
        bare = bare.replace(place, " ")
    req = bigrams(bare) | bigrams(_intent(text))
    tool = bigrams(info.spec.description.split("。")[0]) | bigrams(info.spec.description) | bigrams(info.name.replace("_", " "))
    return len(req & tool)


def best_tool(text: str, infos: dict[str, ToolInfo]) -> str | None:
    scored = [(relevance(text, i), -len(i.id_params), -k, i.name) for k, i in enumerate(infos.values()) if not i.is_web]
    scored = [s for s in scored if s[0] > 0]
    if not scored:
        return None
    return max(scored)[3]


def web_tool(infos: dict[str, ToolInfo]) -> str | None:
    return next((i.name for i in infos.values() if i.is_web), None)


def chain_for(main: str, infos: dict[str, ToolInfo], request: str) -> list[str]:
    order: list[str] = []

    def add(name: str, seen: tuple[str, ...] = ()) -> None:
        for p in infos[name].id_params:
            if p.producer in infos and p.producer not in order and p.producer not in seen:
                add(p.producer, seen + (name,))
        if name not in order:
            order.append(name)

    add(main)
    changed = True
    while changed:
        changed = False
        for info in infos.values():
            if info.name in order or info.is_web or relevance(request, info) == 0:
                continue
            ids = info.id_params
            if ids and all(p.producer in order for p in ids):
                order.append(info.name)
                changed = True
    return order


@dataclass(frozen=True)
class Goal:
    clause: str | None            # None: the whole request
    chain: tuple[str, ...]

    @property
    def main(self) -> str:
        return self.chain[-1]


@dataclass
class Plan:
    goals: list[Goal] = field(default_factory=list)
    web: str | None = None


def make_plan(task: Task, infos: dict[str, ToolInfo]) -> Plan:
    plan = Plan(web=web_tool(infos))
    clauses = list(task.clauses) or [task.request]
    covered: set[str] = set()
    for k, clause in enumerate(clauses):
        main = best_tool(clause, infos)
        if main is None or main in covered:
            continue
        chain = chain_for(main, infos, task.request)
        covered.update(chain)
        plan.goals.append(Goal(None if k == 0 else clause, tuple(chain)))
    return plan


# -- arguments ---------------------------------------------------------------------
def _as(param: Param, value: Any) -> Any:
    if param.is_list:
        return value if isinstance(value, list) else [value]
    if isinstance(value, list):
        return "、".join(map(str, value))
    if param.schema.get("type") == "integer":
        return int(value)
    if param.schema.get("type") == "number":
        return int(value) if float(value).is_integer() else float(value)
    return value


def fill(info: ToolInfo, task: Task, *, item: str | None = None, clause: str | None = None,
         ids: dict[str, list[str]] | None = None, known: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[Param]]:
    """(arguments, missing required parameters).

    A required parameter the task does not fill is taken, in order, from a value
    of the same name in an earlier tool result (``known``), from the task's text
    (a match of the schema's ``pattern``; for a code, number or token parameter,
    a code-like token such as ``600519``), then from the schema's ``default`` or
    first ``enum`` value; only then is it missing (and asked for)."""
    ids = ids or {}
    args: dict[str, Any] = {}
    missing: list[Param] = []
    for p in info.params:
        value = _value(p, info, task, item, clause, ids)
        if value is None and p.required and p.kind != "id":
            value = _fallback(p, task, known or {})
        if value is None:
            if p.required:
                missing.append(p)
            continue
        args[p.name] = _as(p, value)
    return args, missing


def _value(p: Param, info: ToolInfo, task: Task, item: str | None, clause: str | None,
           ids: dict[str, list[str]]) -> Any:
    k = p.kind
    if k == "id":
        values = ids.get(p.name) or []
        return values[0] if values else None
    if k == "query":
        if info.is_web:
            return task.query(clause) if not item else f"{item} {' '.join(task.aspects)}".strip()
        if item:
            return item
        if clause:
            return subject_of(clause)
        return task.subject
    if k == "origin":
        return task.origin
    if k == "destination":
        if task.destination:
            return task.destination
        if clause and re.search(r"那里|那边|那儿", clause):
            return "".join(p.name for p in task.places if p.kind != "region") or None
        return None
    if k == "city":
        return task.city
    if k == "district":
        return task.district
    if k == "date":
        return task.date_phrase
    if k == "days":
        return task.days
    if k == "price":
        if task.max_price is None:
            return None
        wan = "wan" in p.name.lower() or "万" in p.description[:12]
        return task.max_price / 10000 if wan else task.max_price
    if k == "exclude":
        return list(task.exclusions) or None
    return None



_CODE_PARAM = re.compile(r"code|symbol|ticker|number|token|(?:^|_)no$|代码|编号|单号|号码", re.I)
_CODE_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9][A-Za-z0-9_-]{3,39}(?![A-Za-z0-9_-])")


def _fallback(p: Param, task: Task, known: dict[str, Any]) -> Any:
    """A required value the task's own extraction missed: see :func:`fill`."""
    if p.name in known and not isinstance(known[p.name], (dict, list)):
        return known[p.name]
    if p.kind not in ("other", "option"):      # places, dates, queries...: the task's extraction decides
        return p.schema.get("default", (p.schema.get("enum") or [None])[0])
    head = _short(p.description)
    names = "|".join(re.escape(n) for n in (p.name, head) if len(n) >= 2)
    said = re.search(rf"(?:{names})\s*(?:是|为|:|：|=)\s*([A-Za-z0-9_.\-]+)", task.text) if names else None
    if said:                                   # "session 是 s3ss10n-42", "code=600519"
        return said.group(1)
    pattern = p.schema.get("pattern")
    if isinstance(pattern, str) and not _too_broad(pattern):
        try:
            found = re.search(pattern.strip("^$"), task.text)
        except re.error:
            found = None
        if found:
            return found.group(0)
    if p.schema.get("type", "string") == "string" and (_CODE_PARAM.search(p.name) or _CODE_PARAM.search(p.description[:20])):
        found = _CODE_TOKEN.search(task.text)
        if found:
            return found.group(0)
    if "default" in p.schema:
        return p.schema["default"]
    if p.schema.get("enum"):
        return p.schema["enum"][0]
    return None


def _too_broad(pattern: str) -> bool:
    """A pattern any short text matches (``\\S``, ``.+``) says nothing about where a value is."""
    try:
        return any(re.search(pattern, probe) for probe in ("x", "页"))
    except re.error:
        return True


_PAGE_PARAMS = ("page", "page_no", "page_number", "pageno", "pagenum", "page_index", "pageindex")
_CURSOR_PARAMS = ("cursor", "next", "next_cursor", "page_token", "pagetoken", "next_page_token", "offset_token")


def next_page(info: ToolInfo, args: dict[str, Any], data: Any) -> dict[str, Any] | None:
    """The arguments of the next page when ``data`` says there is one (``has_more``,
    ``next``, ``next_page``, ``next_cursor``, ``nextPageToken``), else None."""
    if not isinstance(data, dict):
        return None
    more = data.get("has_more", data.get("hasMore"))
    nxt = next((data[k] for k in ("next", "next_page", "next_cursor", "nextPageToken", "next_page_token")
                if data.get(k) not in (None, "", False)), None)
    if more is False or (more is None and nxt is None):
        return None
    names = {p.name.lower(): p for p in info.params}
    cursor = next((names[c] for c in _CURSOR_PARAMS if c in names), None)
    if cursor is not None and nxt is not None and not isinstance(nxt, bool):
        return {**args, cursor.name: nxt}
    page = next((names[c] for c in _PAGE_PARAMS if c in names), None)
    if page is None:
        return None
    if isinstance(nxt, int) and not isinstance(nxt, bool):
        number = nxt
    else:
        current = args.get(page.name, data.get("page", page.schema.get("default", 1)))
        try:
            number = int(current) + 1
        except (TypeError, ValueError):
            return None
    return {**args, page.name: number}
