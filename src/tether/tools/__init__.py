"""The Tool seam: tools, tool sets, the result envelope, case injection."""

from ._tool import CallNext, Tool, ToolLayer, ToolResult, ToolSet, tool

__all__ = ["CallNext", "Tool", "ToolLayer", "ToolResult", "ToolSet", "tool"]
