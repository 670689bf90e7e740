"""Evidence the loop guard reads from results whatever the tool and its field
spellings: a status nested in an envelope, what a result adds to what the same
call already returned. Kept apart from :mod:`._calls` (which describes one call
and runs on every call, so it is kept lean): these run only when a call repeats.
"""

from __future__ import annotations

from typing import Any

from ._calls import _NAME_TOKEN, is_pending

_MAX_DEPTH = 2


def pending_within(data: Any) -> bool:
    """A "not finished yet" status one or two objects down (``{"status": {"state":
    "PENDING"}}``, ``{"code": 0, "data": {"status": "in_progress"}}``): an envelope
    around a job's status is still a poll. Lists are not searched: a listing of jobs,
    some running, is not a job that is running."""
    return type(data) is dict and _within(data, 0)


def _within(data: dict, depth: int) -> bool:
    for key, value in data.items():
        if type(value) is dict and len(value) <= 32:
            if is_pending(value):
                return True
            if depth + 1 < _MAX_DEPTH and _within(value, depth + 1):
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
