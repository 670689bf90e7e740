"""Rendering of results: terminal tables (HTML later)."""

from .compare import render_guard_comparison
from .terminal import render_attributions, render_cases, render_summary

__all__ = ["render_attributions", "render_cases", "render_guard_comparison", "render_summary"]
