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
import re
import unicodedata
from typing import Any

from .._assess import is_empty_data
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
    r"account|customer|repo|branch|commit|ref|sha|handle|slug|date|day|month|year|region|zone|host|channel)$")
_ID_CHARS = re.compile(r"[0-9/\\@.:#_-]")

# Verbs in a tool name that mark a side-effecting tool (when no spec says so).
ACTION_VERBS = frozenset({
    "add", "apply", "approve", "archive", "assign", "book", "cancel", "close", "comment", "copy", "create", "delete",
    "deploy", "disable", "edit", "enable", "forward", "insert", "invite", "label", "like", "mark", "merge", "modify",
    "move", "mute", "notify", "order", "patch", "pay", "post", "publish", "put", "refund", "register", "reject",
    "remove", "rename", "reply", "resolve", "restart", "save", "schedule", "send", "set", "star", "store", "submit",
    "subscribe", "tag", "transfer", "unsubscribe", "update", "upload", "upsert", "write",
})
_NAME_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

# Status values that mean "not finished yet": a poll whose answer is one of these
# is waiting, not looping (OpenClaw's knownPollNoProgress gets its own, higher limits).
PENDING = frozenset({
    "pending", "queued", "running", "in_progress", "in progress", "inprogress", "processing", "started", "starting",
    "waiting", "building", "deploying", "provisioning", "creating", "scheduled", "accepted", "submitted", "active",
    "initializing", "working", "not_ready", "not ready", "处理中", "排队中", "进行中", "运行中", "等待中", "部署中",
})
_STATUS_KEYS = ("status", "state", "phase", "job_status", "stage")
# boolean flags that say "not finished yet" when they hold this value
_PENDING_FLAGS = {"running": True, "pending": True, "in_progress": True, "busy": True,
                  "done": False, "finished": False, "completed": False, "complete": False, "ready": False}
# tools whose whole job is to let time pass between polls
WAIT_VERBS = frozenset({"sleep", "wait", "pause", "delay", "backoff"})

_TRANSIENT = re.compile(
    r"\b(?:5\d\d|429)\b|time[d ]?\s?out|timeout|temporar|unavailable|rate.?limit|too many requests|try again|"
    r"overloaded|connection (?:reset|refused|error)|econnreset|gateway|throttl|超时|稍后|繁忙|不可用|限流", re.I)
TRANSIENT_TYPES = frozenset({"timeout", "rate_limit", "rate_limited", "unavailable", "transient", "server_error",
                             "http_5xx", "overloaded", "connection_error", "throttled"})


def norm_text(value: str) -> str:
    if value.isascii():
        return " ".join(value.lower().split())
    return " ".join(unicodedata.normalize("NFKC", value).casefold().split())


def _norm_value(value: Any, ignore: frozenset[str]) -> Any:
    if isinstance(value, str):
        return norm_text(value)
    if isinstance(value, dict):
        return {k: _norm_value(v, ignore) for k, v in value.items() if k not in ignore}
    if isinstance(value, list):
        return [_norm_value(v, ignore) for v in value]
    return value


_KEY_KIND: dict[str, int] = {}     # argument name -> 0 free text, 1 target, 2 decided by the value
_QUERY, _TARGET, _BY_VALUE = 0, 1, 2


def _key_kind(key: str) -> int:
    kind = _KEY_KIND.get(key)
    if kind is None:
        k = key.casefold()
        kind = _QUERY if k in QUERY_KEYS else _TARGET if _TARGET_KEY.search(k) else _BY_VALUE
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


def describe_call(tool: str, arguments: dict[str, Any], ignore: frozenset[str]) -> tuple[str, str]:
    """(signature, target) of a call, in one pass over the sorted arguments.

    The signature is ``tool:key=value,...`` with normalised values (strings
    case folded and whitespace collapsed); ``target`` is the same for the
    resource-naming arguments only, empty when the call names none (a pure
    query). Both are keys for equality, never parsed back."""
    parts: list[str] = []
    targets: list[str] = []
    for key in sorted(arguments):
        if key in ignore:
            continue
        value = arguments[key]
        value = norm_text(value) if isinstance(value, str) else _norm_value(value, ignore)
        part = f"{key}={value!r}"
        parts.append(part)
        if _is_target(key, value):
            targets.append(part)
    return f"{tool}:{','.join(parts)}", ",".join(targets)


def canonical_call(tool: str, arguments: dict[str, Any], ignore: frozenset[str] = frozenset()) -> str:
    return describe_call(tool, arguments, ignore)[0]


def is_action_name(tool: str) -> bool:
    return any(t.casefold() in ACTION_VERBS for t in _NAME_TOKEN.findall(tool))


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def result_hash(result: ToolResultEvent) -> str:
    """A short stable key for "the same result": the repr of the data (tools
    return their fields in a fixed order), hashed when longer than 40 characters."""
    text = repr(result.data) if result.ok else f"!{result.error_type}|{result.error}"
    return text if len(text) <= 40 else ("!" if not result.ok else "") + _digest(text)


def is_wait_name(tool: str) -> bool:
    return any(t.casefold() in WAIT_VERBS for t in _NAME_TOKEN.findall(tool))


_POLL_KEYS = frozenset(_STATUS_KEYS) | frozenset(_PENDING_FLAGS)


def is_pending(data: Any) -> bool:
    """A status that says the work is not finished yet (polling, not looping)."""
    if isinstance(data, dict):
        for key in data:
            if key in _POLL_KEYS:
                value = data[key]
                if isinstance(value, str):
                    if key in _STATUS_KEYS and value.strip().casefold() in PENDING:
                        return True
                elif key in _PENDING_FLAGS and value is _PENDING_FLAGS[key]:
                    return True
        return False
    return isinstance(data, str) and data.strip().casefold() in PENDING


def is_ack(data: Any) -> bool:
    """A bare acknowledgement (``{"moved": true}``, ``"ok"``): says the call
    was done, carries no data to compare."""
    if data is True or (isinstance(data, str) and len(data) <= 24):
        return True
    if not isinstance(data, dict) or not data or len(data) > 3:
        return False
    return all(v is None or isinstance(v, (bool, int, float)) or (isinstance(v, str) and len(v) <= 24)
               for v in data.values())


def is_transient(result: ToolResultEvent) -> bool:
    if result.ok:
        return False
    if (result.error_type or "").casefold() in TRANSIENT_TYPES:
        return True
    return bool(_TRANSIENT.search(result.error or ""))


def error_signature(result: ToolResultEvent) -> str:
    """Same type and same text (normalised, the tool's own name masked, first
    160 characters): the mark of one failing backend behind tools whose names
    need not share a prefix ("MCP client not connected for tool 'x'")."""
    text = (result.error or "").replace(result.tool, "<tool>") if result.tool else (result.error or "")
    return f"{result.error_type or 'error'}|{norm_text(text)[:160]}"


def empty(result: ToolResultEvent) -> bool:
    return is_empty_data(result.data)
