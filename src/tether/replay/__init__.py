"""Record and replay: canonicalization, cassettes, redaction, players, typed mismatches."""

from .mismatch import (
    Mismatch,
    ModelRequestMismatch,
    SemanticOutputMismatch,
    TerminalStateMismatch,
    ToolArgumentsMismatch,
    ToolCallCountMismatch,
    ToolNameMismatch,
    ToolResultMismatch,
    readable_diff,
)

__all__ = [
    "Mismatch",
    "ModelRequestMismatch",
    "SemanticOutputMismatch",
    "TerminalStateMismatch",
    "ToolArgumentsMismatch",
    "ToolCallCountMismatch",
    "ToolNameMismatch",
    "ToolResultMismatch",
    "readable_diff",
]
