"""Slot filling: what the user asked for, read from the text with generic rules.

:func:`parse_task` turns the user's request (plus any replies the user gave
to questions) into a :class:`Task`: the subject, quoted terms, enumerated
items, places, a route, a date phrase, a budget, a number of days and
exclusions. :func:`resolve_date` turns a date phrase into an ISO date.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ._dates import DATE_RE, DEFAULT_TODAY, date_phrase, resolve_date
from ._lexicon import (
    CITIES,
    CITY_SET,
    DEGREE_WORDS,
    DISTRICT_CITY,
    DISTRICTS,
    FILLERS,
    NUM,
    PLATFORMS,
    REFUSALS,
    REGIONS,
    cn_number,
    contains_any,
)

_QUOTES = re.compile(r"「([^」]+)」|“([^”]+)”|\"([^\"]+)\"|『([^』]+)』")
_CLAUSE_SPLIT = re.compile(r"[，,；;。！!？?\n]+")
_ACTION = re.compile(r"^(?:然后|再|并且|并|还要|还有|顺便|同时|另外)?(?:帮我|请|麻烦)?(?:查|找|搜|看|推荐|对比|比较|规划|订|预订|获取|列出)")

_PRICE_RE = re.compile(
    rf"(?:预算|不超过|不高于|最多|控制在|人均)?\s*{NUM}\s*(万|千)?\s*(?:元|块|rmb|人民币)?\s*(?:以内|以下|之内|内|左右)"
    rf"|(?:预算|不超过|不高于|最多|人均)\s*{NUM}\s*(万|千)?\s*(?:元|块)?")
_DAYS_RE = re.compile(rf"{NUM}\s*(?:天|日)(?!后|以后|之后)|(一|两|二|三)\s*(?:周|星期)(?![一二三四五六日天末])")
_FREE_ROUTE = re.compile(r"从([\u4e00-\u9fffA-Za-z0-9]{2,8}?)(?:到|去|飞|至)([\u4e00-\u9fffA-Za-z0-9]{2,8}?)"
                         r"(?=的|怎么|坐|乘|开车|步行|打车|要|多|机票|航班|路线|$|[，,。？?])")
_FREE_TARGET = re.compile(r"(?:去|到)([\u4e00-\u9fffA-Za-z0-9]{2,8}?)(?=的路线|怎么走|怎么去|的地铁|的公交|的交通)")
_ANAPHORA = ("那里", "那边", "那儿", "这里", "这边")
_GREETINGS = ("你好", "您好", "hi", "hello", "谢谢", "在吗", "嗨")
_VAGUE_PRICE = ("不要太贵", "别太贵", "太贵", "便宜", "实惠", "性价比", "省钱", "预算有限", "经济")


@dataclass(frozen=True)
class Place:
    name: str
    kind: str      # city | district | region
    pos: int


@dataclass(frozen=True)
class Task:
    request: str                               # the user's request message
    replies: tuple[str, ...] = ()              # answers the user gave to questions
    quoted: tuple[str, ...] = ()
    subject: str = ""                          # what to search for
    core: str = ""                             # the subject without places
    items: tuple[str, ...] = ()                # enumerated items ("A、B、C")
    aspects: tuple[str, ...] = ()              # what to compare ("要看 X、Y")
    places: tuple[Place, ...] = ()
    origin: str | None = None
    destination: str | None = None
    date_phrase: str | None = None
    max_price: float | None = None             # in yuan
    vague_price: bool = False
    days: int | None = None
    exclusions: tuple[str, ...] = ()
    clauses: tuple[str, ...] = ()              # sub-requests, each starting with an action
    refusals: int = 0

    @property
    def text(self) -> str:
        return "\n".join((self.request, *self.replies))

    @property
    def city(self) -> str | None:
        for p in self.places:
            if p.kind == "city":
                return p.name
        for p in self.places:
            if p.kind == "district":
                return DISTRICT_CITY.get(p.name)
        return None

    @property
    def district(self) -> str | None:
        return next((p.name for p in self.places if p.kind == "district"), None)

    @property
    def filters(self) -> tuple[str, ...]:
        """Quoted terms after the first: what the answer must mention."""
        return self.quoted[1:]

    def query(self, clause: str | None = None) -> str:
        """A search-engine query: places, then the core words."""
        if self.quoted and not clause:
            return self.quoted[0]
        core = core_words(clause) if clause else self.core
        names = [p.name for p in self.places if p.name not in core]
        return " ".join(dict.fromkeys([*names, core] if core else names)) or self.subject


def is_refusal(text: str) -> bool:
    return contains_any(text, REFUSALS)


def quoted_terms(text: str) -> list[str]:
    return [next(g for g in m.groups() if g).strip() for m in _QUOTES.finditer(text)]


def find_places(text: str) -> list[Place]:
    return list(_find_places(text) if len(text) <= 4096 else _find_places.__wrapped__(text))


_PLACE_NAMES = sorted([(n, "district") for n in DISTRICTS] + [(n[:-1], "district") for n in DISTRICTS if len(n) > 2]
                      + [(n, "city") for n in CITIES] + [(n, "region") for n in REGIONS], key=lambda p: -len(p[0]))


@functools.lru_cache(maxsize=2048)
def _find_places(text: str) -> tuple[Place, ...]:
    """The places in a text (cached: a policy agent reads the same request at every step)."""
    taken = [False] * len(text)
    found: list[Place] = []
    for name, kind in _PLACE_NAMES:
        start = 0
        while (i := text.find(name, start)) >= 0:
            start = i + 1
            if any(taken[i:i + len(name)]):
                continue
            if kind == "district" and not name.endswith("区") and not text[i + len(name):i + len(name) + 1] == "区":
                # a bare district name ("朝阳") only counts right after its city
                city = DISTRICT_CITY.get(name + "区", "")
                if not text[:i].endswith(city) or not city:
                    continue
            for k in range(i, i + len(name)):
                taken[k] = True
            full = name + "区" if kind == "district" and not name.endswith("区") and (name + "区") in DISTRICT_CITY else name
            found.append(Place(full, kind, i))
    found.sort(key=lambda p: p.pos)
    return tuple(found)


def route(text: str, places: list[Place]) -> tuple[str | None, str | None]:
    """(origin, destination) from 从X到Y / X到Y / X飞Y / 去Y / 从X出发."""
    spots = [p for p in places if p.kind != "district"]
    for a, b in zip(spots, spots[1:]):
        between = text[a.pos + len(a.name):b.pos]
        if len(between) <= 4 and re.search(r"到|飞|至|去|往|→|->|-", between):
            return a.name, b.name
    m = _FREE_ROUTE.search(text)
    if m and not spots:
        return m.group(1), m.group(2)
    origin = destination = None
    for p in spots:
        before = text[max(0, p.pos - 2):p.pos]
        after = text[p.pos + len(p.name):p.pos + len(p.name) + 2]
        if origin is None and ("从" in before or after.startswith("出发")):
            origin = p.name
        elif destination is None and re.search(r"到|飞|去|往", before):
            destination = p.name
    m = _FREE_TARGET.search(text)
    if destination is None and m and m.group(1) not in _ANAPHORA:
        destination = m.group(1)
    return origin, destination


def strip_fillers(text: str) -> str:
    out = text
    for plat in PLATFORMS:
        out = re.sub(rf"在?{plat}(?:上|里|平台)?(?:的|关于)?", "", out)
    for word in FILLERS:
        out = out.replace(word, " ")
    return out


def _strip_slots(text: str) -> str:
    out = DATE_RE.sub(" ", text.replace("一下", "  "))
    out = _PRICE_RE.sub(" ", out)
    out = re.sub(rf"{NUM}\s*(?:天|日)(?:左右)?", " ", out)
    out = re.sub(r"(?:不要|别|不去|除了|排除)[^，,；。\s]*", " ", out)
    out = re.sub(rf"{NUM}\s*(?:款|个|种|家|件|部|台|条)", " ", out)
    return out


def core_words(text: str) -> str:
    """The clause without fillers, slots, places, connectors and particles."""
    out = _strip_slots(strip_fillers(text))
    for p in sorted({p.name for p in find_places(out)}, key=len, reverse=True):
        out = out.replace(p, " ")
    out = out.replace("目的地", "\0")
    out = re.sub(r"从|出发|飞往|那里|那边|这里|[的了去到飞至往]", " ", out)
    out = out.replace("\0", "目的地")
    out = re.sub(r"[「」“”\"『』《》（）()：:、，,。！？!?；;]", " ", out)
    return " ".join(out.split())


def subject_of(text: str) -> str:
    """The thing to search for, places included."""
    quoted = quoted_terms(text)
    if quoted:
        return quoted[0]
    first = _CLAUSE_SPLIT.split(text.strip())[0] or text
    out = _strip_slots(strip_fillers(first))
    out = out.replace("目的地", "\0")
    out = re.sub(r"从|[的了去到飞至往]", " ", out).replace("\0", "目的地")
    out = re.sub(r"[「」“”\"『』《》（）()：:、]", " ", out)
    return "".join(out.split()) or text.strip()


def enumerated_items(text: str) -> tuple[list[str], list[str]]:
    """(items, aspects): 'X：A、B、C，要看 P、Q' -> ([A, B, C], [P, Q])."""
    items: list[str] = []
    m = re.search(r"[：:]([^，,；;。\n]+)", text)
    if m:
        parts = [p.strip() for p in re.split(r"、|和|及|与|以及|/", m.group(1))]
        items = [p for p in parts if p]
        if len(items) < 2:
            items = []
    aspects: list[str] = []
    a = re.search(r"(?:要看|看看|关注|比较|对比|重点看|主要看)([^：:；;。\n]+)$", text[m.end():] if m else "")
    if a:
        aspects = [p.strip() for p in re.split(r"、|，|,|和|及|与", a.group(1)) if p.strip()]
    return items, aspects


def clauses_of(text: str) -> list[str]:
    """The first clause, then every later clause that starts with an action."""
    parts = [c.strip() for c in _CLAUSE_SPLIT.split(text) if c.strip()]
    return parts[:1] + [c for c in parts[1:] if _ACTION.search(c)]


def _price(text: str) -> float | None:
    m = _PRICE_RE.search(text)
    if not m:
        return None
    num = m.group(1) or m.group(3)
    unit = m.group(2) or m.group(4)
    value = cn_number(num) if num else None
    if value is None:
        return None
    return value * {"万": 10000, "千": 1000}.get(unit or "", 1)


def _days(text: str) -> int | None:
    for m in _DAYS_RE.finditer(text):
        if m.group(1):
            n = cn_number(m.group(1))
            if n and 0 < n < 100:
                return int(n)
        elif m.group(2):
            return 7 * int(cn_number(m.group(2)) or 1)
    return None


def _exclusions(text: str) -> list[str]:
    out = []
    for m in re.finditer(r"(?:不要|别去|不去|除了|排除)([^，,；;。\s]+)", text):
        word = m.group(1)
        if any(word.startswith(d) for d in DEGREE_WORDS) or is_refusal(m.group(0)) or word in ("问",):
            continue
        out.append(word)
    return out


def _core(request: str, items: list[str]) -> str:
    quoted = quoted_terms(request)
    if quoted:
        return core_words(quoted[0])
    first = _CLAUSE_SPLIT.split(request.strip())[0]
    if items:
        first = re.split(r"[：:]", first)[0]
    return core_words(first)


def parse_task(request: str, replies: tuple[str, ...] = ()) -> Task:
    everything = "\n".join((request, *replies))
    exclusions = _exclusions(everything)
    places = [p for p in find_places(request) + [p for r in replies for p in find_places(r)]
              if not any(p.name in e for e in exclusions)]
    origin, destination = route(request, find_places(request))
    for r in replies:
        o, d = route(r, find_places(r))
        origin, destination = origin or o, destination or d
    items, aspects = enumerated_items(request)
    dp = date_phrase(request) or next((d for r in replies if (d := date_phrase(r))), None)
    price = _price(request)
    for r in replies:
        price = price if price is not None else _price(r)
    return Task(
        request=request,
        replies=tuple(replies),
        quoted=tuple(quoted_terms(request)),
        subject=subject_of(request),
        core=_core(request, items),
        items=tuple(items),
        aspects=tuple(aspects),
        places=tuple(places),
        origin=origin,
        destination=destination,
        date_phrase=dp,
        max_price=price,
        vague_price=price is None and contains_any(request, _VAGUE_PRICE),
        days=_days(request) or next((d for r in replies if (d := _days(r))), None),
        exclusions=tuple(exclusions),
        clauses=tuple(clauses_of(request)),
        refusals=sum(1 for r in replies if is_refusal(r)),
    )


def is_greeting(text: str) -> bool:
    bare = re.sub(r"[\s，,。！!？?~～啊呀呢吧]", "", text.strip().casefold())
    return not bare or bare in _GREETINGS


def is_city(name: str | None) -> bool:
    return bool(name) and (name in CITY_SET or name.rstrip("市") in CITY_SET)


__all__ = ["DEFAULT_TODAY", "Place", "Task", "parse_task", "resolve_date", "is_refusal", "is_city",
           "is_greeting", "quoted_terms", "find_places", "date_phrase", "subject_of", "core_words", "enumerated_items"]
