"""What one tool call and its result tell the loop guard, computed once per call.

The loop guard's hot path runs on every tool call, so everything it needs from
a call is derived here in one pass and kept as a few strings and flags:

* the **signature**: tool + canonical arguments (sorted keys, whitespace
  collapsed, case folded, volatile fields such as ``request_id`` dropped);
* the **target**: the arguments that name a resource (ids, paths, URLs, page
  numbers, cursors, e-mail addresses, numbers) as opposed to free text (a
  query, a message body). Two calls of one tool with different targets work
  on different things; two calls that differ only in free text are a
  rewording;
* the **tool kind**: side-effecting ("action") tools, from the tool spec when
  the run has one, else from the verb in the tool's name;
* the **result**: a short stable hash, whether it is empty, whether it is a
  *pending* status (polling), whether an error is transient (5xx, timeout,
  rate limit) and the error's signature (type + text) for outage grouping.
"""

from __future__ import annotations

import hashlib
import json
import reprlib
import re
import unicodedata
from typing import Any

from ..events import ToolResultEvent

# Argument names that hold free text: a difference there is a rewording.
QUERY_KEYS = frozenset({
    "q", "query", "queries", "keyword", "keywords", "search", "search_query", "search_term", "term", "terms",
    "text", "prompt", "question", "message", "body", "content", "description", "title", "subject", "comment",
    "note", "instructions", "input", "topic", "phrase", "pattern", "regex",
})
# Argument names that name a resource: a difference there is another target.
_TARGET_KEY = re.compile(
    r"(?:^|_)(?:id|ids|uuid|key|path|paths|file|files|filename|dir|directory|folder|url|urls|uri|link|page|"
    r"pages|page_token|offset|cursor|start|after|before|since|until|index|idx|row|line|sku|email|emails|to|cc|"
    r"recipient|recipients|target|dest|destination|src|source|from|number|no|num|ticket|issue|pr|order|user|"
    r"account|customer|repo|branch|commit|ref|sha|handle|slug|date|day|month|year|region|zone|host|channel|"
    r"hosts|scope|selector|instance|instances|node|nodes|cluster|namespace|pod|device|server)$")
_ID_CHARS = re.compile(r"[0-9/\\@.:#_-]")
# Argument names that size or shape an answer (how many, how big): never a resource named.
_SHAPE_KEY = re.compile(r"^(?:limit|per_?page|page_?size|size|max_?results|max_?items|top|count|max|num_?results|k|n|"
                        r"max_?tokens|timeout|depth|verbose)$", re.I)

# Verbs in a tool name that mark a side-effecting tool (when no spec says so).
ACTION_VERBS = frozenset({
    "add", "apply", "approve", "archive", "assign", "book", "cancel", "close", "comment", "copy", "create", "delete",
    "deploy", "disable", "edit", "enable", "forward", "insert", "invite", "label", "like", "mark", "merge", "modify",
    "move", "mute", "notify", "order", "patch", "pay", "post", "publish", "put", "refund", "register", "reject",
    "remove", "rename", "reply", "resolve", "restart", "save", "schedule", "send", "set", "star", "store", "submit",
    "subscribe", "tag", "transfer", "unsubscribe", "update", "upload", "upsert", "write", "replace", "append",
    "overwrite", "commit", "push", "enqueue", "dispatch", "trigger", "charge", "purchase", "buy", "reserve", "make",
    "respond", "say", "speak", "announce",  # said to a person (a voice agent speaking the same sentence again)
})
# Verbs that bring a new object into being: two of them with the same content are two copies.
CREATE_VERBS = frozenset({"create", "new", "add", "insert", "make", "register", "post", "publish", "submit", "book",
                          "schedule", "upload"})
# Verbs that, first in a tool's name, mark a read whatever follows (``query_order``).
# Write verbs that are as often nouns (the order, a post, a booking, a tag): in a name that also has a
# read verb (``order.lookup``, ``post_search``, ``tag_list``) they name the thing read.
_NOUN_VERBS = frozenset({"order", "post", "book", "comment", "label", "tag", "mark", "star", "like", "schedule",
                         "store", "copy", "set", "patch", "transfer", "reply", "charge", "invite", "archive",
                         "register", "payment", "upload", "commit", "push", "label"})
READ_VERBS = frozenset({
    "get", "list", "query", "search", "fetch", "read", "find", "lookup", "look", "check", "describe", "show", "view",
    "count", "browse", "inspect", "retrieve", "poll", "watch", "scan", "preview", "export", "download", "load",
})
_NAME_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

# Status values that mean "not finished yet": a poll whose answer is one of these
# is waiting, not looping (OpenClaw's knownPollNoProgress gets its own, higher limits).
PENDING = frozenset({
    "pending", "queued", "running", "in_progress", "in progress", "inprogress", "processing", "started", "starting",
    "waiting", "building", "deploying", "provisioning", "creating", "scheduled", "accepted", "submitted", "active",
    "initializing", "working", "not_ready", "not ready", "处理中", "排队中", "进行中", "运行中", "等待中", "部署中",
    # the same words in their other spellings and a few more of a job or a call under way
    "in-progress", "not-ready", "in-flight", "inflight", "ringing", "dialing", "executing", "preparing",
    "validating", "verifying", "uploading", "downloading", "transcoding", "rendering", "restoring", "migrating",
    "执行中", "生成中", "上传中", "审核中", "验证中", "准备中",
})
# Words of an acknowledgement ({"status": "sent"}, {"msg": "success"}).
ACK_WORDS = frozenset({
    "ok", "okay", "success", "succeeded", "successful", "done", "sent", "queued", "accepted", "submitted", "delivered",
    "moved", "deleted", "created", "updated", "archived", "saved", "applied", "added", "removed", "completed",
    "scheduled", "posted", "tagged", "labelled", "labeled", "true", "成功", "已提交", "完成", "已完成", "已发送", "已删除",
})
# Paging arguments (names compared case folded, without _ and -): a listing walked page by page.
PAGE_KEYS = frozenset({
    "page", "pageno", "pagenum", "pagenumber", "pageindex", "pageidx", "offset", "skip", "start", "startindex",
    "startat", "cursor", "pagetoken", "nextpagetoken", "nexttoken", "continuationtoken", "continuation", "marker",
    "after", "startingafter", "startcursor", "pagecursor", "from",
    "before", "endingbefore",               # the cursor that walks back (older messages before this id)
})
_PAGE_KEY: dict[str, bool] = {}
# Result fields that say whether a listing goes on.
_MORE_FLAGS = frozenset({"hasmore", "hasnext", "hasnextpage", "hasmorepages", "more", "moreresults", "truncated",
                         "istruncated", "hasmoreresults"})
_LAST_FLAGS = frozenset({"islast", "lastpage", "islastpage", "done", "end", "eof", "exhausted", "atbottom", "atend",
                         "reachedend", "reachedbottom", "attop"})
_NEXT_KEYS = frozenset({"next", "nextcursor", "nextpage", "nextpagetoken", "nexttoken", "nextoffset", "nexturl",
                        "nextlink", "continuationtoken", "nextmarker", "cursornext", "nextstart"})
_STATUS_KEYS = ("status", "state", "phase", "job_status", "stage", "状态", "狀態", "状態", "estado", "statut")
# boolean flags that say "not finished yet" when they hold this value
_PENDING_FLAGS = {"running": True, "pending": True, "in_progress": True, "busy": True,
                  "done": False, "finished": False, "completed": False, "complete": False, "ready": False}
# tools whose whole job is to let time pass between polls
WAIT_VERBS = frozenset({"sleep", "wait", "pause", "delay", "backoff"})

_TRANSIENT = re.compile(
    r"\b(?:5\d\d|429)\b|time[d ]?\s?out|timeout|temporar|unavailable|rate.?limit|too many requests|try again|"
    r"overloaded|connection (?:reset|refused|error)|econnreset|econnrefused|gateway|throttl|超时|稍后|繁忙|不可用|限流", re.I)
# Limits that do not clear by waiting a few seconds, even when sent as a 429.
_NOT_TRANSIENT = re.compile(
    r"(?<!非)(?<!not )(?<!not a )(?<!non-)(?:quota|insufficient|billing|credit|exceeded your current|daily (?:usage )?limit|monthly (?:usage )?limit|"
    r"per day|plan limit|额度|配额|余额)|is not connected|not connected to|未连接", re.I)
TRANSIENT_TYPES = frozenset({"timeout", "rate_limit", "rate_limited", "unavailable", "transient", "server_error",
                             "http_5xx", "overloaded", "connection_error", "throttled"})


# Punctuation that NFKC leaves alone, folded to its ASCII twin; in free text every
# punctuation mark becomes a space ("rotate signing key?" == "rotate signing key").
_PUNCT = str.maketrans({"。": ".", "、": ",", "“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'",
                        "【": "[", "】": "]", "《": "<", "》": ">", "「": '"', "」": '"', "『": '"', "』": '"',
                        "〈": "<", "〉": ">", "—": "-", "–": "-", "‐": "-", "‑": "-", "·": ".", "・": ".",
                        "\u3000": " ", "\u00a0": " "})
_MAX_NODES = 4000                   # values canonicalised per call or result; beyond, the rest is hashed as is
_MAX_DEPTH = 32                     # nesting canonicalised in arguments; deeper is kept in a bounded repr
_SAFE_REPR = reprlib.Repr()         # bounded and recursion-safe, for what cannot be canonicalised
_SAFE_REPR.maxlevel, _SAFE_REPR.maxstring, _SAFE_REPR.maxother = 8, 2000, 200


def norm_text(value: str, free: bool = False, edges: bool = False) -> str:
    """Compare form of a string: NFKC (full width, compatibility forms), CJK and
    typographic punctuation folded to ASCII, quote style folded, case folded,
    whitespace collapsed; in free text (``free``) punctuation is dropped too, and
    spaces next to CJK characters; with ``edges`` (a value that names no
    resource), punctuation and quotes at its two ends."""
    if free:
        # every punctuation mark becomes a space, whatever it would be folded to first (quotes too), in
        # one pass (casefold never makes or unmakes a punctuation mark: folding after it is the same)
        if value.isascii():
            value = _FREE_RE.sub(" ", value.lower())
        else:
            if not unicodedata.is_normalized("NFKC", value):
                value = unicodedata.normalize("NFKC", value)
            value = _FREE_ALL_RE.sub(" ", value.casefold())
    else:
        if value.isascii():
            value = value.lower()
        else:
            if not unicodedata.is_normalized("NFKC", value):
                value = unicodedata.normalize("NFKC", value)
            if _PUNCT_RE.search(value):
                value = value.translate(_PUNCT)
            value = value.casefold()
        if "'" in value or "`" in value:
            value = value.replace("'", '"').replace("`", '"')
        if edges and value and (value[0] in _EDGE or value[-1] in _EDGE):
            value = value.strip(_EDGE)      # "香港。" / " 香港" / "「退款」": the same value
    words = value.split()
    if free and len(words) > 1 and not value.isascii():
        # "退款 流程" == "退款流程": CJK text has no word spaces (a space stays between two Latin words)
        out = words[0]
        for w in words[1:]:
            a, b = out[-1], w[0]
            out += w if "\u3040" <= a <= "\u9fff" or "\uac00" <= a <= "\ud7af" or "\u3040" <= b <= "\u9fff" \
                or "\uac00" <= b <= "\ud7af" else " " + w
        return out
    return " ".join(words)


# Sentence punctuation, quotes and brackets at the edges of a value (after folding):
# never part of what the value names (a path ends in a letter, "C++" keeps its "+").
_EDGE = " .,;:!?\"'()[]<>{}"

_PUNCT_RE = re.compile("[" + "".join(re.escape(chr(c)) for c in _PUNCT) + "]")
_FREE_RE = re.compile(r"[!-/:-@\[-`{-~]")
_FREE_ALL_RE = re.compile(r"[!-/:-@\[-`{-~" + "".join(re.escape(chr(c)) for c in _PUNCT) + "]")   # both


def canon(value: Any, ignore: frozenset[str] = frozenset(), free: bool = False) -> str:
    """A canonical text of a JSON value for equality: keys sorted at every depth,
    ``None`` and empty-string fields dropped, lists compared as sets of their
    elements (sorted), strings in :func:`norm_text` form, 1.0 == 1. Bounded: past
    ``_MAX_NODES`` values the rest is kept as its repr."""
    budget = [_MAX_NODES]
    return _canon(value, ignore, free, budget, 0)


def _canon(value: Any, ignore: frozenset[str], free: bool, budget: list, depth: int) -> str:
    budget[0] -= 1
    if isinstance(value, str):
        return '"' + norm_text(value, free) + '"'
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    if isinstance(value, float):
        return repr(int(value)) if value.is_integer() else repr(value)
    if budget[0] <= 0 or depth > _MAX_DEPTH:
        return _SAFE_REPR.repr(value)
    if isinstance(value, dict):
        parts = []
        for k in sorted(value, key=str):
            v = value[k]
            if k in ignore or v is None or v == "":
                continue
            parts.append(f"{k}:{_canon(v, ignore, free or _key_kind(str(k)) == _QUERY, budget, depth + 1)}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(sorted(_canon(v, ignore, free, budget, depth + 1) for v in value)) + "]"
    return _SAFE_REPR.repr(value)


_DUMPS = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode


def canon_result(data: Any) -> str:
    """The compare form of a tool's data, built for speed (it runs on every
    result): keys sorted at every depth, lists of two or more items sorted at
    every depth (a set of results in another order is the same set), then NFKC,
    CJK punctuation and case folded and whitespace collapsed over the whole text."""
    kind = type(data)
    text = None
    if kind is dict and len(data) <= 16:
        # the common small flat answer: repr(sorted(data.items())) when every key is a string and every
        # value a scalar or a list of at most one, built piece by piece (several times cheaper than
        # repr() of the tuples; written out here, not called, since it runs on every result)
        try:
            if len(data) == 2:
                a, b = data
                keys = (b, a) if b < a else (a, b)      # sorted() of two, without its set-up
            else:
                keys = sorted(data)
        except TypeError:
            keys = None                     # keys of several types: not all strings
        if keys is not None:
            scalars, heads, parts = _SCALARS, _KEY_HEADS, []
            for k in keys:
                if type(k) is not str:
                    break
                head = heads.get(k)
                if head is None:
                    head = f"({k!r}, "
                    if len(heads) < 4096:
                        heads[k] = head
                v = data[k]
                t = type(v)
                if t is int and 0 <= v < 1024:
                    parts.append(head + _INT_TEXT[v] + ")")
                elif t in scalars:
                    parts.append(head + repr(v) + ")")
                elif t is list and len(v) < 2:
                    if not v:
                        parts.append(head + "[])")
                    elif type(v[0]) in scalars:
                        parts.append(f"{head}[{v[0]!r}])")
                    else:
                        break
                else:
                    break
            else:
                text = "[" + ", ".join(parts) + "]"
    spaced = True                           # only single spaces between words in ASCII (no collapsing needed)
    if text is not None:
        pass
    elif kind is dict or kind is list:
        try:
            text = _DUMPS(_lists_sorted(data, [_MAX_NODES]) if _has_list(data) else data)
        except (TypeError, ValueError, RecursionError):
            text, spaced = _SAFE_REPR.repr(data), False
    else:
        text, spaced = data if kind is str else _SAFE_REPR.repr(data), False
    if not text.isascii():
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
        if _PUNCT_RE.search(text):
            text = text.translate(_PUNCT)
        return " ".join(text.casefold().split())
    if spaced and "  " not in text:
        # repr() and JSON escape every ASCII whitespace but the space, and open and close with a bracket:
        # collapsing whitespace would change nothing
        return text.lower()
    return " ".join(text.lower().split())


_KEY_HEADS: dict[str, str] = {}     # key -> "('key', ": the start of its item in canon_result's flat form


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _flat(data: dict) -> bool:
    """Values all scalars or lists of at most one scalar (nothing to sort), keys all strings."""
    scalars = _SCALARS
    for k, v in data.items():
        t = type(v)
        if (t not in scalars and not (t is list and len(v) < 2 and (not v or type(v[0]) in scalars))) \
                or type(k) is not str:
            return False
    return True


def flat_answer(data: dict) -> bool:
    """String keys and JSON scalar values only (at most one-item lists of them)."""
    return _flat(data)


def _has_list(value: Any) -> bool:
    """Whether sorting would change anything: a list of two or more items somewhere
    (the JSON text tells without a walk in Python)."""
    if type(value) is list:
        return len(value) > 1 or (bool(value) and type(value[0]) in _CONTAINERS)
    return any(type(v) is list or type(v) is dict for v in value.values())


def _lists_sorted(value: Any, budget: list) -> Any:
    """``value`` with every list of two or more items sorted; untouched parts are
    returned as they are (no copy)."""
    budget[0] -= 1
    if budget[0] <= 0:
        return value                        # past the budget the rest is compared as it comes
    kind = type(value)
    if kind is dict:
        out = None
        for k, v in value.items():
            if type(v) in _CONTAINERS:
                w = _lists_sorted(v, budget)
                if w is not v:
                    if out is None:
                        out = dict(value)
                    out[k] = w
        return value if out is None else out
    if kind is list:
        if len(value) < 2:
            if value and type(value[0]) in _CONTAINERS:
                w = _lists_sorted(value[0], budget)
                return value if w is value[0] else [w]
            return value
        return sorted([_lists_sorted(v, budget) if type(v) in _CONTAINERS else v for v in value], key=_sort_key)
    return value


_CONTAINERS = (dict, list)


def _sort_key(value: Any) -> str:
    if isinstance(value, str):
        return "s" + value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


_KEY_KIND: dict[str, int] = {}     # argument name -> 0 free text, 1 target, 2 decided by the value
_RETRY_KEY = re.compile(r"retr(?:y|ies)|attempt|backoff", re.I)
_QUERY, _TARGET, _BY_VALUE, _SHAPE, _RETRY = 0, 1, 2, 3, 4     # _RETRY: a retry counter or backoff, dropped


def _key_kind(key: str) -> int:
    kind = _KEY_KIND.get(key)
    if kind is None:
        k = key.casefold()
        kind = (_QUERY if k in QUERY_KEYS else _RETRY if _RETRY_KEY.search(k) else _SHAPE if _SHAPE_KEY.match(k)
                else _TARGET if _TARGET_KEY.search(k) else _BY_VALUE)
        if len(_KEY_KIND) < 4096:
            _KEY_KIND[key] = kind
    return kind


def _is_target(key: str, value: Any) -> bool:
    kind = _key_kind(key)
    if kind != _BY_VALUE:
        return kind == _TARGET
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, str):
        return 0 < len(value) <= 128 and " " not in value and bool(_ID_CHARS.search(value))
    return False


def names_resource(key: str) -> bool:
    """An argument whose name says it names a resource (``path``, ``start_line``, ``page``)."""
    return _key_kind(key) == _TARGET


def is_page_key(key: str) -> bool:
    kind = _PAGE_KEY.get(key)
    if kind is None:
        kind = key.casefold().replace("_", "").replace("-", "") in PAGE_KEYS
        if len(_PAGE_KEY) < 4096:
            _PAGE_KEY[key] = kind
    return kind


_OFFSET_KEYS = frozenset({"offset", "skip", "start", "startat", "startindex", "from", "startrow"})
_OFFSET_KEY: dict[Any, bool] = {}


def is_offset_key(key: Any) -> bool:
    """An argument name that says where a page starts (``offset``, ``startAt``, ``skip``)."""
    known = _OFFSET_KEY.get(key)
    if known is None:
        known = type(key) is str and key.casefold().replace("_", "").replace("-", "") in _OFFSET_KEYS
        if len(_OFFSET_KEY) < 4096:
            _OFFSET_KEY[key] = known
    return known


# argument name -> (_key_kind, is_page_key, is_offset_key), all read in one look
_INT_TEXT = tuple(str(i) for i in range(1024))     # repr() of the small whole numbers (pages, limits, counts)
_ARG_KEY: dict[str, tuple[int, bool, int]] = {}
_ORDER_KEYS = frozenset({"sort", "sortby", "sortorder", "sortfield", "sortkey", "sortdir", "sortdirection",
                         "orderby", "ordering", "direction"})     # ("order" alone is as often an order's id)


def is_order_key(key: Any) -> bool:
    """An argument name that says in which order to list (``sort``, ``orderBy``, ``sort_direction``)."""
    return type(key) is str and key.casefold().replace("_", "").replace("-", "") in _ORDER_KEYS


def describe_call(tool: str, arguments: dict[str, Any], ignore: frozenset[str]) -> tuple[str, str, str, dict, int]:
    """(signature, target, series, parts, offset) of a call, in one pass over the sorted arguments.

    * signature: ``tool:key=value,...`` with every value in :func:`canon` form
      (keys sorted at every depth, lists as sets, Unicode and punctuation
      folded; free-text arguments without punctuation); ``None`` and empty
      arguments are the same as absent ones;
    * target: the same for the resource-naming arguments only, empty when the
      call names none (a pure query);
    * series: the signature without its paging arguments (page, offset,
      cursor, ...): the calls that walk one listing;
    * parts: argument name -> canonical value, to tell which arguments two calls differ in;
    * offset: bit 1, a whole-number argument named as an offset (ignored or not), the only
      calls whose answer :func:`._evidence.offset_end` has to read; bit 2, an argument that names
      an order (``sort``, ``orderBy``), the only calls whose answer is compared with the tool's
      last one as a set.

    The first four are keys for equality, never parsed back."""
    parts: dict[str, str] = {}
    sig: list[str] = []
    targets: list[str] = []
    series: list[str] = []
    paged, offset = False, 0
    n = len(arguments)
    if n == 2:
        a, b = arguments
        keys = (b, a) if b < a else (a, b)      # sorted() of two, without its set-up (the common call)
    else:
        keys = sorted(arguments) if n > 2 else arguments
    for key in keys:
        value = arguments[key]
        known = _ARG_KEY.get(key)
        if known is None:
            known = (_key_kind(key), is_page_key(key), 1 if is_offset_key(key) else 2 if is_order_key(key) else 0)
            if len(_ARG_KEY) < 4096:
                _ARG_KEY[key] = known
        kind, page, at = known
        kind_of = type(value)
        walk = None
        if at and (kind_of is int or at == 2):
            offset |= at                    # read before the skips below: offset_end reads every argument
            if at == 2:
                kind = _SHAPE               # an order names no resource (sort: "-name")
        if kind == _RETRY or (ignore and key in ignore):
            continue                        # a retry counter or backoff delay: the same call
        if kind_of is int:                  # the common number first (bool is not int here)
            text = _INT_TEXT[value] if 0 <= value < 1024 else repr(value)
            target = kind == _TARGET or kind == _BY_VALUE
        elif isinstance(value, str):
            if not value:
                continue
            if kind == _QUERY:              # free text names no resource
                target = False
            else:
                target = kind == _TARGET or (kind == _BY_VALUE and len(value) <= 128 and " " not in value
                                             and _ID_CHARS.search(value) is not None)
                if target and ("/" in value or "\\" in value) and "://" not in value:
                    value = _norm_path(value)
                elif target and "?" in value and "://" in value:
                    walk = _url_without_pages(value)     # a page asked for in the URL's query ($skip=100)
                elif kind == _TARGET and len(value) <= 64 and _ID_SEPARATORS.search(value):
                    # an identifier written with spaces or dashes ("DD2026113 0008", "DD-20261130008",
                    # "555-123 4567") names the same thing as without them
                    bare = _ID_SEPARATORS.sub("", value if value.isascii() else unicodedata.normalize("NFKC", value))
                    if bare.isalnum() and 2 * sum(c.isdigit() for c in bare) >= len(bare):   # a number, not a name
                        value = bare
            first = value[0]
            if first in "{[" or (first.isspace() and value.lstrip()[:1] in ("{", "[")):
                doc = _json_text(value)
                text = canon(doc, ignore) if doc is not None else '"' + norm_text(value, kind == _QUERY) + '"'
            else:
                text = '"' + norm_text(value, kind == _QUERY, not target) + '"'
        elif value is None:
            continue
        elif isinstance(value, bool):
            text, target = repr(value), kind == _TARGET
        elif isinstance(value, int):
            text, target = repr(value), kind == _TARGET or kind == _BY_VALUE
        else:
            text = canon(value, ignore, kind == _QUERY)
            target = _is_target(key, value)
        part = f"{key}={text}"
        parts[key] = text
        sig.append(part)
        if target:
            targets.append(part)
        if page:
            paged = True
        elif walk is not None:
            paged = True
            series.append(f'{key}="{norm_text(walk, False, False)}"')
        elif kind_of is dict and any(type(k) is str and is_page_key(k) for k in value):
            # the page inside an object of query parameters ({"params": {"page": 13}})
            paged = True
            series.append(f"{key}=" + canon({k: v for k, v in value.items() if not is_page_key(str(k))}, ignore))
        else:
            series.append(part)
    head = tool + ":"
    signature = head + ",".join(sig)
    return signature, ",".join(targets), (head + ",".join(series)) if paged else signature, parts, offset


def _url_without_pages(url: str) -> str | None:
    """A URL whose query names a page (``$skip=100``, ``page=3``, ``cursor=...``) without those
    parameters: the listing it walks. None when its query names no page."""
    base, _, query = url[:2048].partition("?")
    params = query.split("&")
    keep = [p for p in params if not is_page_key(p.partition("=")[0].lstrip("$"))]
    return None if len(keep) == len(params) else base + "?" + "&".join(keep)


_SLASHES = re.compile(r"/{2,}")

_ID_SEPARATORS = re.compile(r"[\s\-\u2010-\u2015\uff0d()\uff08\uff09]+")


def _norm_path(value: str) -> str:
    """One spelling of a relative or absolute path: ``src\\config\\api.ts``,
    ``./src/config//api.ts`` and ``src/config/api.ts`` are one file; ``src/``,
    ``src/.`` and ``./src`` one folder."""
    v = _SLASHES.sub("/", value.replace("\\", "/"))
    while v.startswith("./"):
        v = v[2:]
    v = v.replace("/./", "/")
    while v.endswith("/.") and len(v) > 2:
        v = v[:-2]
    if len(v) > 1 and v.endswith("/"):
        v = v[:-1]
    return v or value


def _json_text(value: str) -> Any:
    """A JSON object or array passed as a string (a filter, a payload): its value,
    so formatting does not matter; None for any other string."""
    head = value.lstrip()[:1]
    if head not in ("{", "[") or len(value) > 20_000:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def canonical_call(tool: str, arguments: dict[str, Any], ignore: frozenset[str] = frozenset()) -> str:
    return describe_call(tool, arguments, ignore)[0]


# the last word of a name that reads how some work stands (with a read verb before it: ``check_job_status``)
_STATE_NOUNS = frozenset({"status", "state", "progress", "result", "results"})


def _verb_tokens(tool: str) -> list[str]:
    """The words of a tool's name that may hold its verb: all of them, but a namespace before the first
    dot (an MCP server, a product: ``make.``, ``coze.``) when words follow it."""
    head, dot, rest = tool.partition(".")
    tokens = [t.casefold() for t in _NAME_TOKEN.findall(rest)] if dot else []
    return tokens or [t.casefold() for t in _NAME_TOKEN.findall(tool)]


def is_action_name(tool: str) -> bool:
    """A side-effecting tool by its name: the first verb in it (after a vendor
    prefix: ``weibo_get_post_detail`` reads, ``crm_tag_customer`` writes) is a
    write verb. A namespace before a dot names a server or a product, never the act
    (``make.blueprint_validate``: Make's validator; ``make_report`` makes one)."""
    tokens = _verb_tokens(tool)
    if tokens and tokens[-1] in _STATE_NOUNS and any(t in READ_VERBS for t in tokens):
        return False                        # a read of a state is named for it (``save_url_check_job_status``)
    for t in tokens:
        if t in READ_VERBS:
            return False
        if t in ACTION_VERBS:
            # a word that is as often the thing as the act (``order.lookup``, ``post_search``) is not
            # the verb when a read verb follows it
            return t not in _NOUN_VERBS or not any(u in READ_VERBS for u in tokens)
    return False


def is_read_name(tool: str) -> bool:
    """A read by its name: the first verb in it is a read verb (``read_file``, ``get_status``)."""
    tokens = _verb_tokens(tool)
    for t in tokens:
        if t in READ_VERBS:
            return True
        if t in ACTION_VERBS and (t not in _NOUN_VERBS or not any(u in READ_VERBS for u in tokens)):
            return False
    return False


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# What varies between two attempts that failed the same way: durations ("retry after
# 2 s" / "4 s"), long numbers and hex runs (request ids, timestamps, ports, pids).
# Short numbers stay: "line 23" / "line 58" is another error (the last one was fixed).
_VOLATILE_NUMBER = re.compile(
    r"\d+(?:[.,]\d+)*\s*(?:ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|秒|分钟)\b|"
    r"\b(?=[0-9a-f-]*\d)[0-9a-f]{6,}(?:-[0-9a-f]+)*\b|\d{5,}|\d+(?:[.,]\d+)+|"
    r"\b\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\b")          # a clock time: when it failed, not what


def mask_error(result: ToolResultEvent, arguments: dict[str, Any] | None = None) -> str:
    """An error's text with what varies between attempts masked: durations,
    long numbers and hex runs (retry after 2 s / 4 s, request ids, timestamps),
    the call's own argument values (``ENOENT ... open 'a.yaml'`` / ``'b.yaml'``)
    and the tool's name. Two errors with the same mask are the same error;
    another mask is another error (a validation error fixed, the next one
    reported: ``line 23`` then ``line 58``)."""
    text = result.error or ""
    if result.tool:
        text = text.replace(result.tool, "<tool>")
    if arguments:
        for value in arguments.values():
            if isinstance(value, str) and len(value) >= 3:
                text = text.replace(value, "<arg>")
    return f"{result.error_type or 'error'}|{_VOLATILE_NUMBER.sub('#', norm_text(text))[:200]}"


def result_hash(result: ToolResultEvent, arguments: dict[str, Any] | None = None) -> str:
    """A short stable key for "the same result": the canonical data (key order,
    list order, Unicode form do not matter) or the masked error, hashed when
    longer than 40 characters."""
    ok = result.ok
    text = canon_result(result.data) if ok else "!" + mask_error(result, arguments)
    return text if len(text) <= 40 else ("" if ok else "!") + _digest(text)


def is_wait_name(tool: str) -> bool:
    return any(t.casefold() in WAIT_VERBS for t in _NAME_TOKEN.findall(tool))


# a shell command that lets time pass before (or instead of) its work: ``sleep 30``,
# ``sleep 90 && gh run view``, ``Start-Sleep -s 5; ...``, ``time.sleep(2)``
_SLEEP_CMD = re.compile(r"(?:^|[;&|(\n]\s*|\btime\.)(?:sleep|start-sleep)\b[\s(]*(?:-\w+\s+)?\d", re.I)


def waits_in(arguments: dict) -> bool:
    """A call whose command waits first (a shell tool used as a sleep tool): what
    follows it is a poll, not a repeat."""
    for value in arguments.values():
        if type(value) is str and "leep" in value and len(value) <= 2000 and _SLEEP_CMD.search(value):
            return True
    return False


_POLL_KEYS = frozenset(_STATUS_KEYS) | frozenset(_PENDING_FLAGS)


def is_pending(data: Any) -> bool:
    """A status that says the work is not finished yet (polling, not looping): a status field
    or a flag saying so (the forms :func:`pending_form` adds are read only on a repeat)."""
    if isinstance(data, dict):
        if _POLL_KEYS.isdisjoint(data):
            return False                    # no status or flag field (the common answer)
        for key in data:
            if key in _POLL_KEYS:
                value = data[key]
                if isinstance(value, str):
                    if key in _STATUS_KEYS and value.strip().casefold() in PENDING:
                        return True
                elif type(value) is int and value == 202 and key == "status":
                    return True             # HTTP 202 Accepted: not finished
                elif key in _PENDING_FLAGS and value is _PENDING_FLAGS[key]:
                    return True
        return False
    return isinstance(data, str) and data.strip().casefold() in PENDING


def pending_form(data: Any) -> bool:
    """Pending in other forms, read when a call repeats (a poll is a repeat): a field named for a
    status (``task_status``, ``jobState``), an HTTP 202 (Accepted: "processing has not been
    completed", RFC 9110), a short answer (three fields at most) whose only word is a pending one
    (``{".tag": "in_progress"}``)."""
    if type(data) is not dict or len(data) > 6 or not all(type(data[k]) is int for k in _POLL_KEYS.intersection(data)):
        return False                        # a record with a status-like field somewhere is not a status answer
                                            # (unless that status is a number: {"job_status": 2, "msg": "processing"}
                                            # says in words what the code means)
    for key, value in data.items():
        kind = type(value)
        if kind is str:
            if len(value) <= 24 and value.strip().casefold() in PENDING:
                folded = value.strip().casefold()
                if _status_named(key) or (len(data) <= 3 and folded not in ACK_WORDS):
                    return True
        elif kind is int and value == 202 and key in _HTTP_STATUS_KEYS:
            return True                     # HTTP 202 Accepted: not finished
    return False


def accepted_job(data: dict, arguments: dict) -> bool:
    """An HTTP 202 (Accepted) that names a job of its own (``{"http_status": 202, "job_id": "j_40a1"}``):
    the call started work, a side effect, whatever its tool is named. A poll of a job answers 202
    without an id, or under the id the call sent (that is no new job)."""
    if not any(data.get(k) == 202 for k in _HTTP_STATUS_KEYS):
        return False
    sent = json.dumps(arguments, ensure_ascii=False, default=str)
    return any(_names_new_job(v, sent) if type(v) is dict and len(v) <= 16 else
               (type(v) is str and v and (_ID_KEY.search(k) or _MONITOR_KEY.search(k)) and v not in sent)
               for k, v in data.items() if type(k) is str)


# Where a 202 points to the status of the work it accepted (RFC 9110: "point to ... a status monitor"): a Location
# header, Azure's Operation-Location / Azure-AsyncOperation, or an operation object's name.
_MONITOR_KEY = re.compile(r"(?:^|[-_])(?:location|asyncoperation)$", re.I)


def _names_new_job(data: dict, sent: str) -> bool:
    """One object down (``{"headers": {"Location": ".../runs/08585"}}``, ``{"operation": {"name":
    "operations/export-19b5"}}``): an id or a status monitor the call did not send."""
    return any(type(v) is str and v and (_ID_KEY.search(k) or _MONITOR_KEY.search(k) or k == "name")
               and v not in sent for k, v in data.items() if type(k) is str)


_STATUS_SUFFIX = re.compile(r"(?:status|state|phase|stage)$", re.I)
_HTTP_STATUS_KEYS = frozenset({"status", "status_code", "statusCode", "code", "http_status"})


def _status_named(key: str) -> bool:
    """A field named for a status (``task_status``, ``jobState``, ``build_phase``)."""
    return bool(_STATUS_SUFFIX.search(key))


def is_ack(data: Any) -> bool:
    """A bare acknowledgement (``{"moved": true}``, ``{"code": 0, "msg":
    "success"}``, ``"ok"``): says the call was done, carries no data to
    compare. Short scalar output that says nothing of the kind
    (``{"stdout": "noop"}``) is data, not an acknowledgement."""
    if data is True:
        return True
    if isinstance(data, str):
        return norm_text(data).strip(" .!") in ACK_WORDS
    if not isinstance(data, dict) or not data or len(data) > 4:
        return False
    said = False
    for key, value in data.items():
        if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
            continue
        if isinstance(value, bool):
            said = said or value
        elif isinstance(value, str) and len(value) <= 40:
            said = said or norm_text(value).strip(" .!") in ACK_WORDS or any(
                w in ACK_WORDS for w in norm_text(value).replace(".", " ").split())
        else:
            return False
    return said


_SUBMIT_STATES = frozenset({"queued", "accepted", "submitted", "scheduled", "sent", "enqueued", "排队中", "已提交"})
_CONTENT_KEYS = frozenset({"message", "text", "body", "content", "html", "markdown", "payload"})


def is_submitted(data: Any, arguments: dict[str, Any]) -> bool:
    """A call that handed content over for delivery and got a receipt
    (``{"status": "queued"}`` for a message): a side effect, not a poll, whatever
    the tool is called."""
    if not isinstance(data, dict) or not any(k in _CONTENT_KEYS for k in arguments):
        return False
    for key in _STATUS_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value.strip().casefold() in _SUBMIT_STATES:
            return True
    return False


_DIGITS = re.compile(r"\d+")
_COPY = re.compile(r"\s*\(\d+\)")
_HEX_RUN = re.compile(r"[0-9a-f]{4,}")


def volatile_pair(a: str | None, b: str | None) -> bool:
    """Two canonical argument values that differ only in digits (a counter, a
    timestamp: ``noop1`` / ``noop2``) or in runs of hex digits (a request uuid)."""
    if a is None or b is None:
        return False
    if _COPY.sub("", a) == _COPY.sub("", b):
        return True                         # a numbered copy: "notes.md" / "notes (1).md"
    return _DIGITS.sub("#", a) == _DIGITS.sub("#", b) or _HEX_RUN.sub("#", a) == _HEX_RUN.sub("#", b)


_TOKEN = re.compile(r"(?<![0-9a-z])(?=[0-9a-z]*[0-9])(?=[0-9a-z]*[a-z])[0-9a-z]{6,}(?![0-9a-z])")


def token_copy(a: str | None, b: str | None) -> bool:
    """Two canonical argument values that differ only in high-entropy tokens (runs of 6 or more
    letters and digits mixed: a random suffix ``report-803bdd.parquet`` / ``report-6581f5.parquet``,
    a fresh request or routing key): the same value made unique anew, not another thing. A value
    with no such token, or the same tokens, is not."""
    if a is None or b is None or a == b:
        return False
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    return bool(ta) and len(ta) == len(tb) and all(x != y for x, y in zip(ta, tb)) \
        and _TOKEN.sub("#", a) == _TOKEN.sub("#", b)


def tokens_of(value: str) -> list[str]:
    """The high-entropy tokens of a canonical argument value (see :func:`token_copy`)."""
    return _TOKEN.findall(value)


_COPY_MARK = re.compile(r"\s*\(\d+\)")
_COUNTER = re.compile(r"[-_ ]\d+(?=\.[a-z0-9]+\"?$|\"?$)")


def numbered_copy(a: str | None, b: str | None) -> bool:
    """Two names of one thing numbered apart, the way a tool de-duplicates them:
    ``notes.md`` / ``notes (1).md``; ``fix/issue-15643`` / ``fix/issue-15643-2``
    (the earlier name with a counter added); or ``updates-1`` / ``updates-2``
    when the rest of the name has no digits (``report-2024-01`` / ``-02`` is a
    date, not a copy)."""
    if a is None or b is None or a == b:
        return False
    if _COPY_MARK.sub("", a) == _COPY_MARK.sub("", b):
        return True
    mb = _COUNTER.search(b)
    if mb is None:
        return False
    base_b = b[:mb.start()] + b[mb.end():]
    if base_b == a:
        return any(c.isalpha() for c in a) and len(mb.group()) <= 4     # x -> x-2
    ma = _COUNTER.search(a)
    if ma is None:
        return False
    base = a[:ma.start()] + a[ma.end():]
    if base != base_b or not any(c.isalpha() for c in base):
        return False
    if not any(c.isdigit() for c in base):
        return True
    na, nb = ma.group()[1:], mb.group()[1:]         # digits elsewhere: only a de-duplicating counter
    return not na.startswith("0") and int(na) >= 2 and int(nb) == int(na) + 1 and len(nb) <= 3   # x-2 -> x-3


def page_state(data: Any, arguments: dict[str, Any] | None = None) -> int:
    """What a listing's answer says about the pages after it: ``1`` it ended
    (``has_more: false``, a next cursor / page / token that is null or empty,
    ``is_last: true``, ``at_bottom: true``, the page number reached the page
    count), ``2`` its next cursor is the one sent (it does not advance), ``-1``
    it goes on (``has_more: true``, ``at_bottom: false``), ``-2`` it goes on
    from a next cursor the caller must send, ``0`` it does not say. Read at the
    top level and one level down (``{"page": {"has_more": false}}``;
    ``{"links": {}}`` says nothing)."""
    if not isinstance(data, dict):
        return 0
    said = 0 if _PLAIN_KEYS.issuperset(data) else _page_level(data, arguments)   # (the common answer: no call)
    if said > 0:
        return said
    for v in data.values():
        if type(v) is dict:
            below = _page_level(v, arguments)
            if below > 0:
                return below
            said = min(said, below)
            if not below:
                for w in v.values():        # inside an envelope ({"code": 200, "data": {"pagination": {...}}})
                    if type(w) is dict:
                        deeper = _page_level(w, arguments)
                        if deeper > 0:
                            return deeper
                        said = min(said, deeper)
    return said


def _page_level(level: dict, arguments: dict[str, Any] | None) -> int:
    """One level of :func:`page_state`."""
    if _PLAIN_KEYS.issuperset(level):
        return 0                            # no key that says anything about pages (the common answer)
    said = 0
    for key, value in level.items():
        kind = _FLAG_KIND.get(key)
        if kind is None:
            k = key.casefold().replace("_", "").replace("-", "") if isinstance(key, str) else ""
            if k[:1] == "x" and key[1:2] in ("_", "-") and k[1:] in _NEXT_KEYS:
                k = k[1:]                   # a response header kept as a field (X-Next-Page -> x_next_page)
            kind = (1 if k in _MORE_FLAGS else 2 if k in _LAST_FLAGS else 3 if k in _NEXT_KEYS
                    else 4 if k in _COUNT_FLAGS else 5 if k == "link" else 0)
            if len(_FLAG_KIND) < 4096:
                _FLAG_KIND[key] = kind
                if not kind:
                    _PLAIN_KEYS.add(key)
        if not kind:
            continue
        if kind == 1 and (isinstance(value, bool) or (type(value) is int and value in (0, 1))):   # (a 0/1 flag too)
            if not value:
                return 1
            said = min(said, -1)
        elif kind == 2 and (isinstance(value, bool) or (type(value) is int and value in (0, 1))):
            if value:
                return 1
            said = min(said, -1)
        elif kind == 3:
            if value is None or value == "":
                return 1
            if arguments and isinstance(value, (str, int)) and any(
                    v == value for k, v in arguments.items() if is_page_key(k)):
                return 2                    # the next cursor is the one sent: the walk does not advance
            said = -2                       # goes on, from a cursor the caller must send
        elif kind == 5 and type(value) is str:
            link = _link_state(value)
            if link > 0:
                return 1
            said = min(said, link)
        elif kind == 4 and isinstance(value, int) and not isinstance(value, bool):
            page = level.get("page", level.get("current_page", level.get("currentPage")))
            if isinstance(page, int) and not isinstance(page, bool) and (value <= 0 or page >= value):
                return 1                    # page 1 of 1, or a page number past a count of 0
    return said


_LINK_PART = re.compile(r"<[^>]*>([^<]*)")
_REL_NEXT = re.compile(r"\brel\s*=\s*\"?[^\";,]*\bnext\b", re.IGNORECASE)
_NO_RESULTS = re.compile(r"\bresults\s*=\s*\"?false\b", re.IGNORECASE)


def _link_state(value: str) -> int:
    """A ``Link`` header kept as a field (RFC 8288): ``1`` when it links no next page (the last
    page links only ``prev`` / ``first``) or its next link says it holds nothing
    (``results="false"``), ``-2`` when it links a next page, ``0`` when it links nothing."""
    rels = False
    for m in _LINK_PART.finditer(value[:4096]):
        params = m.group(1)
        if _REL_NEXT.search(params):
            return 1 if _NO_RESULTS.search(params) else -2
        rels = rels or "rel" in params.casefold()
    return 1 if rels else 0


def page_end(data: Any, arguments: dict[str, Any] | None = None) -> bool:
    return page_state(data, arguments) > 0


_FLAG_KIND: dict[Any, int] = {}
_PLAIN_KEYS: set = set()            # the keys of _FLAG_KIND whose kind is 0
_COUNT_FLAGS = frozenset({"pages", "totalpages", "pagecount", "numpages", "lastpage"})


_PATHS = re.compile(r"\S*[/\\]\S*")


def is_create_name(tool: str) -> bool:
    return any(t.casefold() in CREATE_VERBS for t in _NAME_TOKEN.findall(tool))


# A server that says how long to wait: longer than this (s) is an outage to report, not a blip to retry
# (SDK retry budgets wait seconds, at most a minute: openai-python caps its backoff at 8 s, botocore at 20 s)
MAX_RETRY_AFTER_S = 60
_RETRY_AFTER = re.compile(r"retry[- _]?after\W{0,3}(\d{1,7})\s*(s|sec|seconds?|m|min|minutes?|h|hours?|秒|分钟|小时)?",
                          re.I)


# (a dot inside a name, ``fs.read``, is not the end of the sentence)
_NO_SUCH_TOOL = re.compile(r"\b(?:tool|function)\b(?:[^.\n]|\.(?=\w)){0,60}\b(?:not found|does not exist|doesn't exist|"
                           r"is not available|unknown)\b|\bunknown (?:tool|function)\b|\bno such (?:tool|function)\b|"
                           r"\bno (?:tool|function) named\b|"
                           r"工具[^。\n]{0,30}(?:不存在|未找到)", re.I)


def no_such_tool(result: ToolResultEvent) -> bool:
    """The failure says the tool itself does not exist: the same call can never work."""
    if (result.error_type or "").casefold() in ("tool_not_found", "unknown_tool", "no_such_tool"):
        return True
    return bool(_NO_SUCH_TOOL.search(result.error or ""))


def hit_a_limit(result: ToolResultEvent) -> bool:
    """A failure that names a limit (a rate-limit type, a quota, billing): waiting a little does not lift it."""
    return (result.error_type or "").casefold() in TRANSIENT_TYPES or bool(_NOT_TRANSIENT.search(result.error or ""))


def is_transient(result: ToolResultEvent) -> bool:
    """A failure that may clear by itself (5xx, timeout, 429, "try again"); a
    quota or billing limit does not, whatever its status code. Paths and URLs
    in the text are not read (a branch named ``feat/ratelimit``)."""
    if result.ok:
        return False
    text = _PATHS.sub(" ", result.error or "")
    if _NOT_TRANSIENT.search(text):
        return False
    wait = _RETRY_AFTER.search(text)
    if wait is not None and int(wait.group(1)) * (60 if (wait.group(2) or "")[:1] in ("m", "分") else 1) \
            * (3600 if (wait.group(2) or "")[:1] in ("h", "小") else 1) > MAX_RETRY_AFTER_S:
        return False                        # "Retry-After: 7200": over before a retry budget could end it
    if (result.error_type or "").casefold() in TRANSIENT_TYPES:
        return True
    return bool(_TRANSIENT.search(text))


def error_signature(result: ToolResultEvent) -> str:
    """Same type and same text (normalised, the tool's own name masked, first
    160 characters): the mark of one failing backend behind tools whose names
    need not share a prefix ("MCP client not connected for tool 'x'")."""
    text = (result.error or "").replace(result.tool, "<tool>") if result.tool else (result.error or "")
    return f"{result.error_type or 'error'}|{norm_text(text)[:160]}"


_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


_QUERY_URL = re.compile(r"search|query|graphql|lookup|find|_count|/rpc\b", re.I)


def is_write_call(arguments: dict[str, Any]) -> bool:
    """A generic HTTP tool called with a method that changes something
    (``{"method": "POST"}``), unless the address says it is a query sent by
    POST (``/_search``, ``/graphql``)."""
    method = arguments.get("method")
    if not isinstance(method, str) or method.strip().upper() not in _WRITE_METHODS:
        return False
    where = arguments.get("url") or arguments.get("path") or arguments.get("endpoint") or ""
    return not (isinstance(where, str) and _QUERY_URL.search(where))


_EXIT_KEYS = ("exit_code", "exitcode", "exit", "code", "returncode", "return_code", "status_code")
_FAIL_LISTS = ("errors", "failures", "failed_tests", "violations")


def looks_failed(data: Any) -> bool:
    """A success of the tool that reports a failure of the work (a build or a
    check): a non-zero exit code, a non-empty list of errors, failed tests."""
    if type(data) is not dict:
        return False
    for key in _EXIT_KEYS:
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value != 0 \
                and (key != "status_code" or value >= 400):
            return True
    for key in _FAIL_LISTS:
        value = data.get(key)
        if (isinstance(value, list) and value) or (isinstance(value, int) and not isinstance(value, bool) and value):
            return True
    failed = data.get("failed")
    return (isinstance(failed, int) and not isinstance(failed, bool) and failed > 0) or data.get("ok") is False \
        or data.get("success") is False


_ID_KEY = re.compile(r"(?:^|_|-)(?:id|ids|uuid|guid|key|number|no|ref|pnr|sid|handle)$|[a-z]Id$|^id[A-Z_]")
_URL_KEY = re.compile(r"(?:^|_|-)(?:url|uri|link|href)$|[a-z](?:Url|Uri|Link)$", re.I)  # where a made thing lives
_ID_VALUE = re.compile(r"[A-Za-z]{1,16}[-_:]?[A-Za-z]*\d[\w-]{0,40}")


def id_split(data: Any, ignore: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """A small answer that carries identifiers (``{"task_id": "t_02", "status":
    "started"}``): (the rest of it, its identifiers), for telling a call that
    made something new (the same answer under a fresh id) from one that read
    the same thing again. Fields in ``ignore`` (``request_id``, ``timestamp``)
    are left out of both. None when the answer carries no identifier."""
    if type(data) is not dict or not data or len(data) > 16:
        return None
    ids, rest = [], []
    for key, value in data.items():
        if not isinstance(key, str):
            return None
        if key in ignore:
            continue                        # a request id or a timestamp of the answer: noise, not a new thing
        if ((isinstance(value, str) and len(value) <= 64 and (_ID_KEY.search(key) or _ID_VALUE.fullmatch(value)))
                or (isinstance(value, str) and len(value) <= 300 and _URL_KEY.search(key) and "://" in value)
                or (isinstance(value, int) and not isinstance(value, bool) and _ID_KEY.search(key))):
            ids.append(f"{key}={value}")
        else:
            rest.append((key, value))
    if not ids:
        return None
    return canon_result(dict(rest)), "|".join(sorted(ids))


_USER_REFUSED = re.compile(
    r"\b(?:user|you|human|operator|approver)\b[^.\n]{0,24}\b(?:rejected|denied|declined|refused)\b|"
    r"\b(?:rejected|denied|declined|refused) by (?:the )?(?:user|human|operator)|用户(?:已)?拒绝|被用户拒绝|"
    r"\b(?:permission|approval|confirmation)\b[^.\n]{0,30}\b(?:timed out|timeout|expired|not granted)|"
    r"(?:权限|用户)?确认超时|未获(?:得)?(?:批准|授权|确认)", re.I)


def is_user_refusal(result: ToolResultEvent) -> bool:
    """A failure that says a person refused the call ("User rejected permission
    for edit_file") or left its approval unanswered ("waiting for permission
    confirmation timed out"): the same call again asks what was already
    answered no, or not at all (as a question left unanswered)."""
    return not result.ok and bool(result.error) and _USER_REFUSED.search(result.error) is not None


def split_free(parts: dict[str, str]) -> tuple[str, str]:
    """(the free-text values, the other arguments) of a call's canonical parts, each as one string."""
    free, rest = [], []
    for k, v in parts.items():
        if _key_kind(k) == _QUERY:
            free.append(v.strip('"'))       # the words only: names of arguments would inflate similarity
        else:
            rest.append(f"{k}={v}")
    return "\x00".join(free), "\x00".join(rest)


_SINCE_KEYS = frozenset({"since", "newerthan", "modifiedsince", "updatedsince", "updatedafter", "createdafter",
                         "oldest", "sincetime", "changedsince"})
_DATE_START = re.compile(r"\d{4}-\d{2}-\d{2}")


def asks_since(arguments: dict[str, Any]) -> bool:
    """A call that asks what is new since a point in time (``{"since":
    "2026-12-01T09:00Z"}``, Gmail's ``newer_than``): asking again is waiting for
    something to arrive, a poll."""
    for key, value in arguments.items():
        if isinstance(key, str) and key.casefold().replace("_", "").replace("-", "") in _SINCE_KEYS:
            if (isinstance(value, str) and _DATE_START.match(value)) or (
                    isinstance(value, int) and not isinstance(value, bool) and value > 1_000_000_000):
                return True
    return False


_NOT_READY = re.compile(r"not (?:yet )?ready|not (?:available|finished|complete|done) yet|still (?:processing|running|"
                        r"pending|in progress|generating|building)|尚未(?:就绪|完成|生成)|还没(?:有)?(?:好|完成|生成)|处理中", re.I)


def is_not_ready(result: ToolResultEvent) -> bool:
    """A failure that says the thing asked for is not ready yet ("404 report not
    ready", "still processing"): asking again later is waiting, a poll."""
    return not result.ok and bool(result.error) and _NOT_READY.search(result.error) is not None
