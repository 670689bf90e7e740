"""Result classification shared by the policies.

A tool answer comes back as the JSON envelope ``{ok, data, error,
error_type}``. :func:`assess` says what kind of answer it is:

* ``error``: ``ok`` is false;
* ``empty``: ``total``/``count`` is 0, every list field is empty, or no data;
* ``partial``: some fields of the answer are null while others have values;
* ``insufficient``: ok, but a note/message says the data needed is not there;
* ``good``: anything else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from enum import StrEnum
from typing import Any

from ..._assess import is_empty_data
from ._lexicon import FORMAT_PHRASES, INSUFFICIENT_PHRASES, OUTAGE_PHRASES, TRANSIENT_PHRASES, contains_any

NOTE_KEYS = ("note", "notes", "message", "msg", "warning", "hint", "remark", "info", "tip")
_META_KEYS = set(NOTE_KEYS) | {"total", "count", "page", "query", "keyword"}


class Status(StrEnum):
    GOOD = "good"
    PARTIAL = "partial"
    INSUFFICIENT = "insufficient"
    EMPTY = "empty"
    ERROR = "error"

    @property
    def usable(self) -> bool:
        """Data the agent can work with (possibly with caveats)."""
        return self in (Status.GOOD, Status.PARTIAL, Status.INSUFFICIENT)

    @property
    def failed(self) -> bool:
        return self in (Status.EMPTY, Status.ERROR)


@dataclass(frozen=True)
class Assessment:
    status: Status
    reason: str = ""                     # the error text, or the note/message of the data
    transient: bool = False              # "try again later", 503, timeout
    outage: bool = False                 # the service says it is down
    bad_format: bool = False             # the error complains about a format
    null_fields: tuple[str, ...] = ()
    data: Any = None
    error_type: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == Status.GOOD


def parse_envelope(content: str) -> dict[str, Any]:
    """The tool message content -> the envelope (text that is not JSON is data)."""
    try:
        env = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return {"ok": True, "data": content}
    if isinstance(env, dict) and "ok" in env:
        return env
    return {"ok": True, "data": env}


is_empty = is_empty_data   # the same judgement the scorers and the loop guard use


def notes_of(data: Any) -> str:
    if isinstance(data, dict):
        return "；".join(str(data[k]) for k in NOTE_KEYS if isinstance(data.get(k), str) and data[k])
    return ""


def null_fields(data: Any) -> tuple[str, ...]:
    """Top-level fields that are null while other content fields have values."""
    if not isinstance(data, dict):
        return ()
    content = {k: v for k, v in data.items() if k not in _META_KEYS}
    nulls = tuple(k for k, v in content.items() if v is None)
    if nulls and len(nulls) < len(content):
        return nulls
    return ()


def assess(envelope: dict[str, Any]) -> Assessment:
    data = envelope.get("data")
    if not envelope.get("ok", False):
        err = str(envelope.get("error") or "unknown error")
        return Assessment(Status.ERROR, err, transient=contains_any(err, TRANSIENT_PHRASES),
                          outage=contains_any(err, OUTAGE_PHRASES), bad_format=contains_any(err, FORMAT_PHRASES),
                          data=data, error_type=envelope.get("error_type"))
    note = notes_of(data)
    if is_empty(data):
        return Assessment(Status.EMPTY, note, transient=contains_any(note, TRANSIENT_PHRASES), data=data)
    nulls = null_fields(data)
    if nulls:
        return Assessment(Status.PARTIAL, note, null_fields=nulls, data=data)
    if note and contains_any(note, INSUFFICIENT_PHRASES):
        return Assessment(Status.INSUFFICIENT, note, data=data)
    if isinstance(data, str) and contains_any(data, INSUFFICIENT_PHRASES) and len(data) < 200:
        return Assessment(Status.INSUFFICIENT, data, data=data)
    return Assessment(Status.GOOD, note, data=data)


# -- ids in results --------------------------------------------------------------
def _walk(data: Any, depth: int = 0):
    if depth > 3:
        return
    if isinstance(data, dict):
        yield None, data
        for key, value in data.items():
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, dict):
                        yield key, item
                        yield from ((k, d) for k, d in _walk(item, depth + 1) if k is not None)
            elif isinstance(value, dict):
                yield from ((k, d) for k, d in _walk(value, depth + 1) if k is not None)
    elif isinstance(data, list):
        for item in data:
            if isinstance(item, dict):
                yield "", item


def _singular(word: str) -> str:
    word = word.lower()
    for suffix in ("_list", "list", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            stem = word[: -len(suffix)]
            return stem if suffix != "es" or stem.endswith(("ss", "sh", "ch", "x")) else word[:-1]
    return word


def ids_for(param: str, data: Any) -> list[str]:
    """Values for an id parameter (``post_id``) found in a result, in order.

    Exact key first (``post_id``); else ``id`` fields of items in a list whose
    name is the entity's plural (``posts: [{id: ...}]``) or of the result itself.
    """
    exact: list[str] = []
    loose: list[str] = []
    entity = param.lower().removesuffix("_id").removesuffix("id")
    for list_name, obj in _walk(data):
        if param in obj and isinstance(obj[param], (str, int)):
            exact.append(str(obj[param]))
        elif "id" in obj and isinstance(obj["id"], (str, int)):
            if list_name is None or (entity and _singular(list_name or "") == entity) or list_name == "":
                loose.append(str(obj["id"]))
    found = exact or loose
    return list(dict.fromkeys(found))


def first_list(data: Any) -> tuple[str, list[Any]] | None:
    """The main list of a result: the longest list of objects."""
    if isinstance(data, list):
        return ("", data)
    if not isinstance(data, dict):
        return None
    lists = [(k, v) for k, v in data.items() if isinstance(v, list) and v and isinstance(v[0], dict)]
    if not lists:
        return None
    return max(lists, key=lambda kv: len(kv[1]))


@lru_cache(maxsize=4096)
def assess_content(content: str) -> Assessment:
    """:func:`assess` of a tool message's content, remembered: a policy re-reads the whole conversation at every
    step, so each result would be parsed and assessed again at each later step. Assessments are frozen."""
    return assess(parse_envelope(content))
