"""Helpers for testing agents and scorers with tether.

The doubles live next to the seams they replace (``tether.models``:
``ScriptedModel``, ``FunctionModel``, ``MappingModel``; ``tether.tools.doubles``:
``Stub``, ``Fake``, ``RefundFake``, ``RecordingMock``; ``tether.tools.faults``);
this package holds the trajectory assertions and the hand builder.
"""

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

__all__ = [
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
    "redundant_calls",
]
