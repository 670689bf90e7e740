"""Rendering of results: terminal tables (HTML later)."""

from .terminal import render_attributions, render_cases, render_summary

__all__ = ["render_attributions", "render_cases", "render_summary"]
