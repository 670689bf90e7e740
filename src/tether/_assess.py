"""Shared judgements about tool results (used by scorers and guards)."""

from __future__ import annotations

from typing import Any

_COUNT_KEYS = ("total", "count")


def is_empty_data(data: Any) -> bool:
    """An ok result that carries nothing: None, empty containers, total 0,
    or a mapping whose list fields are all empty."""
    if data is None or data == "" or data == [] or data == {}:
        return True
    if isinstance(data, dict):
        for key in _COUNT_KEYS:
            if key in data and data[key] == 0:
                return True
        lists = [v for v in data.values() if isinstance(v, list)]
        if lists and all(len(v) == 0 for v in lists):
            return True
    return False
