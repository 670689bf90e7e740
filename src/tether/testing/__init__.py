"""Helpers for testing agents and scorers with tether.

The doubles live next to the seams they replace (``tether.models``:
``ScriptedModel``, ``FunctionModel``, ``MappingModel``; ``tether.tools``:
``Stub``, ``Fake``, ``RefundFake``, ``RecordingMock`` and the fault injectors);
this package holds the trajectory assertions, the hand builder and, loaded on
first use, a fake OpenAI-compatible server on loopback (``FakeOpenAIServer``).
"""

from typing import TYPE_CHECKING

from .._faces import lazy_names

from .assertions import (
    assert_args,
    assert_call_count,
    assert_called_before,
    assert_precondition,
    assert_reply,
    assert_retry_safe,
    assert_side_effects,
    assert_status,
    assert_tool_sequence,
    efficiency,
    redundant_calls,
)
from .builder import TrajectoryBuilder

_LAZY = {"FakeOpenAIServer": ".fake_openai", "insisting": ".fake_openai"}
__getattr__, __dir__ = lazy_names(__name__, _LAZY)

if TYPE_CHECKING:
    from .fake_openai import FakeOpenAIServer, insisting

__all__ = [
    "FakeOpenAIServer",
    "TrajectoryBuilder",
    "assert_args",
    "assert_call_count",
    "assert_called_before",
    "assert_precondition",
    "assert_reply",
    "assert_retry_safe",
    "assert_side_effects",
    "assert_status",
    "assert_tool_sequence",
    "efficiency",
    "insisting",
    "redundant_calls",
]
