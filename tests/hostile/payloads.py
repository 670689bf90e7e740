"""HTML + JS payloads for every text field of a run (issue 19, finding 2)."""

from __future__ import annotations

import copy
from typing import Any

PAYLOAD = ('"\'><img src=x onerror="window.__xss=1;console.error(\'XSS\')">'
           '<script>window.__xss=1;console.error("XSS")</script><a href="javascript:window.__xss=1">j</a>')
KEEP = {"type", "version", "run_id", "eval_id", "case_id", "kind", "status", "role", "error_kind", "seq", "at_ms"}


def poison(events: list[dict]) -> list[dict]:
    """Every text field (and every key of a free-form object) that the event models
    accept as free text carries PAYLOAD; fields with an enum or an id keep their value."""
    from tether.events import EVENT_ADAPTER

    out = []
    for event in events:
        event = copy.deepcopy(event)
        for path in list(_string_paths(event)):
            if path[0] in KEEP or path[-1] in ("approver", "budget"):    # enums import checks
                continue
            before = _get(event, path)
            _set(event, path, PAYLOAD + before)
            try:
                EVENT_ADAPTER.validate_python(event)
            except Exception:
                _set(event, path, before)
        for obj in _objects(event):           # free-form objects (tool arguments, data): a hostile key too
            obj.setdefault(PAYLOAD, PAYLOAD)
            try:
                EVENT_ADAPTER.validate_python(event)
            except Exception:
                obj.pop(PAYLOAD)
        out.append(event)
    return out


def _string_paths(obj: Any, prefix: tuple = ()):
    if isinstance(obj, str):
        yield prefix
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _string_paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _string_paths(v, (*prefix, i))


def _objects(event: dict):
    for key in ("arguments", "data", "new_arguments"):
        if isinstance(event.get(key), dict):
            yield event[key]


def _get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _set(obj: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value
