"""The loop guard: identical calls, cycles, rewordings, no progress, outages,
and questions the user already refused.

Every tool call is described once (:mod:`._calls`: signature, target, result
hash, pending / transient flags) and folded into a few counters, so the cost
of a decision does not depend on the history (a bounded window of recent calls
is kept as plain data, so it checkpoints). What counts as *progress* decides
almost everything:

* an error is never progress; a *pending* status ("running", "queued") is
  neither progress nor a loop (it is waiting);
* a success with a result this window has not seen, and that is not empty,
  is progress;
* a success on a *target* the tool has not worked on yet (another id, path,
  page, recipient) is progress: batch work over many targets, pagination, reads
  of many files. For a read-only tool, the very same non-empty data returned
  for a new target is not (a page parameter the API ignores);
* a side-effecting tool (spec ``side_effect=True``, or a verb such as move,
  send, tag in its name) that succeeds with arguments not seen yet is progress
  even when it answers every call with the same acknowledgement.

Rules (each trip names the rule and its numbers):

* ``identical``: the same call (tool + canonical arguments) again while its
  result has not changed: allowed ``max_identical`` times, ``max_transient_retries``
  when it fails with a transient error (5xx, timeout, rate limit: a retry with
  backoff), ``max_polls`` when the answer is a pending status (polling).
* ``cycle``: the incoming call completes ``max_cycle_periods`` rounds of a
  period-2-to-4 sequence whose results did not change (A->B->A->B).
* ``near_duplicate``: ``max_near_duplicates`` calls of one tool in a row
  brought no progress (a keyword reworded again and again, guessed paths).
* ``no_progress``: ``max_no_progress`` different calls in a row returned the
  same result or the same error.
* ``outage``: ``outage_tools`` tools failed with the same error (type and
  text) within ``outage_window`` calls, whatever their names; a further call
  to one of them, or to a tool sharing a name prefix with them, is blocked.
* ``question_repeat``: the agent asks the user again (the same or a reworded
  question) what the user refused or did not answer.

The ladder (seed 002 section 3.3): the first trip of a kind is a hint telling
the model what it repeated and what else to do; the same trip again (or a
third trip of any kind) stops the run as ``loop_aborted`` (or escalates with
``on_repeat="escalate"``) after a finish-up request, so the user still gets an
answer. ``outage`` blocks the call instead, since calling a dead service again
only wastes time.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import i18n
from ..events import AgentMessage, ModelDecisionEvent, ToolResultEvent, UserMessage
from ..messages import DecisionKind, ToolCallRequest, canonical_json
from ..status import TerminalStatus
from . import _questions as Q
from ._base import BaseGuard, GuardContext, Verdict
from ._calls import (
    canonical_call,
    describe_call,
    empty,
    error_signature,
    is_ack,
    is_action_name,
    is_pending,
    is_transient,
    is_wait_name,
    result_hash,
)

__all__ = ["RULES", "LoopConfig", "LoopGuard", "canonical_call", "result_hash"]

RULES = ("identical", "cycle", "near_duplicate", "no_progress", "outage", "question_repeat")
_NORMAL, _TRANSIENT, _POLL = "n", "t", "p"
# entry fields in ``LoopGuard.calls`` (lists, so the state is JSON as is)
_SIG, _TOOL, _TARGET, _RESULT, _PROGRESS, _KIND, _INDEX = range(7)


@dataclass(frozen=True)
class LoopConfig:
    window: int = 30                   # calls remembered
    max_identical: int = 2             # an unchanged identical call may be made this many times
    max_transient_retries: int = 2     # retries of a call failing with a transient error (5xx, timeout, 429);
                                       # the next retry is blocked (a circuit breaker), not hinted
    max_polls: int = 10                # ... when it answered a pending status (OpenClaw warns at 10)
    max_cycle_periods: int = 2         # the call completing this many rounds of a cycle trips
    max_period: int = 4
    max_near_duplicates: int = 4       # calls of one tool in a row without progress
    max_no_progress: int = 5           # different calls in a row, same result
    outage_tools: int = 2              # tools failing with the same error that mean an outage
    outage_window: int = 10            # ... within this many calls
    max_question_repeats: int = 1      # refused asks of a question before asking it again trips
    max_question_asks: int = 2         # asks of a question, answered or not, before asking it again trips
    question_overlap: float = 0.4      # content overlap (0-1) that makes two questions the same
    max_hints: int = 2                 # distinct hints before any further trip stops
    rules: frozenset[str] = frozenset(RULES)   # the rules in force (all by default)
    exempt_tools: frozenset[str] = frozenset()
    ignore_fields: frozenset[str] = frozenset({"request_id", "timestamp", "trace_id"})
    on_repeat: Literal["stop", "escalate"] = "stop"


def _family(tool: str) -> str:
    head, sep, _ = tool.partition("_")
    return head if sep else ""


@dataclass
class LoopGuard(BaseGuard):
    config: LoopConfig = field(default_factory=LoopConfig)
    name: str = "loop"
    # -- state (plain data) ------------------------------------------------------
    calls: deque = field(default_factory=deque)            # entries, see _SIG.._INDEX
    seen_results: dict[str, int] = field(default_factory=dict)   # result hash -> calls in window
    targets: dict[str, int] = field(default_factory=dict)        # tool + target -> calls in window
    sigs: dict[str, list] = field(default_factory=dict)          # sig -> [result, unchanged, kind, first index]
    tool_streak: dict[str, int] = field(default_factory=dict)    # tool -> calls in a row without progress
    same_result: list = field(default_factory=lambda: ["", 0, False, ""])   # result, run, distinct, last sig
    failed: dict[str, list] = field(default_factory=dict)        # tool -> [error signature, call index]
    asked: list = field(default_factory=list)                    # [content words, refused or None]
    scanned: int = 0                                             # trajectory events read for questions
    count: int = 0                                               # calls recorded
    hinted: list = field(default_factory=list)                   # trip keys already hinted
    trips: int = 0

    def __post_init__(self) -> None:
        self._kinds: dict[str, tuple[bool, bool]] = {}
        self._pending: tuple[str, str, str] | None = None   # call id, sig, target from before_tool
        self._lang: str | None = None       # the run's language (i18n), read once
        self._said: str | None = None       # the trip being made, in the run's language (None: English)

    def _language(self, ctx: GuardContext) -> str:
        if self._lang is None:
            self._lang = i18n.run_language(ctx.trajectory)
        self._said = None
        return self._lang

    def _say(self, key: str, **values: Any) -> None:
        """Keep the model's text of the trip being made, in the run's language."""
        if self._lang and self._lang != "en" and i18n.has(self._lang, key):
            self._said = i18n.text(self._lang, key, **values)

    def localized(self, verdict: Verdict, lang: str) -> str | None:
        """The last trip (the one that stopped the run) as the model reads it."""
        return self._said if lang == self._lang else None

    # -- hooks -------------------------------------------------------------------
    def before_tool(self, ctx: GuardContext, call: ToolCallRequest) -> Verdict | None:
        cfg = self.config
        if call.name in cfg.exempt_tools:
            return None
        self._language(ctx)
        sig, target = describe_call(call.name, call.arguments, cfg.ignore_fields)
        self._pending = (call.id, sig, target)
        rules = cfg.rules
        found = self._outage(call.name) if "outage" in rules else None
        if found is not None:
            return Verdict("block", "outage", self._said or found[0], found[1])
        found = (("identical" in rules and self._identical(call, sig))
                 or ("cycle" in rules and self._cycle(sig))
                 or ("near_duplicate" in rules and self._near_duplicate(call))
                 or ("no_progress" in rules and self._no_progress()))
        return self._ladder(*found) if found else None

    def after_tool(self, ctx: GuardContext, call: ToolCallRequest, result: ToolResultEvent) -> Verdict | None:
        cfg = self.config
        tool = call.name
        if tool in cfg.exempt_tools:
            return None
        pending = self._pending
        if pending is not None and pending[0] == call.id:
            sig, target = pending[1], pending[2]
        else:
            sig, target = describe_call(tool, call.arguments, cfg.ignore_fields)
        self._pending = None
        rkey = result_hash(result)
        ok = result.ok
        action, wait = self._kind(ctx, tool)
        if ok:
            kind = _POLL if wait or is_pending(result.data) else _NORMAL
        else:
            kind = _TRANSIENT if is_transient(result) else _NORMAL
        tkey = f"{tool}\x00{target}" if target else ""
        if not ok or kind == _POLL:
            progress = False
        elif action:
            progress = sig not in self.sigs or rkey not in self.seen_results
        elif rkey not in self.seen_results and not empty(result):
            progress = True
        elif tkey and tkey not in self.targets:
            # a new target: progress, unless a read returned the very same data again
            progress = rkey not in self.seen_results or empty(result) or is_ack(result.data)
        else:
            progress = False

        index = self.count
        self.count += 1
        self.calls.append([sig, tool, tkey, rkey, progress, kind, index])
        self.seen_results[rkey] = self.seen_results.get(rkey, 0) + 1
        if tkey:
            self.targets[tkey] = self.targets.get(tkey, 0) + 1
        st = self.sigs.get(sig)
        if st is not None and st[0] == rkey:
            st[1] += 1
            st[2] = kind
        else:
            self.sigs[sig] = [rkey, 1, kind, index]
        if kind != _POLL:
            if progress:
                self.tool_streak[tool] = 0
                self.same_result = ["", 0, False, ""]
            else:
                self.tool_streak[tool] = self.tool_streak.get(tool, 0) + 1
                run = self.same_result
                if run[0] == rkey:
                    run[1] += 1
                    run[2] = run[2] or run[3] != sig
                    run[3] = sig
                else:
                    self.same_result = [rkey, 1, False, sig]
        if len(self.calls) > cfg.window:
            self._evict(self.calls.popleft())
        if not ok and result.executed:
            self.failed[tool] = [error_signature(result), index]
        elif ok:
            self.failed.pop(tool, None)
        return None

    def after_model(self, ctx: GuardContext, response: Any) -> Verdict | None:
        decision = getattr(response, "decision", None) or _last_decision(ctx)
        if decision is None or decision.kind != DecisionKind.QUESTION or "question_repeat" not in self.config.rules:
            return None
        self._read_questions(ctx)
        self._language(ctx)
        words = Q.content(decision.text)
        cfg = self.config
        similar = [q for q in self.asked if Q.overlap(words, frozenset(q[0])) >= cfg.question_overlap]
        refused = sum(1 for q in similar if q[1])
        if refused >= cfg.max_question_repeats:
            why, n, limit = "refused or left unanswered", refused, cfg.max_question_repeats
        elif len(similar) >= cfg.max_question_asks:
            why, n, limit = "asked and answered", len(similar), cfg.max_question_asks
        else:
            return None
        message = (f"this question (or a rewording of it) was already {why} {n} time(s); limit {limit}. "
                   "Do not ask it again: use the answers you have, offer a sensible default and go on with it, "
                   "or stop and explain what cannot be done without this information and what the user can do "
                   "instead.")
        self._say("loop.question_repeat", reason=i18n.QUESTION_REASONS.get(self._lang or "", {}).get(why, why),
                  count=n, limit=limit)
        return self._ladder("question_repeat", "question", message, {"count": n, "limit": limit, "reason": why})

    # -- the ladder ----------------------------------------------------------------
    def _ladder(self, rule: str, key: str, message: str, numbers: dict, first: str = "hint") -> Verdict:
        """The first trip of a kind gets ``first`` (a hint, or a block for a
        retry of a transiently failing call); the same trip again stops."""
        cfg = self.config
        self.trips += 1
        trip_key = f"{rule}:{key}"
        if trip_key not in self.hinted and len(self.hinted) < cfg.max_hints:
            self.hinted.append(trip_key)
            extra = (" " + i18n.text(self._lang or "en", "loop.alternatives")
                     if first == "hint" and rule != "question_repeat" else "")
            return Verdict(first, rule, (self._said or message) + extra, numbers)
        numbers = {**numbers, "trips": self.trips}
        if cfg.on_repeat == "escalate":
            return Verdict("escalate", rule, message, numbers)
        return Verdict("stop", rule, f"{message} (trip {self.trips}; the hint was ignored)", numbers,
                       status=TerminalStatus.LOOP_ABORTED, finish_up=True)

    # -- rules -----------------------------------------------------------------
    def _identical(self, call: ToolCallRequest, sig: str):
        st = self.sigs.get(sig)
        if st is None:
            return None
        cfg = self.config
        if st[2] == _TRANSIENT:
            if st[1] <= cfg.max_transient_retries:
                return None
            n = st[1] + 1
            self._say("loop.identical.transient", count=n, tool=call.name, args=_short(call.arguments),
                      previous=st[1], retries=cfg.max_transient_retries)
            return ("identical", sig,
                    f"{_ordinal(n)} attempt of {call.name} ({_short(call.arguments)}): the previous {st[1]} failed "
                    f"the same transient way; {cfg.max_transient_retries} retries allowed, this one is not made. "
                    "The service is down for now: say so, use another source, or suggest trying later.",
                    {"count": n, "limit": cfg.max_transient_retries + 1, "tool": call.name}, "block")
        limit = cfg.max_polls if st[2] == _POLL else cfg.max_identical
        if st[1] < limit:
            return None
        n = st[1] + 1
        what = " still pending" if st[2] == _POLL else ""
        self._say("loop.identical.poll" if st[2] == _POLL else "loop.identical", count=n, tool=call.name,
                  args=_short(call.arguments), limit=limit)
        return ("identical", sig,
                f"{_ordinal(n)} identical call to {call.name} ({_short(call.arguments)}) with an unchanged "
                f"result{what}; limit {limit}.",
                {"count": n, "limit": limit, "tool": call.name})

    def _cycle(self, sig: str):
        """The incoming call would complete ``max_cycle_periods`` rounds of a
        period-p sequence (2 <= p <= max_period) whose results did not change
        (a pending or transiently failing member is left to the identical rule)."""
        if sig not in self.sigs:
            return None                     # a call never seen in the window completes no cycle
        calls = self.calls
        have = len(calls)
        rounds = self.config.max_cycle_periods
        for p in range(2, self.config.max_period + 1):
            need = p * rounds
            if have < need - 1 or calls[-p][_SIG] != sig:
                continue
            base = have - (need - 1)        # tail[j] = calls[base + j]; tail[need - 1] is the incoming call
            tail = [calls[base + j] for j in range(need - 1)]
            if any(e[_KIND] != _NORMAL for e in tail):
                continue
            if len({e[_SIG] for e in tail[:p]}) < 2:
                continue                    # a period made of one call is the identical rule's business
            if all(tail[j][_SIG] == tail[j - p][_SIG] and tail[j][_RESULT] == tail[j - p][_RESULT]
                   for j in range(p, need - 1)):
                tools = [e[_TOOL] for e in tail[:p]]
                chain = " -> ".join(tools)
                self._say("loop.cycle", period=p, tools=chain, rounds=rounds, limit=rounds - 1)
                return ("cycle", "|".join(e[_SIG] for e in tail[:p]),
                        f"cycle of period {p} ({chain}) about to complete its {_ordinal(rounds)} round with "
                        f"unchanged results; limit {rounds - 1}.",
                        {"period": p, "rounds": rounds, "limit": rounds - 1, "tools": chain})
        return None

    def _near_duplicate(self, call: ToolCallRequest):
        streak = self.tool_streak.get(call.name, 0)
        limit = self.config.max_near_duplicates
        if streak < limit:
            return None
        n = streak + 1
        self._say("loop.near_duplicate", count=n, tool=call.name, args=_short(call.arguments), previous=streak,
                  limit=limit)
        return ("near_duplicate", call.name,
                f"{_ordinal(n)} call to {call.name} ({_short(call.arguments)}) in a row; the previous {streak} "
                f"brought no new result; limit {limit}.",
                {"count": n, "limit": limit, "tool": call.name})

    def _no_progress(self):
        result, run, distinct, _ = self.same_result
        k = self.config.max_no_progress
        if run < k or not distinct:
            return None
        what = "error" if result.startswith("!") else "result"
        self._say("loop.no_progress", count=run, limit=k - 1)
        return ("no_progress", "any",
                f"the last {run} different calls all returned the same {what}; limit {k - 1}.",
                {"count": run, "limit": k - 1})

    def _outage(self, tool: str):
        failed = self.failed
        if not failed:
            return None
        cfg = self.config
        horizon = self.count - cfg.outage_window
        own = failed.get(tool)
        family = _family(tool)
        signatures = {own[0]} if own else set()
        if family:
            signatures |= {f[0] for t, f in failed.items() if t != tool and _family(t) == family}
        for esig in signatures:
            group = sorted(t for t, f in failed.items() if f[0] == esig and f[1] >= horizon)
            if len(group) < cfg.outage_tools:
                continue
            if own is None or own[0] != esig:
                if not family or sum(1 for t in group if _family(t) == family) < cfg.outage_tools:
                    continue
            kind = esig.split("|", 1)[0]
            self._say("loop.outage", failed_tools=len(group), error_type=kind, tool=tool)
            return (f"systemic outage: {len(group)} tools ({', '.join(group)}) failed the same way ({kind}); "
                    f"{tool} is not called. Explain the outage to the user or use another source.",
                    {"failed_tools": len(group), "limit": cfg.outage_tools - 1, "error_type": kind})
        return None

    # -- helpers -------------------------------------------------------------------
    def _kind(self, ctx: GuardContext, tool: str) -> tuple[bool, bool]:
        """(side-effecting, a wait tool): the spec's ``side_effect`` when the run
        has specs, else the verb in the name; computed once per tool."""
        kind = self._kinds.get(tool)
        if kind is None:
            spec = next((s for s in ctx.tools if s.name == tool), None)
            kind = (bool(spec is not None and spec.side_effect) or is_action_name(tool), is_wait_name(tool))
            self._kinds[tool] = kind
        return kind

    def _evict(self, old: list) -> None:
        rkey, tkey = old[_RESULT], old[_TARGET]
        left = self.seen_results[rkey] - 1
        if left:
            self.seen_results[rkey] = left
        else:
            del self.seen_results[rkey]
        if tkey:
            left = self.targets[tkey] - 1
            if left:
                self.targets[tkey] = left
            else:
                del self.targets[tkey]
        st = self.sigs.get(old[_SIG])
        if st is not None and old[_INDEX] >= st[3]:
            st[1] -= 1
            if st[1] <= 0:
                del self.sigs[old[_SIG]]

    def _read_questions(self, ctx: GuardContext) -> None:
        """Fold the questions to the user and their replies since the last look."""
        events = ctx.trajectory.events
        for event in events[self.scanned:]:
            if isinstance(event, AgentMessage) and event.kind == "question":
                self.asked.append([sorted(Q.content(event.content)), None])
            elif isinstance(event, UserMessage) and self.asked and self.asked[-1][1] is None:
                self.asked[-1][1] = Q.is_refusal(event.content)
        self.scanned = len(events)

    # -- state -------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"calls": [list(c) for c in self.calls], "seen_results": dict(self.seen_results),
                "targets": dict(self.targets), "sigs": {k: list(v) for k, v in self.sigs.items()},
                "tool_streak": dict(self.tool_streak), "same_result": list(self.same_result),
                "failed": {k: list(v) for k, v in self.failed.items()},
                "asked": [[list(w), r] for w, r in self.asked], "scanned": self.scanned, "count": self.count,
                "hinted": list(self.hinted), "trips": self.trips}

    def load_state(self, state: dict[str, Any]) -> None:
        self.calls = deque(list(c) for c in state.get("calls", []))
        self.seen_results = dict(state.get("seen_results", {}))
        self.targets = dict(state.get("targets", {}))
        self.sigs = {k: list(v) for k, v in state.get("sigs", {}).items()}
        self.tool_streak = dict(state.get("tool_streak", {}))
        self.same_result = list(state.get("same_result", ["", 0, False, ""]))
        self.failed = {k: list(v) for k, v in state.get("failed", {}).items()}
        self.asked = [[list(w), r] for w, r in state.get("asked", [])]
        self.scanned = int(state.get("scanned", 0))
        self.count = int(state.get("count", 0))
        self.hinted = list(state.get("hinted", []))
        self.trips = int(state.get("trips", 0))


def _last_decision(ctx: GuardContext) -> ModelDecisionEvent | None:
    for event in reversed(ctx.trajectory.events[-8:]):
        if isinstance(event, ModelDecisionEvent):
            return event
    return None


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _short(arguments: dict[str, Any]) -> str:
    text = canonical_json(arguments)
    return text if len(text) <= 80 else text[:77] + "..."
