"""Record and replay: canonicalization, cassettes, redaction, players, typed mismatches.

A cassette is a recorded run (its trace format v2 events) plus its
environment. Record a run into a readable JSON cassette (redacted at write
time), replay it strictly or loosely, and get a typed mismatch naming the step
when the run departs from the recording. See docs/replay.md.

The mismatch family is imported eagerly (the run loop's neighbours use it);
everything else loads on first use, so importing a mismatch never pulls in
the runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..mismatch import (
    Mismatch,
    ModelRequestMismatch,
    SemanticOutputMismatch,
    TerminalStateMismatch,
    ToolArgumentsMismatch,
    ToolCallCountMismatch,
    ToolNameMismatch,
    ToolResultMismatch,
    UserReplyMismatch,
    readable_diff,
)

if TYPE_CHECKING:
    from .canonicalize import Canon, DropRule, canonical_request, tool_schema_hash
    from .cassette import (
        Cassette,
        CassetteNotFound,
        Environment,
        RecordedCall,
        RecordedReply,
        RecordedRequest,
        RecordMode,
        RunSettings,
        Versions,
        default_record_mode,
    )
    from .player import ReplayModel, ReplayState, ReplayTools, ReplayUser, VerifyTools
    from .record import record_run
    from .redact import REDACTED, RedactionRules, Redactor, SecretFinding, scan_for_secrets
    from .replayer import Replayer, replay_run
    from .semantic import ContainsAll, Exact, Predicate, SemanticCheck
    from .session import CassetteSession

_LAZY = {
    "canonicalize": ["Canon", "DropRule", "canonical_request", "tool_schema_hash"],
    "cassette": ["Cassette", "CassetteNotFound", "Environment", "RecordMode", "RecordedCall", "RecordedReply",
                 "RecordedRequest", "RunSettings", "Versions", "default_record_mode"],
    "player": ["ReplayModel", "ReplayState", "ReplayTools", "ReplayUser", "VerifyTools"],
    "record": ["record_run"],
    "redact": ["REDACTED", "RedactionRules", "Redactor", "SecretFinding", "scan_for_secrets"],
    "replayer": ["Replayer", "replay_run"],
    "semantic": ["ContainsAll", "Exact", "Predicate", "SemanticCheck"],
    "session": ["CassetteSession"],
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "Canon",
    "Cassette",
    "CassetteNotFound",
    "CassetteSession",
    "ContainsAll",
    "DropRule",
    "Environment",
    "Exact",
    "Mismatch",
    "ModelRequestMismatch",
    "Predicate",
    "REDACTED",
    "RecordMode",
    "RecordedCall",
    "RecordedReply",
    "RecordedRequest",
    "RedactionRules",
    "Redactor",
    "ReplayModel",
    "ReplayState",
    "ReplayTools",
    "ReplayUser",
    "Replayer",
    "RunSettings",
    "SecretFinding",
    "SemanticCheck",
    "SemanticOutputMismatch",
    "TerminalStateMismatch",
    "ToolArgumentsMismatch",
    "ToolCallCountMismatch",
    "ToolNameMismatch",
    "ToolResultMismatch",
    "UserReplyMismatch",
    "VerifyTools",
    "Versions",
    "canonical_request",
    "default_record_mode",
    "readable_diff",
    "record_run",
    "replay_run",
    "scan_for_secrets",
    "tool_schema_hash",
]
