"""Evidence the loop guard reads from results whatever the tool and its field
spellings: a status nested in an envelope, what a result adds to what the same
call already returned. Kept apart from :mod:`._calls` (which describes one call
and runs on every call, so it is kept lean): these run only when a call repeats.
"""

from __future__ import annotations

import re
from typing import Any

from ..events import ToolResultEvent
from ._calls import (
    is_offset_key,
    _NAME_TOKEN,
    _NEXT_KEYS,
    _SHAPE,
    TRANSIENT_TYPES,
    _key_kind,
    _ID_KEY,
    canon_result,
    is_page_key,
    is_pending,
    is_transient,
    pending_form,
    norm_text,
)

_MAX_DEPTH = 2


def pending_within(data: Any, sent: frozenset = frozenset()) -> bool:
    """A "not finished yet" status one or two objects down (``{"status": {"state":
    "PENDING"}}``, ``{"code": 0, "data": {"status": "in_progress"}}``): an envelope
    around a job's status is still a poll. Lists are not searched: a listing of jobs,
    some running, is not a job that is running; but a listing that holds one job, the one
    the call named by its id (``{"data": [{"execute_id": "7413", "execute_status": "Running"}]}``
    for ``{"execute_id": "7413"}``), is that job, read as a job's answer is on a repeat."""
    return type(data) is dict and _within(data, 0, sent)


def _within(data: dict, depth: int, sent: frozenset) -> bool:
    for key, value in data.items():
        if type(value) is list and len(value) == 1 and type(value[0]) is dict and sent:
            job = value[0]
            if (is_pending(job) or pending_form(job)) and any(type(v) is str and v in sent for v in job.values()):
                return True
        elif type(value) is dict and len(value) <= 32:
            if is_pending(value) or pending_form(value):
                return True                 # (a status field in any case or form: ``{"Status": {"State": "QUEUED"}}``)
            if depth + 1 < _MAX_DEPTH and _within(value, depth + 1, sent):
                return True
    return False


# Name words of a read whose job is to report a state (a status, a health check, a watch): repeating one is how
# an agent waits for the world to change.
WATCH_WORDS = frozenset({"status", "health", "healthcheck", "heartbeat", "ping", "poll", "watch", "monitor", "check"})
_WATCH: dict[str, bool] = {}


def is_watch_name(tool: str) -> bool:
    known = _WATCH.get(tool)
    if known is None:
        known = _WATCH[tool] = any(t.casefold() in WATCH_WORDS for t in _NAME_TOKEN.findall(tool))
        if len(_WATCH) > 4096:
            _WATCH.clear()
    return known


_MAX_UNITS = 400
# A number that measures the call itself (``latency_ms``, ``took``, ``elapsed_time``, ``search_time_ms``):
# it differs on every answer and says nothing about the content.
_TIMING = re.compile(r"(?:^|_)(?:latency|elapsed|took|duration|timing|(?:response|search|query|processing|server|"
                     r"exec|execution|run)_?time)(?:_?time)?(?:_?(?:ms|s|sec|secs|seconds|us))?$", re.IGNORECASE)
_NUMBERS = (int, float)


def content_units(data: Any, names: bool = False) -> set[str] | None:
    """What a result says, as a set of units that do not depend on order: each item of a
    list by its text (its strings; numbers on a listed item, a score or a rank, belong to
    this answer's ordering, not to the item), each line of a multi-line text, and every
    other scalar with its path. ``None`` when the result holds neither a list nor a
    multi-line text (its exact form is then all there is to compare). ``names``: a listed
    item by its words only (a number written as a string, ``"count": "478"``, is a number too)."""
    units: set[str] = set()
    found = [False]
    _units(data, "", units, found, 0, names)
    return units if found[0] else None


def _units(value: Any, path: str, units: set[str], found: list, depth: int, names: bool = False) -> None:
    if len(units) >= _MAX_UNITS or depth > 6:
        return
    kind = type(value)
    if kind is dict:
        listing = depth == 0 and any(type(v) is list for v in value.values())
        for key, inner in value.items():
            if type(inner) in _NUMBERS and _TIMING.search(key):
                continue                    # how long this answer took is not what it says
            if listing and type(inner) is str and type(key) is str and _ID_KEY.search(key):
                continue                    # nor the id of the answer beside its list (a search id, a request id)
            if type(inner) is str and len(inner) <= 40 and _STAMP.fullmatch(inner.strip()):
                continue                    # nor when it was given (``query_time``, ``fetched_at``)
            _units(inner, f"{path}.{key}", units, found, depth + 1, names)
    elif kind is list:
        found[0] = True
        for item in value[:_MAX_UNITS]:
            if type(item) is dict:
                texts = sorted(_texts(item, 0, names))
                units.add(f"{path}[]" + ("\x1f".join(texts) if texts else canon_result(item)))
            elif type(item) is list:
                _units(item, path + "[]", units, found, depth + 1, names)
            else:
                units.add(f"{path}[]{_norm(item)}")
    elif kind is str and "\n" in value:
        found[0] = True
        for line in value.splitlines()[:_MAX_UNITS]:
            line = " ".join(line.split())
            if line:
                units.add(f"{path}:{line}")
    else:
        units.add(f"{path}={_norm(value)}")


_NUMBER_TEXT = re.compile(r"\s*[-+]?\d[\d,]*(?:\.\d+)?\s*%?\s*")


def _texts(item: dict, depth: int, names: bool = False) -> list[str]:
    out = []
    for key, value in item.items():
        if type(value) is str:
            if not (names and _NUMBER_TEXT.fullmatch(value)):
                out.append(f"{key}={norm_text(value)}")
        elif type(value) is dict and depth < 3:
            out += _texts(value, depth + 1, names)
    return out


def _norm(value: Any) -> str:
    return norm_text(value) if type(value) is str else repr(value)


# Error types that name a failure no wait can clear: they outweigh words in the message ("the AskQuestion tool is
# unavailable in this environment", a validation error about a field named ``timeout``).
_LASTING_TYPES = frozenset({"validation", "validation_error", "invalid", "invalid_argument", "invalid_request",
                            "invalid_params", "bad_request", "not_found", "permission", "permission_denied",
                            "forbidden", "unauthorized", "auth", "authentication", "conflict", "schema"})


def transient_failure(result: ToolResultEvent) -> bool:
    """:func:`._calls.is_transient`, unless the failure's own type says it lasts; and a
    failure typed as transient (a rate limit) that itself says to try again later clears by
    waiting, even when it calls its limit a quota (``Throttling.RateQuota``)."""
    kind = (result.error_type or "").casefold()
    if kind in _LASTING_TYPES:
        return kind == "conflict" and held_by_another(result)     # a conflict over a lock ends when it is let go
    if kind in TRANSIENT_TYPES and _LATER.search(result.error or ""):
        return True
    return is_transient(result) or held_by_another(result)


# A failure that says another holds what the call needs (a state lock, a locked row or file, HTTP 423):
# it clears when the holder lets go, not by changing the call.
_HELD = re.compile(r"\b(?:acquir\w* (?:the |a )?\w*\s?lock|lock(?:ed)? by|is locked|resource locked|lock held|"
                   r"held by another|423 locked)\b|(?:被|已被)\S{0,6}(?:锁定|占用)|获取\S{0,4}锁", re.IGNORECASE)


def held_by_another(result: ToolResultEvent) -> bool:
    """A failure that says a lock is held (``error acquiring the state lock``, ``423 Locked``):
    a wait for its holder, so a transient failure under the retry budget."""
    return not result.ok and _HELD.search(result.error or "") is not None


_LATER = re.compile(r"try again later|retry later|稍后(?:再)?重?试", re.IGNORECASE)


_RETRY_AFTER_S = re.compile(r"retry[- _]?after\W{0,3}(\d{1,6}(?:\.\d+)?)\s*(ms|s\b|sec|seconds?|m\b|min|minutes?)?",
                            re.IGNORECASE)
_DELAY_KEY = re.compile(r"backoff|delay|wait|sleep|interval|cooldown|retry_?after", re.IGNORECASE)   # Retry-After: RFC 9110's delay


def retry_after_s(result: ToolResultEvent) -> float | None:
    """The wait a failure asks for (``Retry-After: 7``, ``retry after 4s``), in seconds."""
    m = _RETRY_AFTER_S.search(result.error or "")
    if m is None:
        return None
    unit = (m.group(2) or "s").casefold()
    value = float(m.group(1))
    return value / 1000 if unit == "ms" else value * 60 if unit[:1] == "m" else value


def delay_asked(arguments: dict) -> float | None:
    """A delay the call itself sets (``backoff_s: 8``, ``delay_ms: 500``): the largest such number."""
    found = None
    for key, value in arguments.items():
        if type(value) in (int, float) and _DELAY_KEY.search(key):
            found = value if found is None else max(found, value)
    return found


def carries_idempotency_key(arguments: dict) -> bool:
    """A write sent with an idempotency key (``idempotency_key``, ``Idempotency-Key``, ``idempotencyToken``):
    the server does it once however often it arrives, so sending it again repeats nothing."""
    return any(type(k) is str and "idempoten" in k.casefold() and arguments[k] for k in arguments)


def idempotency_key(arguments: dict) -> str | None:
    """The idempotency key a write carries (its value as text), None without one."""
    for k in arguments:
        if type(k) is str and "idempoten" in k.casefold() and arguments[k]:
            return str(arguments[k])
    return None


# A yes/no question that offers or confirms an action ("Want me to check again?", "Should I send it?",
# "需要我稍后再查一次吗？"): asking it again after new results is a new offer. A question that asks for a piece
# of information ("Which calendar?", "请问您要预约哪天？") asked again after an answer asks for what was given.
_OFFER_EN = re.compile(r"\b(?:do|does|did|would|will|should|shall|can|could|may|is|are|want|wanna)\s+"
                       r"(?:you|i|we|me|it|this|that|they)\b(?!\s+(?:tell|give|provide|share|send|let)\b)",
                       re.IGNORECASE)
_OFFER_ZH = re.compile(r"吗\s*[？?]?\s*$|要不要|需不需要|是否|好不好|行不行|可不可以|对吗|确认")
_ASKS_FOR = re.compile(r"\b(?:which|what|where|when|who|whom|whose|how (?:many|much|long))\b|哪|什么|几|多少|谁|何时|请提供|"
                       r"请告诉|提供一下", re.IGNORECASE)


def asks_for_information(text: str) -> bool:
    """A question that asks the user for a piece of information, not a yes/no offer or confirmation."""
    text = text.strip()
    wh = _ASKS_FOR.search(text) if text else None
    if wh is None or _OFFER_ZH.search(text):
        return False
    offer = _OFFER_EN.search(text)
    return offer is None or offer.start() > wh.start()     # "Which calendar should I use?" asks; "Should I ...?"
                                                           # offers


_TOTAL_KEYS = frozenset({"total", "totalcount", "totalresults", "totalhits", "totalitems", "totalsize", "count_total"})


def offset_end(data: Any, arguments: dict[str, Any]) -> bool:
    """Offset paging that reached its total: the page asked for starts at or past the
    total the answer reports, or its items reach it (``startAt: 200`` + 37 issues of a
    ``total: 237``). What ``has_more`` says for an API that only gives a total."""
    if type(data) is not dict or not arguments:
        return False
    offset = None
    for key, value in arguments.items():
        if type(value) is int:
            if is_offset_key(key):
                offset = value
                break
    if offset is None:
        return False
    for level in (data, *(v for v in data.values() if type(v) is dict)):
        total, items = None, None
        for key, value in level.items():
            k = key.casefold().replace("_", "") if type(key) is str else ""
            if k in _TOTAL_KEYS and type(value) is int:
                total = value
            elif type(value) is list and items is None:
                items = len(value)
        if total is not None:
            return offset >= total or (items is not None and offset + items >= total)
    return False


_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:z|[+-]\d{2}:?\d{2})?", re.IGNORECASE)


def unwrap(data: dict) -> dict:
    """A small answer as one flat record: an envelope of one key (``{"response": {...}}``) opened, and
    one level of objects and one-item lists of objects below it read as fields by their own names
    (``{"url_list": [{"short_url": ...}], "request_id": ...}`` -> ``short_url``, ``request_id``). A flat
    answer is itself; a bigger one comes back as it was."""
    for _ in range(3):
        if len(data) != 1:
            break
        inner = next(iter(data.values()))
        if type(inner) is list and len(inner) == 1:
            inner = inner[0]
        if type(inner) is not dict or not inner:
            break
        data = inner
    flat: dict = {}
    for key, value in data.items():
        if type(value) is list and len(value) == 1 and type(value[0]) is dict:
            value = value[0]
        if type(value) is dict:
            if len(value) > 16:
                return data
            for k, v in value.items():
                if type(v) in (dict, list):
                    return data
                flat[k if k not in flat and k not in data else f"{key}.{k}"] = v
        else:
            flat[key] = value
    return flat if len(flat) <= 32 else data


def without_stamps(data: dict) -> dict:
    """A small answer without its date-time values (``created_at``, ``enqueued_at``): a new object made by
    the same call carries a new id and a new creation time, both marks of the new thing, not of another
    answer."""
    return {k: v for k, v in data.items() if not (type(v) is str and len(v) <= 40 and _STAMP.fullmatch(v.strip()))}


def cursor_resent(data: Any, arguments: dict[str, Any]) -> bool:
    """The next cursor a listing answers is the one this call sent inside an object of query parameters
    (``{"query_params": {"starting_after": "Wy0x"}}`` answered with ``{"pages": {"next": {"starting_after":
    "Wy0x"}}}``): the cursor went where the API does not read it, and the walk does not advance."""
    if type(data) is not dict:
        return False
    sent = {v2 for v in arguments.values() if type(v) is dict for k2, v2 in v.items()
            if type(v2) in (str, int) and v2 != "" and is_page_key(k2)}
    if not sent:
        return False
    for level in (data, *(v for v in data.values() if type(v) is dict)):
        for key, value in level.items():
            if type(key) is str and key.casefold().replace("_", "") in _NEXT_KEYS:
                found = value.values() if type(value) is dict else (value,)
                if any(type(v) in (str, int) and v in sent for v in found):
                    return True
    return False


def only_shape_differs(before: dict, parts: dict) -> bool:
    """Two calls whose arguments differ only in how much to return (``limit``, ``size``, ``top``,
    ``max_results``): the same question asked for more (or fewer) answers."""
    if before.keys() != parts.keys() or before == parts:
        return False
    return all(_key_kind(str(k)) == _SHAPE for k in parts if parts[k] != before[k])


_SPAN = re.compile(r'"(\d{1,9})\s*(?:-|:|\.\.|~|–)\s*(\d{1,9})"')


def _ints(text: str) -> tuple[int, ...] | None:
    """``"400"`` -> (400,), ``"[1,400]"`` -> (1, 400) (low end first), a range written as a string
    (``"10-19"``, ``"10:19"``, ``"10..19"``: a span of cells, lines or rows) -> (10, 19); anything else None."""
    if text.isdigit():
        return (int(text),)
    if text[:1] == '"':
        m = _SPAN.fullmatch(text)
        if m is None:
            return None
        a, b = int(m.group(1)), int(m.group(2))
        return (a, b) if a <= b else None
    if text[:1] == "[" and text[-1:] == "]":
        inner = text[1:-1].split(",")
        if len(inner) == 2 and all(p.strip().isdigit() for p in inner):
            a, b = int(inner[0]), int(inner[1])
            return (a, b) if a <= b else (b, a)     # the compare form sorts a list: a range is its two ends
    return None


def walks_on(before: dict, parts: dict) -> bool:
    """Two calls of one read whose only changed arguments are positions that moved on to
    where the last call ended: a range ``[1, 400]`` then ``[401, 800]``, a start and an end
    line each moved past the old end, an offset moved on by the call's own limit. Each
    step reads a part not read before (a file read in chunks), whatever its answer's
    summary says. The same window again, or a jump back, is not a walk."""
    if before.keys() != parts.keys():
        return False
    old: list[int] = []
    new: list[int] = []
    same: list[int] = []
    for key, value in parts.items():
        was = before[key]
        if was == value:
            n = _ints(value)
            if n is not None and len(n) == 1:
                same.append(n[0])
            continue
        a, b = _ints(was), _ints(value)
        if a is None or b is None or len(a) != len(b):
            return False
        if len(a) == 2:
            if not (a[0] <= a[1] and b[0] in (a[1], a[1] + 1) and b[1] >= b[0]):
                return False
            continue
        old.append(a[0])
        new.append(b[0])
    if not old:
        return len(parts) > 0 and any(before[k] != parts[k] for k in parts)
    if len(old) == 2:                       # a start and an end: the new start is where the old end was
        return min(new) in (max(old), max(old) + 1) and max(new) > max(old)
    if len(old) == 1:                       # an offset moved on by the limit the call keeps asking for
        return new[0] - old[0] in same and new[0] > old[0]
    return False


_PAGE_SIZE_KEYS = frozenset({"pagesize", "limit", "perpage", "maxresults", "size", "pagelimit", "top", "first",
                             "count", "rows", "num"})


_SIZE_KEY: dict[str, bool] = {}     # argument name -> names a page size (read once per name)


def asks_page_size(arguments: dict[str, Any]) -> bool:
    """The call names a page size (``pageSize``, ``limit``, ``per_page``, ``maxResults``)."""
    return any(type(k) is str and k.casefold().replace("_", "").replace("-", "") in _PAGE_SIZE_KEYS
               for k in arguments)


def short_page(data: Any, arguments: dict[str, Any]) -> bool:
    """A page with fewer items than the page size the call asked for (``pageSize: 30``, 9 hits):
    the listing has no more, whatever a ``has_more`` flag on it says."""
    if type(data) is not dict or not arguments:
        return False
    size = None
    for key in arguments:
        known = _SIZE_KEY.get(key)
        if known is None:
            known = type(key) is str and key.casefold().replace("_", "").replace("-", "") in _PAGE_SIZE_KEYS
            if len(_SIZE_KEY) < 4096:
                _SIZE_KEY[key] = known
        if known:
            value = arguments[key]
            if type(value) is int and value > 1:
                size = value
                break
    if size is None:
        return False
    for level in (data, *(v for v in data.values() if type(v) is dict)):
        lists = [v for v in level.values() if type(v) is list]
        if len(lists) == 1:
            return 0 < len(lists[0]) < size
    return False
