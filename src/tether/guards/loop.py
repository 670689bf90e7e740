"""The loop guard: identical calls, cycles, near-duplicates, no progress.

Everything is decided from a bounded window of recent calls (plain data, so it
checkpoints), so the cost per tool call does not grow with the history.

Rules (each trip names the rule and its numbers):

* ``identical``: the same call (tool + canonical arguments: sorted keys,
  whitespace collapsed, case folded, ``ignore_fields`` dropped) made again
  while its result has not changed. A call whose result *changes* (polling,
  pagination) is progress and never counts.
* ``cycle``: the last calls repeat with a period of 2 to 4 (A->B->A->B,
  A->B->C->A->B->C) and the results have not changed: the loop that resets a
  naive "same as the previous call" counter.
* ``near_duplicate``: the same tool with *similar* arguments (rapidfuzz
  similarity of the canonical arguments >= ``similarity``) again and again,
  none of them bringing a new result (a keyword reworded without success).
* ``no_progress``: different calls in a row that all return the same result or
  the same error.
* ``outage``: two or more tools of one family (name prefix, e.g. ``beike_``)
  failed with the same error type; a further call to that family is blocked.

The ladder (seed 002 section 3.3): the first trip is a hint telling the model
exactly what it repeated and what else it could do; the next trip stops the
run as ``loop_aborted`` (or escalates to a human with ``on_repeat="escalate"``),
after a finish-up request so the user still gets an answer. ``outage`` blocks
the call instead of hinting, since calling a dead service again only wastes time.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from rapidfuzz import fuzz

from .._assess import is_empty_data
from ..events import ToolResultEvent
from ..messages import ToolCallRequest, canonical_json
from ..status import TerminalStatus
from ._base import BaseGuard, GuardContext, Verdict


@dataclass(frozen=True)
class LoopConfig:
    window: int = 30                # calls remembered
    max_identical: int = 2          # an unchanged identical call may be made this many times
    max_cycle_periods: int = 2      # the call completing this many rounds of a cycle trips
    max_period: int = 4
    max_near_duplicates: int = 4    # similar calls without a new result
    similarity: float = 70.0        # rapidfuzz ratio, 0-100
    max_no_progress: int = 5        # different calls in a row, same result
    outage_tools: int = 2           # failed tools of one family that mean an outage
    exempt_tools: frozenset[str] = frozenset()
    ignore_fields: frozenset[str] = frozenset({"request_id", "timestamp", "trace_id"})
    on_repeat: Literal["stop", "escalate"] = "stop"


def _norm_value(value: Any, ignore: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _norm_value(v, ignore) for k, v in value.items() if k not in ignore}
    if isinstance(value, list):
        return [_norm_value(v, ignore) for v in value]
    if isinstance(value, str):
        return " ".join(unicodedata.normalize("NFKC", value).casefold().split())
    return value


def canonical_call(tool: str, arguments: dict[str, Any], ignore: frozenset[str] = frozenset()) -> str:
    return f"{tool}:{canonical_json(_norm_value(arguments, ignore))}"


def result_hash(result: ToolResultEvent) -> str:
    body = canonical_json({"ok": result.ok, "data": result.data, "error": result.error})
    return hashlib.sha1(body.encode("utf-8")).hexdigest()[:12]


def _family(tool: str) -> str:
    head, sep, _ = tool.partition("_")
    return head if sep else tool


@dataclass
class LoopGuard(BaseGuard):
    config: LoopConfig = field(default_factory=LoopConfig)
    name: str = "loop"
    # state (plain data)
    calls: deque = field(default_factory=deque)     # dicts: sig, tool, args, result, ok, error_type, useful
    seen_results: dict[str, int] = field(default_factory=dict)   # result hash -> times seen in window
    failed_by_family: dict[str, dict[str, str]] = field(default_factory=dict)   # family -> tool -> error type
    trips: int = 0

    # -- hooks -------------------------------------------------------------------
    def before_tool(self, ctx: GuardContext, call: ToolCallRequest) -> Verdict | None:
        cfg = self.config
        if call.name in cfg.exempt_tools:
            return None
        sig = canonical_call(call.name, call.arguments, cfg.ignore_fields)
        found = (self._outage(call) or self._identical(call, sig) or self._cycle(sig)
                 or self._near_duplicate(call, sig) or self._no_progress())
        if found is None:
            return None
        rule, message, numbers, action = found
        self.trips += 1
        if action == "block":
            return Verdict("block", rule, message, numbers)
        if self.trips == 1:
            return Verdict("hint", rule, message + " " + _ALTERNATIVES, numbers)
        numbers = {**numbers, "trips": self.trips}
        if cfg.on_repeat == "escalate":
            return Verdict("escalate", rule, message, numbers)
        return Verdict("stop", rule, f"{message} (trip {self.trips}; the hint was ignored)", numbers,
                       status=TerminalStatus.LOOP_ABORTED, finish_up=True)

    def after_tool(self, ctx: GuardContext, call: ToolCallRequest, result: ToolResultEvent) -> Verdict | None:
        cfg = self.config
        rh = result_hash(result)
        entry = {"sig": canonical_call(call.name, call.arguments, cfg.ignore_fields), "tool": call.name,
                 "args": canonical_json(_norm_value(call.arguments, cfg.ignore_fields)), "result": rh,
                 "ok": result.ok, "error_type": result.error_type,
                 # useful: a success with data this window has not seen yet
                 "useful": result.ok and not is_empty_data(result.data) and rh not in self.seen_results}
        self.calls.append(entry)
        self.seen_results[rh] = self.seen_results.get(rh, 0) + 1
        if len(self.calls) > cfg.window:
            old = self.calls.popleft()
            left = self.seen_results[old["result"]] - 1
            if left:
                self.seen_results[old["result"]] = left
            else:
                del self.seen_results[old["result"]]
        if not result.ok and result.source not in ("runner", "guard"):
            self.failed_by_family.setdefault(_family(call.name), {})[call.name] = result.error_type or "error"
        elif result.ok:
            self.failed_by_family.get(_family(call.name), {}).pop(call.name, None)
        return None

    # -- rules -----------------------------------------------------------------
    def _identical(self, call: ToolCallRequest, sig: str):
        same = [c for c in self.calls if c["sig"] == sig]
        if not same:
            return None
        last = same[-1]["result"]
        unchanged = sum(1 for c in same if c["result"] == last)
        if unchanged < self.config.max_identical:
            return None
        n = unchanged + 1
        return ("identical",
                f"{_ordinal(n)} identical call to {call.name} ({_short(call.arguments)}) with an unchanged result; "
                f"limit {self.config.max_identical}.",
                {"count": n, "limit": self.config.max_identical, "tool": call.name}, "hint")

    def _cycle(self, sig: str):
        """The incoming call would complete ``max_cycle_periods`` repeats of a
        period-p sequence (2 <= p <= max_period) whose results did not change."""
        seq = [c["sig"] for c in self.calls] + [sig]
        results = [c["result"] for c in self.calls]
        periods = self.config.max_cycle_periods
        for p in range(2, self.config.max_period + 1):
            need = p * periods
            if len(seq) < need:
                continue
            tail = seq[-need:]
            if len(set(tail[:p])) < 2:
                continue   # a period made of one call is the identical rule's business
            if not all(tail[i] == tail[i % p] for i in range(need)):
                continue
            res = results[-(need - 1):]
            if all(res[i] == res[i % p] for i in range(len(res))):
                tools = [s.split(":", 1)[0] for s in tail[:p]]
                return ("cycle",
                        f"cycle of period {p} ({' -> '.join(tools)}) about to complete its {_ordinal(periods)} "
                        f"round with unchanged results; limit {periods - 1}.",
                        {"period": p, "rounds": periods, "limit": periods - 1, "tools": " -> ".join(tools)}, "hint")
        return None

    def _near_duplicate(self, call: ToolCallRequest, sig: str):
        args = canonical_json(_norm_value(call.arguments, self.config.ignore_fields))
        similar = [c for c in self.calls
                   if c["tool"] == call.name and c["sig"] != sig and not c["useful"]
                   and fuzz.ratio(c["args"], args) >= self.config.similarity]
        if len(similar) < self.config.max_near_duplicates:
            return None
        n = len(similar) + 1
        return ("near_duplicate",
                f"{_ordinal(n)} similar call to {call.name} ({_short(call.arguments)}); the previous {n - 1} "
                f"brought no new result; limit {self.config.max_near_duplicates}.",
                {"count": n, "limit": self.config.max_near_duplicates, "tool": call.name}, "hint")

    def _no_progress(self):
        k = self.config.max_no_progress
        if len(self.calls) < k:
            return None
        tail = list(self.calls)[-k:]
        if len({c["result"] for c in tail}) == 1 and len({c["sig"] for c in tail}) > 1:
            return ("no_progress",
                    f"the last {k} different calls all returned the same result; limit {k - 1}.",
                    {"count": k, "limit": k - 1}, "hint")
        return None

    def _outage(self, call: ToolCallRequest):
        family = _family(call.name)
        failed = self.failed_by_family.get(family, {})
        if len(failed) < self.config.outage_tools:
            return None
        kinds = set(failed.values())
        if len(kinds) != 1:
            return None
        return ("outage",
                f"systemic outage: {len(failed)} {family} tools ({', '.join(sorted(failed))}) failed the same way "
                f"({kinds.pop()}); {call.name} is not called. Explain the outage to the user or use another source.",
                {"failed_tools": len(failed), "limit": self.config.outage_tools - 1, "family": family}, "block")

    # -- state -------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"calls": list(self.calls), "seen_results": dict(self.seen_results),
                "failed_by_family": {k: dict(v) for k, v in self.failed_by_family.items()}, "trips": self.trips}

    def load_state(self, state: dict[str, Any]) -> None:
        self.calls = deque(state.get("calls", []))
        self.seen_results = dict(state.get("seen_results", {}))
        self.failed_by_family = {k: dict(v) for k, v in state.get("failed_by_family", {}).items()}
        self.trips = int(state.get("trips", 0))


_ALTERNATIVES = ("Do not repeat it. Change the approach: check and correct the arguments, use another tool, "
                 "ask the user for the missing information, or explain the limitation and what you found so far.")


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _short(arguments: dict[str, Any]) -> str:
    text = canonical_json(arguments)
    return text if len(text) <= 80 else text[:77] + "..."
