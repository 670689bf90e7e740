"""The words of the event format that need no pydantic: how a tool call ended
(:class:`Outcome`, :func:`outcome_of`), a guard trip's name (:func:`trip_name`)
and canonical JSON.

:mod:`tether.events` re-exports them; code that only reads stored events as
plain records (``tether runs show``, :mod:`tether.store.records`) imports them
from here, so it starts without building the pydantic event models.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any


def canonical_json(value: Any) -> str:
    """Stable JSON: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


class Outcome(str, Enum):
    """How a tool call ended: who answered it, and so whether it ran.

    ``executed`` is the predicate: the call reached the tools (the real tool,
    the scenario world, or the case's stand-in for the tool: a mock, an
    intercept, an injected fault). The others never reached a tool.
    """

    EXECUTED = "executed"        # the tool ran (the harness's tool, a scenario world, a real API)
    FAILED = "failed"            # the tool ran and raised (its result is the exception)
    MOCKED = "mocked"            # a case mock answered for the tool
    INTERCEPTED = "intercepted"  # a case intercept answered for the tool
    INJECTED = "injected"        # an injected fault answered (tether.tools.faults)
    BLOCKED = "blocked"          # a guard blocked or stopped the call
    HELD = "held"                # a gate held it: an approval pending, rejected or expired; an unknown outcome
    REFUSED = "refused"          # tether refused it: unknown tool, arguments that do not fit, a replay mismatch
    LEDGER = "ledger"            # answered from the side-effect ledger, not run again

    @property
    def executed(self) -> bool:
        return self in _EXECUTED

    @property
    def label(self) -> str:
        return "answered from the ledger" if self is Outcome.LEDGER else self.value


_EXECUTED = frozenset({Outcome.EXECUTED, Outcome.FAILED, Outcome.MOCKED, Outcome.INTERCEPTED, Outcome.INJECTED})
_BY_SOURCE = {"guard": Outcome.BLOCKED, "approval": Outcome.HELD, "ledger": Outcome.LEDGER, "mock": Outcome.MOCKED,
              "intercept": Outcome.INTERCEPTED, "fault": Outcome.INJECTED, "replay": Outcome.REFUSED}


def outcome_of(source: str, error_type: str | None = None) -> Outcome:
    """The outcome of a result answered by ``source`` (ToolResult.source, or an
    older event's): the one mapping from the free-form source to the vocabulary."""
    if source == "runner":      # tether's tool runner: a tool (or a layer) that raised ran; anything else was refused
        return Outcome.FAILED if error_type == "exception" else Outcome.REFUSED
    if source == "ledger" and error_type == "outcome_unknown":
        return Outcome.HELD
    if error_type == "exception":
        return Outcome.FAILED
    return _BY_SOURCE.get(source, Outcome.EXECUTED)     # a tool, a world, an import, a tool's own label


def trip_name(guard: str, rule: str) -> str:
    return rule if rule == guard or rule.startswith(f"{guard}.") else f"{guard}.{rule}"
