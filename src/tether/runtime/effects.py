"""Side effects exactly once: the intent / outcome ledger around side-effecting calls.

Before a side-effecting call the run loop writes an *intent* with a
deterministic idempotency key and passes the key to tools that take one;
after it, the *outcome*.

**The key: run, call signature (tool + canonical arguments), occurrence.**
The occurrence index of a call is the number of earlier identical calls in
the run's record that succeeded. So an intended second identical call (two
refunds of A100 on purpose) comes after a success and gets a new key: it
executes. A retry (after a failure, a lost response, or a crash that lost the
record of the call) finds no success before it, so it gets the same key as
the attempt it repeats, and the ledger decides instead of the tool:

* ``done`` / ``failed``: answered from the ledger, never re-run (the seed's
  done-signatures: "续跑时跳过已做过的事").
* ``intent`` (a crash between the call and its record) or ``unknown`` (the
  response was lost: a timeout after the request may have been committed):
  the tool's status-query hook decides if it has one; else a tool that takes
  the idempotency key is re-sent *the same key* (the external system
  dedupes); else the run ends as ``unknown``: never a blind retry.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..messages import canonical_json

# Errors after which a side effect may or may not have happened.
UNCERTAIN_ERRORS = frozenset({"timeout", "exception", "response_lost", "connection_error"})


def effect_signature(tool: str, arguments: dict[str, Any]) -> str:
    return f"{tool}:{canonical_json(arguments)}"


def idempotency_key(run_id: str, signature: str, occurrence: int = 0) -> str:
    """The key of the ``occurrence``-th intended call with ``signature`` in the run (see the module docstring)."""
    digest = hashlib.sha256(f"{run_id}\x1f{signature}\x1f{occurrence}".encode("utf-8")).hexdigest()[:20]
    return f"tether-{digest}"


def occurrence(trajectory: Any, signature: str) -> int:
    """Earlier identical calls in the record that succeeded: the index of the next intended one."""
    return sum(1 for call, result in trajectory.calls_with_results()
               if result is not None and result.ok and call.signature == signature)


def outcome_status(ok: bool, error_type: str | None) -> str:
    if ok:
        return "done"
    return "unknown" if (error_type or "") in UNCERTAIN_ERRORS else "failed"


class Ledger(Protocol):
    def effect(self, key: str) -> dict | None: ...

    def record_intent(self, key: str, run_id: str, signature: str, tool: str, arguments: dict, step: int) -> None: ...

    def record_outcome(self, key: str, status: str, result: dict | None) -> None: ...


@dataclass
class MemoryLedger:
    """The ledger of a run without a store (lost responses are still handled)."""

    rows: dict[str, dict] = field(default_factory=dict)

    def effect(self, key: str) -> dict | None:
        return self.rows.get(key)

    def record_intent(self, key: str, run_id: str, signature: str, tool: str, arguments: dict, step: int) -> None:
        self.rows.setdefault(key, {"key": key, "run_id": run_id, "signature": signature, "tool": tool,
                                   "arguments": arguments, "step": step, "status": "intent", "result": None})

    def record_outcome(self, key: str, status: str, result: dict | None) -> None:
        self.rows[key].update(status=status, result=result)

    def effects(self, run_id: str) -> list[dict]:
        return [r for r in self.rows.values() if r["run_id"] == run_id]
