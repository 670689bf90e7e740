"""Shared judgements about tool results (used by scorers and guards)."""

from __future__ import annotations

from typing import Any


def is_empty_data(data: Any) -> bool:
    """An ok result that carries nothing: None, empty containers, total 0,
    or a mapping whose list fields are all empty."""
    if isinstance(data, dict):              # the common case first: it runs on every tool result
        if not data:
            return True
        if ("total" in data and data["total"] == 0) or ("count" in data and data["count"] == 0):
            return True
        lists = False
        for v in data.values():
            if isinstance(v, list):
                if v:
                    return False
                lists = True
        return lists
    return data is None or data == "" or data == []
