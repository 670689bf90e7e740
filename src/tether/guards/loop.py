"""The loop guard: identical calls, repeated side effects, retries past their
budget, pages past the end, cycles, rewordings, no progress, outages, and
questions the user already refused.

Every tool call is described once (:mod:`._calls`: signature in a compare form
that ignores key order, list order, Unicode width, punctuation and quote
style; target; listing; result key; pending / transient flags) and folded into
a few counters, so the cost of a decision does not depend on the history (a
bounded window of recent calls is kept as plain data, so it checkpoints).
What counts as *progress* decides almost everything:

* a *pending* status ("running", "处理中") from a read is neither progress nor
  a loop (it is waiting); a transient failure is the retry budget's business;
* any other failure with an error the window has not seen is progress (a
  validation error fixed, the next one reported);
* a success with a result this window has not seen, and that is not empty,
  is progress; so is a success on a *target* the tool has not worked on yet
  (another id, path, page, recipient), unless a read returned the very same
  non-empty data again (a page parameter the API ignores);
* a page past the end of a listing (after ``has_more: false`` or an empty
  page) that returns nothing new is not progress;
* a side-effecting tool (spec ``side_effect=True``, or the first verb in its
  name) is progress when it succeeds with arguments it has not succeeded with
  before, whatever it answers (a constant acknowledgement, a fresh id).

Rules (each trip names the rule and its numbers; docs/guards.md says why each
default is what it is):

* ``identical``: the same call again while its result has not changed:
  ``max_identical`` times, ``max_polls`` when the answer is a pending status
  (one hint at ``max_busy_polls`` when nothing waits between the polls).
* ``duplicate_action``: a side-effecting call that already succeeded with the
  same arguments, or a create of the same content under a name numbered anew.
* ``retry_budget``: transient failures of one tool in a row past
  ``max_transient_retries`` (paced) or ``max_immediate_retries`` (in quick
  succession): a hint after the failure that uses the budget up, never a
  block; the next attempt stops.
* ``past_end``: another page of a listing that ended and already answered a
  page past its end with nothing.
* ``cycle``: the incoming call completes ``max_cycle_periods`` rounds of a
  period-2-to-4 sequence whose results did not change (A->B->A->B), or a run
  of work started over (two repeats in a row with the same results).
* ``near_duplicate``: ``max_near_duplicates`` calls of one tool in a row
  brought no progress, or ``max_same_answer`` rewordings in a row got the very
  same answer.
* ``no_progress``: ``max_no_progress`` different calls in a row returned the
  same result or the same error.
* ``outage``: tools failing with the same error (type and text, the tool's
  name masked) within ``outage_window`` calls: a hint at
  ``outage_hint_tools``; a further call to one of ``outage_tools`` such tools,
  or to a tool sharing their name prefix, is blocked.
* ``question_repeat``: the agent asks the user again (the same or a reworded
  question) what the user refused, declined or did not answer.

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
from .._assess import is_empty_data
from ..events import AgentMessage, ModelDecisionEvent, ToolResultEvent, UserMessage
from ..messages import DecisionKind, ToolCallRequest, canonical_json
from ..status import TerminalStatus
from . import _questions as Q
from ._base import BaseGuard, GuardContext, Intervention
from ._calls import (
    canonical_call,
    describe_call,
    error_signature,
    is_ack,
    is_action_name,
    is_create_name,
    is_pending,
    is_submitted,
    is_transient,
    is_wait_name,
    page_end,
    result_hash,
    numbered_copy,
    volatile_pair,
)

__all__ = ["RULES", "LoopConfig", "LoopGuard", "canonical_call", "result_hash"]

RULES = ("identical", "duplicate_action", "retry_budget", "past_end", "cycle", "near_duplicate", "no_progress", "outage",
         "question_repeat")
_NORMAL, _TRANSIENT, _POLL = "n", "t", "p"
# entry fields in ``LoopGuard.calls`` (lists, so the state is JSON as is)
_SIG, _TOOL, _TARGET, _RESULT, _PROGRESS, _KIND, _INDEX = range(7)


@dataclass(frozen=True)
class LoopConfig:
    window: int = 30                   # calls remembered
    max_identical: int = 2             # an unchanged identical call may be made this many times
    max_transient_retries: int = 4     # retries of a tool failing transiently (5xx, timeout, 429): 5 attempts
                                       # in all, the upper end of SDK retry budgets (tether's HTTP client makes
                                       # 4, botocore's legacy mode 5). The failure that uses them up draws a
                                       # hint, never a block; the next attempt stops
    max_immediate_retries: int = 2     # ... of them made less than min_retry_gap_s after the failure with no
                                       # wait tool between: hammering a failing service (SDKs wait 0.5 s+)
    min_retry_gap_s: float = 0.5       # tether's HTTP client's first backoff; an LLM turn alone takes longer
    max_action_repeats: int = 1        # successful calls of a side-effecting tool with the same arguments
                                       # before calling it again trips (another ticket, message, charge)
    max_past_end: int = 1              # pages requested after a listing said it ended (has_more false, an
                                       # empty page) that returned nothing; the next page request trips
    max_polls: int = 10                # ... when it answered a pending status (OpenClaw warns at 10)
    max_busy_polls: int = 3            # ... unchanged pending answers in a row with no wait between the polls
                                       # (no wait tool, less than ``poll_interval_s`` apart)
    poll_interval_s: float = 5.0
    max_same_answer: int = 3           # calls of one read-only tool in a row, arguments reworded, that returned
                                       # the very same substantive data: the last one trips (after its result)
    outage_hint_tools: int = 3         # tools failing the same way (within outage_window) that draw a hint
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
    ignore_fields: frozenset[str] = frozenset({"request_id", "timestamp", "ts", "trace_id", "span_id", "nonce",
                                               "correlation_id", "idempotency_key", "attempt", "retry",
                                               "retry_count", "attempt_number"})
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
    acted: dict[str, int] = field(default_factory=dict)          # side-effecting sig -> successful calls
    retries: dict[str, list] = field(default_factory=dict)       # tool -> [transient failures in a row, last index,
                                                                 #          its time (s), immediate retries]
    waited: int = -1                                             # index of the last wait-tool call
    thinking_s: float = 0.0                                      # the agent's own model time so far (s)
    thought_scanned: int = 0                                     # trajectory events read for it
    series: dict[str, list] = field(default_factory=dict)        # listing (sig without paging) -> [ended, past]
    irrelevant: dict[str, list] = field(default_factory=dict)    # tool -> arguments found to change nothing
    last: dict[str, list] = field(default_factory=dict)          # tool -> [parts, result, same in a row] of its last call
    created: dict[str, list] = field(default_factory=dict)       # create tool -> [its last arguments, copies]
    polls: dict[str, list] = field(default_factory=dict)         # sig -> [unchanged polls without a wait, at seconds]

    def __post_init__(self) -> None:
        self._kinds: dict[str, tuple[bool, bool]] = {}
        self._pending: tuple | None = None  # call id and describe_call() from before_tool
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

    def localized(self, verdict: Intervention, lang: str) -> str | None:
        """The last trip (the one that stopped the run) as the model reads it."""
        return self._said if lang == self._lang else None

    def _describe(self, call: ToolCallRequest) -> tuple[str, str, str, dict]:
        ignore = self.config.ignore_fields
        extra = self.irrelevant.get(call.name) if self.irrelevant else None
        return describe_call(call.name, call.arguments, ignore | frozenset(extra) if extra else ignore)

    # -- hooks -------------------------------------------------------------------
    def before_tool(self, ctx: GuardContext, call: ToolCallRequest) -> Intervention | None:
        cfg = self.config
        if call.name in cfg.exempt_tools:
            return None
        if self._lang is None:
            self._language(ctx)
        self._said = None
        ignore = cfg.ignore_fields
        extra = self.irrelevant.get(call.name) if self.irrelevant else None
        described = describe_call(call.name, call.arguments, ignore | frozenset(extra) if extra else ignore)
        sig = described[0]
        self._pending = (call.id, *described)
        rules = cfg.rules
        found = self._outage(call.name) if self.failed and "outage" in rules else None
        if found is not None:
            return Intervention("block", "outage", self._said or found[0], found[1])
        seen = sig in self.sigs             # the rules about repeats need the call seen before
        found = (("retry_budget" in rules and self.retries and self._retry_spent(call))
                 or ("duplicate_action" in rules and ((sig in self.acted and self._duplicate_action(call, sig))
                                                    or (self.created and self._duplicate_create(call, described))))
                 or (seen and "identical" in rules and self._identical(call, sig))
                 or ("past_end" in rules and sig != described[2] and described[2] in self.series
                     and self._past_end(call, described))
                 or (seen and "cycle" in rules and (self._cycle(sig) or self._replay(call, sig)))
                 or ("near_duplicate" in rules and self.tool_streak.get(call.name, 0) >= cfg.max_near_duplicates
                     and self._near_duplicate(call))
                 or ("no_progress" in rules and self.same_result[1] >= cfg.max_no_progress and self._no_progress()))
        return self._ladder(*found) if found else None

    def after_tool(self, ctx: GuardContext, call: ToolCallRequest, result: ToolResultEvent) -> Intervention | None:
        cfg = self.config
        tool = call.name
        if tool in cfg.exempt_tools:
            return None
        pending = self._pending
        if pending is not None and pending[0] == call.id:
            sig, target, skey, parts = pending[1:]
        else:
            sig, target, skey, parts = self._describe(call)
        self._pending = None
        rkey = result_hash(result, call.arguments)
        ok = result.ok
        kinds = self._kinds.get(tool)
        action, wait = kinds if kinds is not None else self._kind(ctx, tool)
        index = self.count
        data = result.data
        if wait:
            kind = _POLL
            self.waited = index
        elif ok:
            kind = _NORMAL
            if not action and is_pending(data):
                if is_submitted(data, call.arguments):
                    action = True           # a message handed over for delivery ("queued"): sent, not polled
                else:
                    kind = _POLL
        else:
            kind = _TRANSIENT if is_transient(result) else _NORMAL
        tkey = f"{tool}\x00{target}" if target else ""
        nothing = ok and is_empty_data(data)
        listing = None if action or not ok else self.series.get(skey)
        if kind != _NORMAL:
            progress = False
        elif not ok:
            progress = rkey not in self.seen_results     # another error: the last one was fixed
        elif action:
            progress = sig not in self.acted
        elif listing is not None and listing[0] and (nothing or rkey in self.seen_results):
            progress = False                # a page past the end of a listing
            listing[1] += 1
        elif rkey not in self.seen_results and not nothing:
            progress = True
        elif tkey and tkey not in self.targets:
            # a new target: progress, unless a read returned the very same data again
            progress = rkey not in self.seen_results or nothing or is_ack(data)
        else:
            progress = False
        if ok and not action and kind == _NORMAL:
            if nothing or (skey != sig and page_end(data)):
                if listing is None:
                    listing = self.series[skey] = [True, 0]
                    _bound(self.series)
                listing[0] = True
            elif listing is not None and progress:
                listing[0], listing[1] = False, 0        # the end was not the end
            prev = self.last.get(tool)
            if prev is not None and prev[1] == rkey:
                sig = self._learn_irrelevant(tool, sig, parts, rkey, data, index, nothing)
            else:
                self.last[tool] = [parts, rkey, 1]
                if len(self.last) > _MAX_KEYS:
                    _bound(self.last)
        if ok and action:
            self.acted[sig] = self.acted.get(sig, 0) + 1
            _bound(self.acted)
            if is_create_name(tool):
                self._created(tool, parts)
        if kind == _POLL and not wait:
            self._poll(sig, rkey, self._agent_seconds(ctx))

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
        if kind == _NORMAL:
            if progress:
                self.tool_streak[tool] = 0
                # a new error is progress for the tool (the last one was fixed), and the first of a run
                self.same_result = ["", 0, False, ""] if ok else [rkey, 1, False, sig]
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
        elif ok and self.failed:
            self.failed.pop(tool, None)
        if kind == _TRANSIENT and result.executed:
            if "retry_budget" in cfg.rules:
                found = self._retry_budget(call, tool, index, self._agent_seconds(ctx))
                if found is not None:
                    return found
        elif self.retries and (ok or kind == _NORMAL):
            self.retries.pop(tool, None)
        if not ok and "outage" in cfg.rules and result.executed:
            found = self._outage_seen(tool)
            if found is not None:
                return self._ladder(*found)
        if ok and kind == _NORMAL and not action and "near_duplicate" in cfg.rules \
                and self.last.get(tool, (0, 0, 0))[2] >= cfg.max_same_answer:
            found = self._same_answer(call)
            if found is not None:
                return self._ladder(*found)
        return None

    def _poll(self, sig: str, rkey: str, at_s: float) -> None:
        """Count the unchanged pending answers of a poll that came without a wait
        before them (no wait tool call since the last poll, and less than
        ``poll_interval_s`` of wall clock)."""
        st = self.sigs.get(sig)
        p = self.polls.get(sig)
        unchanged = st is not None and st[0] == rkey and st[1] > 0
        if p is None or not unchanged:
            self.polls[sig] = [0, at_s, self.count]
            _bound(self.polls)
            return
        waited = self.waited > p[2] or at_s - p[1] >= self.config.poll_interval_s
        p[0] = 0 if waited else p[0] + 1
        p[1], p[2] = at_s, self.count

    def _same_answer(self, call: ToolCallRequest):
        """A read-only tool asked again in other words (the arguments changed) for
        the ``max_same_answer``-th time in a row returned the very same data."""
        last = self.last.get(call.name)
        if last is None or len(last) < 3:
            return None
        n, limit = last[2], self.config.max_same_answer
        if n < limit:
            return None
        self._say("loop.same_answer", tool=call.name, count=n)
        return ("near_duplicate", f"same:{call.name}",
                f"the last {n} calls to {call.name}, with reworded arguments, all returned the very same data; "
                f"limit {limit - 1}. Rewording will not find more: use what it returned (open a result, read the "
                "page) or answer with what you have.",
                {"count": n, "limit": limit - 1, "tool": call.name})

    def _outage_seen(self, tool: str):
        """After a failure: ``outage_hint_tools`` different tools have now failed with
        the same error within ``outage_window`` calls (the tool's name masked)."""
        own = self.failed.get(tool)
        if own is None:
            return None
        cfg = self.config
        horizon = self.count - cfg.outage_window
        group = sorted(t for t, f in self.failed.items() if f[0] == own[0] and f[1] >= horizon)
        if len(group) < cfg.outage_hint_tools:
            return None
        kind = own[0].split("|", 1)[0]
        self._say("loop.outage_seen", failed_tools=len(group), error_type=kind)
        return ("outage", own[0],
                f"systemic outage: {len(group)} tools ({', '.join(group)}) failed the same way ({kind}); do not "
                "call them again. Explain the outage to the user or use another source.",
                {"failed_tools": len(group), "limit": cfg.outage_hint_tools - 1, "error_type": kind})

    def after_model(self, ctx: GuardContext, response: Any) -> Intervention | None:
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
    def _ladder(self, rule: str, key: str, message: str, numbers: dict, first: str = "hint") -> Intervention:
        """The first trip of a kind gets ``first`` (a hint, or a block for a
        retry of a transiently failing call); the same trip again stops."""
        cfg = self.config
        self.trips += 1
        trip_key = f"{rule}:{key}"
        if trip_key not in self.hinted and len(self.hinted) < cfg.max_hints:
            self.hinted.append(trip_key)
            extra = (" " + i18n.text(self._lang or "en", "loop.alternatives")
                     if first == "hint" and rule != "question_repeat" else "")
            return Intervention(first, rule, (self._said or message) + extra, numbers)
        numbers = {**numbers, "trips": self.trips}
        if cfg.on_repeat == "escalate":
            return Intervention("escalate", rule, message, numbers)
        return Intervention("stop", rule, f"{message} (trip {self.trips}; the hint was ignored)", numbers,
                       status=TerminalStatus.LOOP_ABORTED, finish_up=True)

    # -- rules -----------------------------------------------------------------
    def _identical(self, call: ToolCallRequest, sig: str):
        st = self.sigs.get(sig)
        if st is None or st[2] == _TRANSIENT:
            return None                     # a transient failure is the retry budget's business
        cfg = self.config
        limit = cfg.max_polls if st[2] == _POLL else cfg.max_identical
        busy = self.polls.get(sig, (0,))[0] if st[2] == _POLL else 0
        if busy >= cfg.max_busy_polls and st[1] > busy and f"identical:busy:{sig}" not in self.hinted:
            # polled again and again without waiting: one hint, then the poll limit as usual
            self._say("loop.identical.poll", count=st[1] + 1, tool=call.name, args=_short(call.arguments),
                      limit=busy)
            return ("identical", f"busy:{sig}",
                    f"{_ordinal(st[1] + 1)} poll of {call.name} ({_short(call.arguments)}) with the same pending "
                    f"answer and no wait between the last {busy + 1}; wait (a sleep tool, or longer) before the "
                    "next one, or do something else meanwhile.",
                    {"count": st[1] + 1, "limit": busy, "tool": call.name})
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

    def _duplicate_action(self, call: ToolCallRequest, sig: str):
        """A side-effecting call that already succeeded with these arguments: doing it
        again makes another ticket, message or charge, whatever id it returns."""
        done = self.acted.get(sig, 0)
        limit = self.config.max_action_repeats
        if done < limit:
            return None
        self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=done)
        return ("duplicate_action", sig,
                f"{call.name} ({_short(call.arguments)}) already succeeded {done} time(s) with these arguments; "
                "calling it again repeats the side effect (another record, message or charge). Use the result "
                "you have; if it must be done again, say why first.",
                {"count": done + 1, "limit": limit, "tool": call.name})

    def _created(self, tool: str, parts: dict) -> None:
        """Remember the last successful create of a tool (its arguments) and how
        many numbered copies of it followed."""
        last = self.created.get(tool)
        copy = last is not None and self._copy_of(last[0], parts)
        self.created[tool] = [dict(parts), last[1] + 1 if copy else 1]
        _bound(self.created)

    @staticmethod
    def _copy_of(before: dict, parts: dict) -> bool:
        """The same content (at least ``_MIN_CONTENT`` characters of identical
        arguments) under a name numbered anew."""
        if before.keys() != parts.keys():
            return False
        differ = [k for k in parts if before[k] != parts[k]]
        same = sum(len(parts[k]) for k in parts if k not in differ)
        return bool(differ) and same >= _MIN_CONTENT and all(numbered_copy(before[k], parts[k]) for k in differ)

    def _duplicate_create(self, call: ToolCallRequest, described: tuple):
        """A create whose content already made an object, under a name that differs
        only in a number (``changes/1.5.46 (1).md``, branch ``updates-2``): another
        copy of the same thing, whatever id comes back."""
        last = self.created.get(call.name)
        if last is None or not self._copy_of(last[0], described[3]):
            return None
        self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=last[1])
        return ("duplicate_action", f"create:{call.name}",
                f"{call.name} ({_short(call.arguments)}) creates the same content again ({_ordinal(last[1] + 1)} "
                "time), only its name numbered anew: another copy, not new work. Use the one already created.",
                {"count": last[1] + 1, "limit": 1, "tool": call.name})

    def _past_end(self, call: ToolCallRequest, described: tuple):
        """Another page of a listing that already said it ended (``has_more: false``,
        an empty page) and answered the pages after that with nothing."""
        sig, _, skey, _ = described
        if sig == skey:
            return None                     # no paging argument: not a page request
        listing = self.series.get(skey)
        limit = self.config.max_past_end
        if listing is None or not listing[0] or listing[1] < limit:
            return None
        self._say("loop.past_end", tool=call.name, args=_short(call.arguments), count=listing[1])
        return ("past_end", skey,
                f"{call.name} ({_short(call.arguments)}): the listing already ended (no more pages) and "
                f"{listing[1]} page(s) requested after its end returned nothing new; limit {limit}. "
                "The results are complete: use what the earlier pages returned.",
                {"count": listing[1] + 1, "limit": limit, "tool": call.name})

    def _retry_budget(self, call: ToolCallRequest, tool: str, index: int, at_s: float) -> Intervention | None:
        """After a transient failure: the transient failures of this tool in a row
        (whatever its arguments: a backoff or attempt counter in them changes
        nothing) against the budget. A retry made less than ``min_retry_gap_s``
        after the last failure with no wait tool between hammers the service and
        counts against ``max_immediate_retries``; the others against
        ``max_transient_retries``. Within the budget nothing is said; the failure
        that uses it up draws a hint (never a block); the next attempt stops."""
        cfg = self.config
        r = self.retries.get(tool)
        if r is None:
            r = self.retries[tool] = [0, index, at_s, 0]
            _bound(self.retries)
        elif self.waited <= r[1] and at_s - r[2] < cfg.min_retry_gap_s:
            r[3] += 1
        r[0] += 1
        r[1], r[2] = index, at_s
        retried = r[0] - 1
        if retried < cfg.max_transient_retries and r[3] < cfg.max_immediate_retries:
            return None
        hammering = r[3] >= cfg.max_immediate_retries
        limit = cfg.max_immediate_retries if hammering else cfg.max_transient_retries
        how = " in quick succession" if hammering else ""
        self._say("loop.retry_budget", tool=call.name, args=_short(call.arguments), count=r[0], retries=retried,
                  limit=limit)
        found = ("retry_budget", tool,
                 f"{call.name} ({_short(call.arguments)}) failed the same transient way {r[0]} times; "
                 f"{retried} retries{how} used the budget of {limit}. Do not retry it again now: "
                 "tell the user the service is failing, use another source, or suggest trying later.",
                 {"count": r[0], "limit": limit, "tool": call.name})
        return self._ladder(*found)

    def _retry_spent(self, call: ToolCallRequest):
        """An attempt at a tool whose retry budget was used up and hinted: the ladder's stop."""
        if f"retry_budget:{call.name}" not in self.hinted or call.name not in self.retries:
            return None
        r = self.retries[call.name]
        return ("retry_budget", call.name,
                f"{call.name} ({_short(call.arguments)}): {r[0]} transient failures in a row and the retry budget "
                "is used up; this attempt is not made.",
                {"count": r[0] + 1, "limit": r[0] - 1, "tool": call.name})

    def _learn_irrelevant(self, tool: str, sig: str, parts: dict, rkey: str, data: Any, index: int,
                          nothing: bool) -> str:
        """Two calls of a read-only tool in a row that differ only in arguments whose
        values differ only in digits (a counter, a timestamp, a request uuid) and
        return the very same substantive data: those arguments change nothing, and
        the calls are the same call. Returns the signature to record the call under."""
        prev = self.last.get(tool)
        same = prev is not None and prev[1] == rkey and not nothing and not is_ack(data)
        self.last[tool] = [parts, rkey, (prev[2] if len(prev) > 2 else 1) + 1 if same and prev[0] != parts else 1]
        _bound(self.last)
        if not same:
            return sig
        before = prev[0]
        diff = [k for k in before.keys() | parts.keys() if before.get(k) != parts.get(k)]
        if not 1 <= len(diff) <= 2 or not all(volatile_pair(before.get(k), parts.get(k)) for k in diff):
            return sig
        known = self.irrelevant.setdefault(tool, [])
        known += [k for k in diff if k not in known]
        _bound(self.irrelevant)
        reduced = f"{tool}:{','.join(f'{k}={v}' for k, v in parts.items() if k not in known)}"
        st = self.sigs.get(reduced)
        if st is None or st[0] != rkey:
            self.sigs[reduced] = [rkey, 1, _NORMAL, index]   # the earlier call, now under the reduced signature
        return reduced

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

    def _replay(self, call: ToolCallRequest, sig: str):
        """A run of work started over: this call and the one before it both repeat
        earlier calls (other calls in between) that got the very same results."""
        st = self.sigs.get(sig)
        if st is None or st[2] != _NORMAL or st[1] < 1 or not self.calls:
            return None
        prev = self.calls[-1]
        if prev[_SIG] == sig or prev[_KIND] != _NORMAL or prev[_PROGRESS]:
            return None
        pst = self.sigs.get(prev[_SIG])
        if pst is None or pst[1] < 2 or pst[0] != prev[_RESULT]:
            return None
        self._say("loop.replay", tool=call.name)
        return ("cycle", "replay",
                f"{call.name} ({_short(call.arguments)}) and the call before it repeat earlier calls that got the "
                "very same results: the work is being started over. Use what those calls returned and go on "
                "from where you were.",
                {"period": 0, "rounds": 2, "limit": 1, "tools": f"{prev[_TOOL]} -> {call.name}"})

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

    def _agent_seconds(self, ctx: GuardContext) -> float:
        """The time the agent's own model spent on the wire so far (the recorded
        attempts of its decisions): what "a retry made in quick succession" and "a poll
        with no wait" are measured in. Not the wall clock, and not the time of a model
        that runs in-process (a policy, a scripted or function model: 0): a loaded
        machine or other concurrent trials must never change a verdict."""
        events = ctx.trajectory.events
        for event in events[self.thought_scanned:]:
            if isinstance(event, ModelDecisionEvent) and event.role == "agent" and event.attempts:
                self.thinking_s += max(0.0, event.latency_ms) / 1000
        self.thought_scanned = len(events)
        return self.thinking_s

    def _read_questions(self, ctx: GuardContext) -> None:
        """Fold the questions to the user and their replies since the last look."""
        events = ctx.trajectory.events
        for event in events[self.scanned:]:
            if isinstance(event, AgentMessage) and event.kind == "question":
                if self.asked and self.asked[-1][1] is None:
                    self.asked[-1][1] = True        # asked again before any reply: left unanswered
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
                "hinted": list(self.hinted), "trips": self.trips, "acted": dict(self.acted),
                "retries": {k: list(v) for k, v in self.retries.items()}, "waited": self.waited,
                "thinking_s": self.thinking_s, "thought_scanned": self.thought_scanned,
                "series": {k: list(v) for k, v in self.series.items()},
                "irrelevant": {k: list(v) for k, v in self.irrelevant.items()},
                "last": {k: [dict(v[0]), *v[1:]] for k, v in self.last.items()},
                "polls": {k: list(v) for k, v in self.polls.items()},
                "created": {k: [dict(v[0]), v[1]] for k, v in self.created.items()}}

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
        self.acted = dict(state.get("acted", {}))
        self.retries = {k: list(v) for k, v in state.get("retries", {}).items()}
        self.waited = int(state.get("waited", -1))
        self.thinking_s = float(state.get("thinking_s", 0.0))
        self.thought_scanned = int(state.get("thought_scanned", 0))
        self.series = {k: list(v) for k, v in state.get("series", {}).items()}
        self.irrelevant = {k: list(v) for k, v in state.get("irrelevant", {}).items()}
        self.last = {k: [dict(v[0]), *v[1:]] for k, v in state.get("last", {}).items()}
        self.polls = {k: list(v) for k, v in state.get("polls", {}).items()}
        self.created = {k: [dict(v[0]), v[1]] for k, v in state.get("created", {}).items()}


_MIN_CONTENT = 16   # characters of content that make two creates copies of one thing


_MAX_KEYS = 512     # per-signature and per-tool maps: the oldest entries go first past this size


def _bound(mapping: dict) -> None:
    """Past ``_MAX_KEYS`` entries keep the newer half (amortised: deleting the
    oldest entry one at a time makes a dict's first entry ever slower to find)."""
    if len(mapping) > _MAX_KEYS:
        newer = list(mapping.items())[-(_MAX_KEYS // 2):]
        mapping.clear()
        mapping.update(newer)


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
