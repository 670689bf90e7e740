"""Rendering of results: terminal tables, HTML reports, run metrics.

The renderers are imported on first use (PEP 562): ``tether stats`` imports
``tether.report.metrics``, which must not pull in the results model, the judge
and asyncio through this package's ``__init__``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["render_attributions", "render_cases", "render_guard_comparison", "render_summary"]

_WHERE = {"render_guard_comparison": "compare", "render_attributions": "terminal", "render_cases": "terminal",
          "render_summary": "terminal"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
