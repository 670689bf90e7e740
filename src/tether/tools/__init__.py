"""The Tool seam: tools, tool sets, the result envelope, case injection.

The seam is imported eagerly; the tool doubles (``Stub``, ``Fake``,
``RefundFake``, ``RecordingMock``) and the fault injectors load on first use.
"""

from typing import TYPE_CHECKING

from .._faces import lazy_names
from ._tool import CallNext, Tool, ToolLayer, ToolResult, ToolSet, tool

_DOUBLES = ["Call", "Fake", "RecordingMock", "RefundFake", "Responses", "Stub", "fake_tool"]
_FAULTS = ["EmptyResult", "FailFirst", "FaultLayer", "FaultSequence", "Injection", "Latency", "OnCalls",
           "PartialResult", "PermissionDenied", "RateLimited", "ResponseLost", "Timeout", "UnknownError",
           "with_faults"]
_LAZY = {**{n: ".doubles" for n in _DOUBLES}, **{n: ".faults" for n in _FAULTS}}
__getattr__, __dir__ = lazy_names(__name__, _LAZY)

if TYPE_CHECKING:
    from .doubles import Call, Fake, RecordingMock, RefundFake, Responses, Stub, fake_tool
    from .faults import (EmptyResult, FailFirst, FaultLayer, FaultSequence, Injection, Latency, OnCalls,
                         PartialResult, PermissionDenied, RateLimited, ResponseLost, Timeout, UnknownError,
                         with_faults)

__all__ = sorted(["CallNext", "Tool", "ToolLayer", "ToolResult", "ToolSet", "tool", *_LAZY])
