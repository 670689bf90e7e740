"""The loop guard: identical calls, repeated side effects, retries past their
budget, pages past the end, cycles, rewordings, no progress, outages, and
questions the user already refused.

Every tool call is described once (:mod:`._calls`: signature in a compare form
that ignores key order, list order, Unicode width, punctuation and quote
style; target; listing; result key; pending / transient flags) and folded into
a few counters, so the cost of a decision does not depend on the history (a
bounded window of recent calls is kept as plain data, so it checkpoints).
What counts as *progress* decides almost everything:

* a *pending* status ("running", "处理中") from a read, a call repeated after a
  wait tool, a scroll that says more follows, a call asking what is new since
  a time, and an error saying "not ready yet" are neither progress nor a loop
  (they are waiting); a transient failure is the retry budget's business;
* any other failure with an error the window has not seen is progress (a
  validation error fixed, the next one reported: short numbers such as line
  numbers are part of the error);
* a success with a result this window has not seen, and that is not empty,
  is progress; so is a success on a *target* the tool has not worked on yet
  (another id, path, page, recipient), unless a read returned the very same
  non-empty data again (a page parameter the API ignores);
* a page past the end of a listing (``has_more: false``, a null or unchanged
  next cursor, the last page number, an empty page) that returns nothing new
  is not progress;
* a side-effecting tool (spec ``side_effect=True``, the first verb in its
  name, an HTTP write method, or the same call answered under a fresh id) is
  progress when it succeeds with arguments it has not succeeded with before,
  whatever it answers (a constant acknowledgement, a fresh id);
* a check repeated after something that is not a read made progress (an edit
  between two builds) is not a repeat, unless it keeps failing the same way.

Rules (each trip names the rule and its numbers; docs/guards.md says why each
default is what it is):

* ``identical``: the same call again while its result has not changed and
  nothing else progressed: ``max_identical`` times, ``max_polls`` when it is
  waiting; after its result, a 3rd call answered as the 2nd, or a check that
  failed the same way ``max_unchanged`` times across other work, or one
  failing the same way again after a detour that failed too
  (``max_same_failures``); a call a person refused (or left unapproved) made
  again.
* ``duplicate_action``: a side-effecting call that already succeeded with the
  same arguments; a create of the same content under a name numbered anew;
  the same call answered under a fresh id; a send that rewords the last send
  to the same place (``resend_similarity``) or changes only a counter; the
  ``max_sends_in_a_row``-th message in a row to one place in other words.
* ``retry_budget``: transient failures of one tool in a row: a hint after the
  ``retry_hint_after``-th when they are the very same failure and nothing shows
  a backoff (a wait tool, a growing Retry-After or delay argument), nothing else within
  ``max_transient_retries`` retries (never a block or a stop), the attempt
  after them stops; in quick succession ``max_immediate_retries``, a hint,
  then a stop.
* ``past_end``: another page of a listing that ended and already answered a
  page past its end with nothing; ``max_empty_pages`` empty pages in a row
  that still promise more.
* ``cycle``: the incoming call completes ``max_cycle_periods`` rounds of a
  period-2-to-4 sequence whose results did not change (A->B->A->B), or a run
  of work started over (two repeats in a row with the same results); an
  answer that comes back (A->B->A: an error after another error, a toggle);
  an error that comes back after other errors on one target (hint only).
* ``near_duplicate``: ``max_near_duplicates`` calls of one tool in a row
  brought no progress, or ``max_same_answer`` rewordings in a row (the same
  resources named) got the very same answer.
* ``no_progress``: ``max_no_progress`` different calls in a row returned the
  same result or the same error; one tool failing ``max_same_error`` times in a
  row with one error on one target, other arguments changed (hint only).
* ``outage``: tools failing with the same error (type and text, the tool's
  name masked) within ``outage_window`` calls: a hint at
  ``outage_hint_tools``; a further call to one of ``outage_tools`` such tools,
  or to a tool sharing their name prefix, is blocked (until a wait tool ran).
* ``question_repeat``: the agent asks the user again (the same or a reworded
  question) what the user refused, declined or did not answer; a question
  asked twice already; any answered question asked again after another one
  already was (``max_reasks``).

The ladder (seed 002 section 3.3): the first trip of a kind is a hint telling
the model what it repeated and what else to do; the same trip again, or a trip
of any rule on a call a hint was already about, with nothing new read since the
hint (and, after a hint given on a result, one more call), stops the run as
``loop_aborted`` (or escalates with ``on_repeat="escalate"``) after a
finish-up request, so the user still gets an answer. A trip about other calls
is never a stop, whatever came before. ``outage`` blocks the call instead, since calling a dead service again
only wastes time.
"""

from __future__ import annotations

from collections import deque
from rapidfuzz.fuzz import token_sort_ratio as _similarity
from dataclasses import dataclass, field
import re
from typing import Any, Literal

from .. import i18n
from .._assess import is_empty_data
from ..events import AgentMessage, ModelDecisionEvent, ToolResultEvent, UserMessage
from ..messages import DecisionKind, ToolCallRequest, canonical_json
from ..status import TerminalStatus
from . import _questions as Q
from ._evidence import (asks_for_information, carries_idempotency_key, content_units, cursor_resent, delay_asked,
                        is_watch_name, offset_end, only_shape_differs, pending_within, retry_after_s,
                        transient_failure, without_stamps)
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
    is_wait_name,
    waits_in,
    no_such_tool,
    is_write_call,
    is_read_name,
    is_not_ready,
    flat_answer,
    asks_since,
    looks_failed,
    is_user_refusal,
    split_free,
    names_resource,
    id_split,
    page_state,
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
    retry_hint_after: int = 3          # transient failures of a tool in a row, with no wait between them, that
                                       # draw a hint (never a block): one past the usual 3-attempt SDK default
                                       # (crush, hermes, openai-python). Retries with a wait between are left
                                       # alone until the budget below is used up
    max_transient_retries: int = 4     # retries of a tool failing transiently (5xx, timeout, 429): 5 attempts
                                       # in all, the upper end of SDK retry budgets (tether's HTTP client makes
                                       # 4, botocore's legacy mode 5). No attempt within them is blocked or
                                       # stopped; the attempt after the budget stops
    max_immediate_retries: int = 2     # ... of them made less than min_retry_gap_s after the failure with no
                                       # wait tool between: hammering a failing service (SDKs wait 0.5 s+)
    min_retry_gap_s: float = 0.5       # tether's HTTP client's first backoff; an LLM turn alone takes longer
    resend_similarity: float = 90.0    # rapidfuzz ratio (0-100) over the free text of two sends of one tool to the
                                       # same place, at or above which the second rewords the first
    max_sends_in_a_row: int = 3        # successful sends of one tool to the same place (the same arguments but
                                       # the free text) with no other call between: the 3rd is a follow-up to a
                                       # follow-up nobody answered (a chat reply in two parts is 2)
    max_action_repeats: int = 1        # successful calls of a side-effecting tool with the same arguments
                                       # before calling it again trips (another ticket, message, charge)
    max_past_end: int = 1              # pages requested after a listing said it ended (has_more false, an
                                       # empty page) that returned nothing; the next page request trips
    max_empty_pages: int = 3           # empty pages in a row that still promise more (has_more: true) before the
                                       # listing counts as ended: 2 happen (openai-node follows cursors through
                                       # empty pages), the 3rd is a walk that will not end
    max_unchanged: int = 3             # calls of one call in a row that failed the same way (an error, or a
                                       # success reporting one: exit code, errors) although other work changed
                                       # things between them (a build failing the same way after two fixes)
    max_polls: int = 10                # ... when it answered a pending status (OpenClaw warns at 10)
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
    max_reasks: int = 1                # questions asked again in a run (a slip) before another one asked again trips
    max_question_asks: int = 2         # asks of a question, answered or not, before asking it again trips
    question_overlap: float = 0.4      # content overlap (0-1) that makes two questions the same
    max_same_failures: int = 2         # the same call failing the same way (not transiently) with no success of
                                       # any call between, after another call was tried: the 2nd draws a hint
                                       # (a failed call changed nothing); in a row, one more
    max_same_error: int = 3            # calls of one tool in a row, arguments changed, failing with the same error
    stop_after_hint: int = 1           # calls made after a hint given on a result before the same loop may stop
                                       # the run (not the very next call); a hint before a call lets the next
                                       # trip stop. Either way nothing may have come back new since the hint
    max_hints: int = 3                 # distinct hints in a run; a trip of yet another kind says nothing (only the
                                       # same trip again, after its hint, stops)
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
    hinted_sigs: list = field(default_factory=list)              # the calls those hints were about
    trips: int = 0
    acted: dict[str, int] = field(default_factory=dict)          # side-effecting sig -> successful calls
    retries: dict[str, list] = field(default_factory=dict)       # tool -> [transient failures in a row, last index,
                                                                 #          its time (s), immediate retries, index of
                                                                 #          its last backoff, Retry-After asked, delay
                                                                 #          set by the call, its last failure, all
                                                                 #          failures alike]
    waited: int = -1                                             # index of the last wait-tool call
    thinking_s: float = 0.0                                      # the agent's own model time so far (s)
    thought_scanned: int = 0                                     # trajectory events read for it
    series: dict[str, list] = field(default_factory=dict)        # listing (sig without paging) -> [ended, past]
    irrelevant: dict[str, list] = field(default_factory=dict)    # tool -> arguments found to change nothing
    last: dict[str, list] = field(default_factory=dict)          # tool -> [parts, result, same in a row] of its last call
    created: dict[str, list] = field(default_factory=dict)       # create tool -> [its last arguments, copies]
    shapes: dict[str, dict] = field(default_factory=dict)        # sig -> its last answer, a small dict (fresh ids)
    sent: dict[str, list] = field(default_factory=dict)          # side-effecting tool -> [parts, free, rest] of its
                                                                 # last success
    refusals: list = field(default_factory=list)                 # signatures of calls a person refused
    reasked: int = 0                                             # questions asked again so far
    progressed: int = 0                                          # calls so far that made progress
    heard: int = -1                                              # trajectory events read for user replies
    novel: int = 0                                               # calls so far that read a result the window had
                                                                 # not seen (an action's receipt is not one)
    hint_marks: dict[str, list] = field(default_factory=dict)    # hinted trip key or call -> [count, novel] then
    units: dict[str, list] = field(default_factory=dict)         # sig -> what its answers said (content units)
    page_fails: dict[str, list] = field(default_factory=dict)    # tool -> [listing, sig, error] of its last page
                                                                 #          that failed transiently
    err_runs: dict[str, list] = field(default_factory=dict)      # tool -> [its last error, failures in a row with it,
                                                                 #          their target, the run's errors]

    def __post_init__(self) -> None:
        self._kinds: dict[str, tuple[bool, bool]] = {}
        self._pending: tuple | None = None  # call id and describe_call() from before_tool
        self._tripped: str | None = None    # the call id before_tool tripped on
        self._lang: str | None = None       # the run's language (i18n), read once
        self._said: str | None = None       # the trip being made, in the run's language (None: English)
        self._sig = ""                      # the signature of the call being decided on
        self._args: dict | None = None      # ... and its arguments
        self._tool = ""                     # ... and its tool
        self._in_after = False              # deciding after a result (not before a call)
        self._answers: dict[str, Any] = {}  # sig -> its last answer as returned (not state: compared on a repeat)

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
        tool = call.name                    # read once: an attribute of a pydantic model is slow to read
        if tool in cfg.exempt_tools:
            return None
        if self._lang is None:
            self._language(ctx)
        self._said = None
        self._in_after = False
        ignore = cfg.ignore_fields
        extra = self.irrelevant.get(tool) if self.irrelevant else None
        described = describe_call(tool, call.arguments, ignore | frozenset(extra) if extra else ignore)
        sig = described[0]
        self._pending = (call.id, *described)
        self._sig, self._tool = sig, tool
        rules = cfg.rules
        found = self._outage(tool) if self.failed and "outage" in rules else None
        if found is not None:
            self._tripped = call.id
            return Intervention("block", "outage", self._said or found[0], found[1])
        seen = sig in self.sigs             # the rules about repeats need the call seen before
        found = (("retry_budget" in rules and self.retries and self._retry_spent(call))
                 or ("duplicate_action" in rules and ((sig in self.acted and self._duplicate_action(call, sig))
                                                    or (self.created and self._duplicate_create(call, described))
                                                    or (tool in self.sent and self._resend(call, described))))
                 or ("identical" in rules and sig in self.refusals and self._refused_again(call))
                 or (seen and "identical" in rules and self._identical(call, sig))
                 or ("past_end" in rules and sig != described[2] and described[2] in self.series
                     and self._past_end(call, described))
                 or (seen and "cycle" in rules and (self._cycle(sig) or self._replay(call, sig)))
                 or ("near_duplicate" in rules and self.tool_streak.get(tool, 0) >= cfg.max_near_duplicates
                     and self._near_duplicate(call))
                 or ("no_progress" in rules and self.same_result[1] >= cfg.max_no_progress and self._no_progress()))
        if not found:
            return None
        self._tripped = call.id
        return self._ladder(*found)

    def after_tool(self, ctx: GuardContext, call: ToolCallRequest, result: ToolResultEvent) -> Intervention | None:
        cfg = self.config
        self._in_after = True               # a hint given now is on a result (before_tool and after_model reset it)
        tool = call.name
        if tool in cfg.exempt_tools:
            return None
        args, call_id = call.arguments, call.id     # read once: an attribute of a pydantic model is slow to read
        pending = self._pending
        if pending is not None and pending[0] == call_id:
            sig, target, skey, parts = pending[1:]
        else:
            sig, target, skey, parts = self._describe(call)
        self._pending = None
        self._sig, self._tool = sig, tool
        self._args = args
        tripped, self._tripped = self._tripped == call_id, None   # this call was already tripped on
        rkey = result_hash(result, args)
        ok = result.ok
        kinds = self._kinds.get(tool)
        action, wait, reads = kinds if kinds is not None else self._kind(ctx, tool)
        if not wait and not action and not reads and waits_in(args):
            wait = True                     # a command that sleeps first: a wait, and what it runs a poll
        if not action and "method" in args:
            action = is_write_call(args)
        index = self.count
        data = result.data
        st = self.sigs.get(sig)
        if ok and not action and not wait:
            if st is None:                  # a first call: its answer is kept as is, compared only on a repeat
                answers = self._answers
                answers[sig] = data
                if len(answers) > 128:
                    _bound(answers, 64)     # amortised: the newer half stays
            else:
                rkey = self._known_content(sig, st, rkey, data)
        fresh = None
        if ok and not wait and not reads and type(data) is dict and len(data) <= 16 and flat_answer(data):
            # the answer is kept as is (a small flat dict: JSON in a checkpoint) until the same call comes
            # again; only then are the two split into identifiers and the rest (the split costs more)
            before = self.shapes.get(sig) if st is not None else None
            self.shapes[sig] = dict(data)
            if len(self.shapes) > _MAX_KEYS:
                _bound(self.shapes)
            if before is not None and rkey != st[0]:
                shape = id_split(without_stamps(data), cfg.ignore_fields)
                earlier = id_split(without_stamps(before), cfg.ignore_fields)
                if shape is not None and earlier is not None and earlier[0] == shape[0] and earlier[1] != shape[1] \
                        and self._quiet_since(st, tool):
                    # nothing else happened between: not a re-read after a change
                    fresh = earlier[1]          # the same call made another one of something: a side effect
                    action = True
                    if sig not in self.acted:
                        self.acted[sig] = 1
        if wait:
            kind = _POLL
            self.waited = index
        elif ok:
            kind = _NORMAL
            if action:
                pass
            elif is_pending(data) or (st is not None and pending_within(data)):   # a poll is a repeat
                if is_submitted(data, args):
                    action = True           # a message handed over for delivery ("queued"): sent, not polled
                else:
                    kind = _POLL
            elif st is not None and ((sig == skey and type(data) is dict and page_state(data) == -1)
                                     or asks_since(args)):
                # a call that walks on by itself (a scroll) and says more follow; "what is new since 09:00"
                kind = _POLL
        else:
            kind = _TRANSIENT if transient_failure(result) else _POLL if is_not_ready(result) else _NORMAL
        tkey = f"{tool}\x00{target}" if target else ""
        nothing = ok and (is_empty_data(data) or (skey != sig and type(data) is dict and [] in data.values()
                                                   and _no_items(data)))
        past = False
        capped = None
        reading = ok and not action and kind == _NORMAL
        listing = self.series.get(skey) if ok and not action else None
        state = page_state(data, args) if reading and (nothing or skey != sig) else 0
        if state == 0 and reading and skey != sig and offset_end(data, args):
            state = 1                       # an offset at or past the total the answer reports
        elif state == -2 and cursor_resent(data, args):
            state = 2                       # the cursor sent where the API does not read it comes back
        if kind != _NORMAL:
            progress = False
        elif not ok:
            progress = rkey not in self.seen_results     # another error: the last one was fixed
        elif action:
            progress = sig not in self.acted
        elif listing is not None and listing[0] and (nothing or rkey in self.seen_results):
            progress = False                # a page past the end of a listing
            listing[1] += 1
            past = sig != skey
        elif nothing and state > 1:
            progress = False                # an empty page whose next cursor is the one sent: stuck
        elif rkey not in self.seen_results and not nothing:
            progress = True
        elif tkey and tkey not in self.targets:
            # a new target: progress, unless a read returned the very same data again
            progress = rkey not in self.seen_results or nothing or is_ack(data)
        else:
            progress = False
        if reading:
            if state > 0 or (nothing and state == 0):
                if listing is None:
                    listing = self.series[skey] = [True, 0, 0]
                    _bound(self.series)
                listing[0] = True
                if state > 1 and nothing and listing[1] == 0:
                    listing[1] = 1          # the page that did not advance is itself past the end
            elif nothing and skey != sig:
                # an empty page that says more follow (has_more: true, a fresh cursor): a few are normal
                # (an API that filters after paging), ``max_empty_pages`` in a row are the end
                if listing is None:
                    listing = self.series[skey] = [False, 0, 0]
                    _bound(self.series)
                if len(listing) < 3:
                    listing.append(0)
                listing[2] += 1
                if listing[2] >= cfg.max_empty_pages:
                    listing[0], listing[1] = True, max(listing[1], 1)
                    if "past_end" in cfg.rules and not tripped:
                        return self._past_end_now(call, listing)
            elif listing is not None and progress:
                listing[0], listing[1] = False, 0        # the end was not the end
                if len(listing) > 2:
                    listing[2] = 0
            prev = self.last.get(tool)
            if prev is not None and prev[1] == rkey and not nothing and only_shape_differs(prev[0], parts) \
                    and "near_duplicate" in cfg.rules and not tripped:
                capped = self._capped(call)         # a bigger limit, the very same answer: there is no more
            if prev is not None and prev[1] == rkey:
                sig = self._learn_irrelevant(tool, sig, parts, rkey, data, index, nothing, target)
                st = self.sigs.get(sig)
            else:
                self.last[tool] = [parts, rkey, 1, target]
                if len(self.last) > _MAX_KEYS:
                    _bound(self.last)
        if ok and action:
            self.acted[sig] = self.acted.get(sig, 0) + 1
            _bound(self.acted)
            free, rest = split_free(parts)
            prev = self.sent.get(tool)
            # sends in a row to the same place (the same other arguments), nothing else between
            run = prev[3] + 1 if (free and prev is not None and len(prev) > 4 and prev[4] == index - 1
                                  and _only_body_differs(prev[0], parts) and not is_create_name(tool)) else 1
            self.sent[tool] = [parts, free, rest, run, index]
            _bound(self.sent)
            if is_create_name(tool):
                self._created(tool, parts)

        self.count += 1
        self.calls.append([sig, tool, tkey, rkey, progress, kind, index])
        if rkey not in self.seen_results and not (ok and action):
            self.novel += 1                 # news read (a receipt of an action, a fresh id, is not news)
        self.seen_results[rkey] = self.seen_results.get(rkey, 0) + 1
        if tkey:
            self.targets[tkey] = self.targets.get(tkey, 0) + 1
        # sig -> [result, calls in a row with it, kind, first index, progress count after it, last index,
        #         calls in a row with nothing else progressing between (any result),
        #         calls in a row with it and nothing else progressing between]
        before = self.progressed
        if progress and not reads:
            self.progressed += 1            # something may have changed (a read changes nothing)
        if st is not None and len(st) > 7:
            quiet = st[4] == before         # nothing else progressed since its last call
            if st[0] == rkey:
                st[1] += 1
                # waited for (a wait tool since its last call): a poll, not a repeat
                st[2] = _POLL if kind == _NORMAL and ok and self.waited > st[5] else kind
                st[6], st[7] = (st[6] + 1, st[7] + 1) if quiet else (1, 1)
                st[4], st[5] = self.progressed, index
            else:
                st = self.sigs[sig] = [rkey, 1, kind, index, self.progressed, index, st[6] + 1 if quiet else 1, 1]
        else:
            st = self.sigs[sig] = [rkey, 1, kind, index, self.progressed, index, 1, 1]
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
            if is_user_refusal(result) and sig not in self.refusals:
                self.refusals.append(sig)
                del self.refusals[:-16]
        elif ok and self.failed:
            self.failed.pop(tool, None)
        if kind == _TRANSIENT and result.executed and skey != sig and "past_end" in cfg.rules and not tripped:
            found = self._pages_failing(call, tool, sig, skey, rkey)
            if found is not None:
                return self._ladder(*found)
        if kind == _TRANSIENT and result.executed:
            if "retry_budget" in cfg.rules:
                found = self._retry_budget(call, tool, index, self._agent_seconds(ctx), result)
                if found is not None:
                    return found
        elif self.retries and (ok or kind == _NORMAL):
            self.retries.pop(tool, None)
        if tripped:
            return None
        if past and "past_end" in cfg.rules and len(self.calls) > 1 and self.calls[-2][_TOOL] == tool \
                and self.calls[-2][_RESULT] == rkey:
            # the second empty answer in a row from a listing that ended (one page past the end is forgiven)
            # a page asked for after the listing ended brought nothing again: the end signal was not read
            found = self._past_end(call, (sig, target, skey, parts))
            if found is not None:
                return self._ladder(*found)
        if not ok and "outage" in cfg.rules and result.executed:
            found = self._outage_seen(tool)
            if found is not None:
                return self._ladder(*found)
        if fresh is not None and "duplicate_action" in cfg.rules:
            return self._ladder(*self._fresh_id(call, sig))
        if st[1] >= 2 and st[2] == _NORMAL and "identical" in cfg.rules and (
                (st[7] >= 2 and (st[6] >= 3 or (not ok and no_such_tool(result)))) or (st[1] >= cfg.max_unchanged and (not ok or looks_failed(data)))):
            return self._ladder(*self._identical_after(call, sig, st, ok))
        if capped is not None:
            return self._ladder(*capped)
        if not ok and kind == _NORMAL:
            found = self._failing_again(call, tool, sig, st, rkey, target, result)
            if found is not None:
                return self._ladder(*found)
        elif self.err_runs:
            self.err_runs.pop(tool, None)
        if kind == _NORMAL and st[1] >= 2 and "cycle" in cfg.rules and len(self.calls) > 2 \
                and "cycle:replay" not in self.hinted:
            found = self._replayed(call, sig, st)
            if found is not None:
                return self._ladder(*found)
        if kind == _NORMAL and "cycle" in cfg.rules and (not ok or sig == skey) and len(self.calls) > 2:
            found = self._came_back(tool, sig, rkey, ok)
            if found is not None:
                return self._ladder(*found)
        if ok and kind == _NORMAL and not action and self.last.get(tool, (0, 0, 0))[2] >= cfg.max_same_answer \
                and "near_duplicate" in cfg.rules:
            found = self._same_answer(call)
            if found is not None:
                return self._ladder(*found)
        return None

    def _known_content(self, sig: str, st: list | None, rkey: str, data: Any) -> str:
        """The same call answered with just what it had already answered (the same items in
        another order, the same lines shuffled, scores moved between them): the same result,
        whatever its exact form. Returns the result key to record the call under.
        Computed only when a call repeats with another answer (the earlier answer is kept
        as is until then)."""
        prev = self._answers.get(sig)
        self._answers[sig] = data
        if len(self._answers) > 128:
            _bound(self._answers, 64)
        if st is None or rkey == st[0] or (prev is None and sig not in self.units):
            return rkey
        units = content_units(data)
        if units is None:
            return rkey
        known = self.units.get(sig)
        if known is None:
            known = content_units(prev) or set()
        else:
            known = set(known)
        if units == known:
            return st[0]                    # nothing new and nothing gone: the answer it gave before (a list of
                                            # errors that shrank is progress)
        self.units[sig] = sorted(known | units)[:_MAX_UNITS]
        if len(self.units) > 64:
            del self.units[next(iter(self.units))]
        return rkey

    def _capped(self, call: ToolCallRequest):
        """A read asked for more (a bigger ``limit``) and answered the very same: there is no more."""
        self._say("loop.same_answer", tool=call.name, count=2)
        return ("near_duplicate", f"~cap:{call.name}",
                f"{call.name} ({_short(call.arguments)}) asked for more and returned the very same data: that is "
                "all there is. Asking for more again will not change it: use what it returned.",
                {"count": 2, "limit": 1, "tool": call.name})

    def _pages_failing(self, call: ToolCallRequest, tool: str, sig: str, skey: str, rkey: str):
        """Two pages of one listing in a row, each another page, failed the same way: not a
        retry of one call (the page asked for moved on), but the walk past where the
        listing can go (a search window's hard limit answered as a 500 page after page)."""
        last = self.page_fails.get(tool)
        self.page_fails[tool] = [skey, sig, rkey]
        if len(self.page_fails) > _MAX_KEYS:
            _bound(self.page_fails)
        if last is None or last[0] != skey or last[1] == sig or last[2] != rkey:
            return None
        self._say("loop.past_end", tool=call.name, args=_short(call.arguments), count=2)
        return ("past_end", skey,
                f"{call.name} ({_short(call.arguments)}): two pages in a row, each further on, failed the same way: "
                "the listing cannot be walked past this point. Use what the earlier pages returned, or narrow the "
                "query.",
                {"count": 2, "limit": 1, "tool": call.name})

    def _failing_again(self, call: ToolCallRequest, tool: str, sig: str, st: list, rkey: str, target: str,
                       result: ToolResultEvent):
        """After a failure that is not transient: a failed call changes nothing, so

        * the same call failing the same way as its last call, with no success of any call
          between, will fail that way again: come back to after another call that failed too
          (a detour that changed nothing), the ``max_same_failures``-th time draws a hint; made
          again at once, one more (one immediate retry of a failure is what careful agents do,
          C4's steady agent among them; the identical-call rule speaks before the 3rd anyway);
        * one tool failing with the same error ``max_same_error`` times in a row on the same
          target (the same file, record, template: only the other arguments changed) is guessing:
          the changes made between do not reach what the error is about. Another error is
          progress (the last one was fixed); the same "not found" on another path is a search
          (each miss rules one out), but "no such tool" for one guessed tool name after another
          is one error (list the tools instead). Read from changing arguments, this is a hint
          said once."""
        cfg = self.config
        run = self.err_runs.get(tool)
        if no_such_tool(result):
            rkey, target = "no such tool", ""    # one class, whatever name was guessed: guessing tool names
        same = run is not None and run[0] == rkey and run[2] == target
        earlier = run[3] if run is not None and len(run) > 3 and run[2] == target else []
        back = not same and rkey in earlier          # an error of this run that had gone away came back
        run = self.err_runs[tool] = [rkey, run[1] + 1 if same else 1, target, [*earlier[-7:], rkey]]
        if len(self.err_runs) > _MAX_KEYS:
            _bound(self.err_runs)
        detour = len(self.calls) > 1 and self.calls[-2][_SIG] != sig     # another call was tried between
        if "identical" in cfg.rules and st[1] >= (cfg.max_same_failures if detour else cfg.max_same_failures + 1) \
                and self._nothing_succeeded_since(st):
            what = self._args or {}
            self._say("loop.identical", count=st[1], tool=call.name, args=_short(what), limit=st[1] - 1)
            return ("identical", sig,
                    f"{call.name} ({_short(what)}) failed the same way {st[1]} times with nothing succeeding "
                    f"between; limit {cfg.max_same_failures - 1}. The same call will fail the same way: read the "
                    "error and change what it names, or say what is missing.",
                    {"count": st[1], "limit": cfg.max_same_failures - 1, "tool": call.name})
        if back and "cycle" in cfg.rules and len(earlier) >= 3:
            return ("cycle", f"~errback:{tool}",
                    f"{call.name} ({_short(self._args or {})}) failed again with an error it had already given and "
                    f"that had gone away ({len(earlier) + 1} failures in a row on the same target): the changes go "
                    "round in a circle. Look at all the errors together and make one change that satisfies them, or "
                    "say what is in conflict.",
                    {"count": len(earlier) + 1, "limit": len(earlier)})
        if "no_progress" in cfg.rules and run[1] >= cfg.max_same_error:
            self._say("loop.no_progress", count=run[1], limit=cfg.max_same_error - 1)
            return ("no_progress", f"~error:{tool}",
                    f"the last {run[1]} calls to {call.name}, each with other arguments, all failed with the same "
                    f"error; limit {cfg.max_same_error - 1}. Changing the arguments this way does not reach what the "
                    "error is about: read it again, look the expected form up, or ask.",
                    {"count": run[1], "limit": cfg.max_same_error - 1})
        return None

    def _nothing_succeeded_since(self, st: list) -> bool:
        """No call succeeded since the earlier call of ``st`` (its last index before this one)."""
        calls = self.calls
        for i in range(len(calls) - 2, -1, -1):
            entry = calls[i]
            if entry[_SIG] == calls[-1][_SIG]:
                return True
            if not entry[_RESULT].startswith("!"):
                return False
        return True

    def _came_back(self, tool: str, sig: str, rkey: str, ok: bool):
        """A-B-A: this tool's answer is the one it gave two calls of it ago, and the call
        between got another: a fix undone (an error that comes back after another one), a
        toggle flipped back (the same call answering A, B, A). A new error each time is
        progress; an error that returns is not."""
        mine: list = []
        calls = self.calls
        for i in range(len(calls) - 2, max(-1, len(calls) - 2 - self.config.window), -1):
            entry = calls[i]
            if entry[_TOOL] == tool:
                mine.append(entry)
                if len(mine) == 2:
                    break
        if len(mine) < 2:
            return None
        between, before = mine
        if before[_RESULT] != rkey or between[_RESULT] == rkey or between[_KIND] != _NORMAL \
                or before[_KIND] != _NORMAL:
            return None
        if ok and not (between[_SIG] == sig == before[_SIG] and calls[-2] is between and calls[-3] is before):
            return None                     # a success: only the very same call flipping back and forth, in a row
                                            # (a status checked again after other work is a checkpoint)
        if not ok and not between[_RESULT].startswith("!"):
            return None                     # an error: it came back after another error, not after a success
        what = "the same error as" if not ok else "the same answer as"
        self._say("loop.cycle", period=2, tools=f"{tool} -> {tool}", rounds=2, limit=1)
        return ("cycle", f"{between[_SIG]}|{sig}",
                f"{tool} ({_short(self._args or {})}) got {what} two calls ago, with another one between: the "
                "change made between was undone (A -> B -> A). Do not flip back and forth: look at both "
                "answers together and make one change that satisfies both, or say what is in conflict.",
                {"period": 2, "rounds": 2, "limit": 1, "tools": f"{tool} -> {tool}"})

    def _quiet_since(self, st: list, tool: str) -> bool:
        """No other tool made progress since the call of ``st`` last ran (a re-read
        after an edit gets a new hash; the same create in a batch gets a new id)."""
        if len(st) < 6:
            return False
        for entry in reversed(self.calls):
            if entry[_INDEX] <= st[5]:
                return True
            if entry[_PROGRESS] and entry[_TOOL] != tool:
                return False
        return True

    def _fresh_id(self, call: ToolCallRequest, sig: str):
        """The same call answered the same way under a fresh id: it made another one."""
        self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=1)
        return ("duplicate_action", sig,
                f"{call.name} ({_short(call.arguments)}) was called again with the same arguments and answered the "
                "same way under a new id: it made another one (another task, record or message). Use the one "
                "already made; if it must be done again, say why first.",
                {"count": 2, "limit": 1, "tool": call.name})

    def _identical_after(self, call: ToolCallRequest, sig: str, st: list, ok: bool):
        """After the result: the third call (or later) of the same call, with nothing
        else progressing between, came back as the one before it (``git commit``
        answered "nothing to commit" twice after the commit that worked); or the
        same call answered the same ``max_unchanged`` times in a row although
        other work changed things between (a build failing the same way after
        two different fixes)."""
        n = st[1]
        what = "failed the same way" if not ok else "returned the same"
        self._say("loop.identical", count=n, tool=call.name, args=_short(call.arguments), limit=n - 1)
        return ("identical", sig,
                f"{call.name} ({_short(call.arguments)}) {what} {n} times in a row ({st[6]} calls in all) with "
                f"nothing else changing between them; limit {n - 1}.",
                {"count": n, "limit": n - 1, "tool": call.name})

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
        self._in_after = False
        events = ctx.trajectory.events
        if len(events) > self.heard + 1:
            self._heard(events)             # a reply from the user since the last decision is news
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
        elif any(q[1] is False for q in similar) and asks_for_information(decision.text):
            # a question for a piece of information the user already gave (not a yes/no offer made again after
            # new results: "want me to check again?")
            why, n, limit = "asked and answered", len(similar), 1
        elif similar and self.reasked >= cfg.max_reasks:
            why, n, limit = "answered (and an answered question was already asked again)", len(similar), \
                cfg.max_reasks
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
    def _ladder(self, rule: str, key: str, message: str, numbers: dict, first: str = "hint") -> Intervention | None:
        """The first trip of a kind gets ``first`` (a hint, or a block for a
        retry of a transiently failing call); the same trip again stops."""
        cfg = self.config
        self.trips += 1
        trip_key = f"{rule}:{key}"
        if key[:1] == "~" and trip_key in self.hinted:
            return None                     # a trip read from wording alone is said once and never stops
        if trip_key not in self.hinted and self._sig not in self.hinted_sigs:
            # a stop needs the model to have been told about this very loop (the same trip, or a trip on a
            # call a hint was about) and to have gone on with it; anything else is a hint at most
            if len(self.hinted) >= cfg.max_hints:
                return None                 # the model had its hints; a new kind says nothing more
            self.hinted.append(trip_key)
            self.hinted_sigs += [self._sig, *(k for k in key.split("|") if ":" in k)]
            del self.hinted_sigs[:-16]
            self._mark_hint(trip_key, delay=self._in_after and rule != "retry_budget")
            extra = (" " + i18n.text(self._lang or "en", "loop.alternatives")
                     if first == "hint" and rule != "question_repeat" else "")
            return Intervention(first, rule, (self._said or message) + extra, numbers)
        if not self._stop_earned(trip_key):
            return None                     # the same loop again, but too soon after its hint or with news since
        numbers = {**numbers, "trips": self.trips}
        if cfg.on_repeat == "escalate":
            return Intervention("escalate", rule, message, numbers)
        return Intervention("stop", rule, f"{message} (trip {self.trips}; the hint was ignored)", numbers,
                       status=TerminalStatus.LOOP_ABORTED, finish_up=True)

    def _mark_hint(self, trip_key: str, delay: bool) -> None:
        """Remember when a hint was given (calls so far, new results so far), by its trip and its call.
        A hint given after a result counts from that call (``delay``); one given before a call, on a
        question, or on a retry (whose budget says the next attempt stops) lets the very next trip stop."""
        mark = [self.count if delay else self.count - 1, self.novel]
        self.hint_marks[trip_key] = mark
        self.hint_marks[f"sig:{self._sig}"] = mark
        if len(self.hint_marks) > 32:
            for k in list(self.hint_marks)[:-16]:
                del self.hint_marks[k]

    def _stop_earned(self, trip_key: str) -> bool:
        """A stop ends work, so it needs more than a second trip: the model went on with the
        loop for ``stop_after_hint`` calls after its hint, and none of them (nor anything
        else since) brought back a result the window had not seen. A status page that turns
        after the hint, a poll that moves on, a retry that gets through: no stop."""
        mark = self.hint_marks.get(trip_key) or self.hint_marks.get(f"sig:{self._sig}")
        if mark is None:
            return True                     # a state from before marks were kept: the old ladder
        if self.count - mark[0] < self.config.stop_after_hint or self.novel != mark[1]:
            return False
        if trip_key.startswith("identical:") and self._tool and is_watch_name(self._tool):
            st = self.sigs.get(self._sig)   # a status read answered the same again is someone waiting for a
            if st is not None and not st[0].startswith("!"):            # change: it is stopped only where a
                return st[1] >= self.config.max_polls                   # poll would be (a failure is not)
        return True

    # -- rules -----------------------------------------------------------------
    def _identical(self, call: ToolCallRequest, sig: str):
        st = self.sigs.get(sig)
        if st is None or st[2] == _TRANSIENT:
            return None                     # a transient failure is the retry budget's business
        if len(st) > 7 and st[4] != self.progressed:
            return None                     # something else made progress since: checking again is not a repeat
        cfg = self.config
        polled = st[2] == _POLL or (len(st) > 7 and self.waited > st[5] and not st[0].startswith("!"))
        limit = cfg.max_polls if polled else cfg.max_identical
        if len(st) > 7 and not polled and st[7] < limit:
            return None                     # unchanged, but not with nothing else progressing between
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
        again makes another ticket, message or charge, whatever id it returns (unless it
        carries an idempotency key: then the server does it once)."""
        if carries_idempotency_key(call.arguments):
            return None
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

    def _resend(self, call: ToolCallRequest, described: tuple):
        """The last success of this side-effecting tool sent the same thing: the
        same resources named, and either free text that only rewords it (at least
        ``resend_similarity`` % alike, the same numbers in it, both at least
        ``_MIN_CONTENT`` characters: "Bug A" / "Bug B" are two things) or other arguments
        that differ only in a counter (``task_progress: "(2/1)"``) next to at least
        ``_MIN_CONTENT`` characters of identical content. A re-sent message or a
        rewrite of the same file is another side effect, not new work."""
        last = self.sent[call.name]
        prev_parts, prev_free, prev_rest = last[:3]
        parts = described[3]
        free, rest = split_free(parts)
        if len(last) > 4 and last[3] >= self.config.max_sends_in_a_row - 1 and last[4] == self.count - 1 \
                and _only_body_differs(prev_parts, parts) and _similarity(free, prev_free) < _TEMPLATE_FILL:
            # a message in other words; one template filled with other values (a notice per service) is a batch
            n = last[3] + 1
            self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=last[3])
            return ("duplicate_action", f"~sends:{call.name}",
                    f"{call.name} ({_short(call.arguments)}) would be the {_ordinal(n)} message in a row to the same "
                    "place with nothing read or received between them; limit "
                    f"{self.config.max_sends_in_a_row - 1}. Wait for a reply or go on with the task instead of "
                    "sending more.",
                    {"count": n, "limit": self.config.max_sends_in_a_row - 1, "tool": call.name})
        if rest == prev_rest:
            if min(len(free), len(prev_free)) < _MIN_CONTENT or free == prev_free \
                    or _DIGITS_RE.findall(free) != _DIGITS_RE.findall(prev_free) \
                    or _similarity(free, prev_free) < self.config.resend_similarity:
                return None
        elif free != prev_free or prev_parts.keys() != parts.keys():
            return None
        else:
            differ = [k for k in parts if parts[k] != prev_parts[k]]
            same = sum(len(parts[k]) for k in parts if parts[k] == prev_parts[k])
            if same < _MIN_CONTENT or not all(not names_resource(k) and volatile_pair(prev_parts[k], parts[k])
                                              for k in differ):
                return None
        self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=1)
        return ("duplicate_action", f"resend:{call.name}",
                f"{call.name} ({_short(call.arguments)}) sends what its last call already sent, in other words or "
                "with only a counter changed: another copy, not new work. Use the one already sent.",
                {"count": 2, "limit": 1, "tool": call.name})

    def _refused_again(self, call: ToolCallRequest):
        """The same call a person already refused ("User rejected permission")."""
        self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=1)
        return ("identical", f"refused:{call.name}",
                f"{call.name} ({_short(call.arguments)}) was refused by the user; asking again with the same call "
                "will not change the answer. Ask what they would accept, or explain what cannot be done.",
                {"count": 2, "limit": 1, "tool": call.name})

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

    def _past_end_now(self, call: ToolCallRequest, listing: list) -> Intervention:
        n = listing[2]
        self._say("loop.past_end", tool=call.name, args=_short(call.arguments), count=n)
        found = ("past_end", call.name,
                 f"{call.name} ({_short(call.arguments)}): {n} empty pages in a row, each promising more; "
                 f"limit {self.config.max_empty_pages - 1}. The listing has nothing more to give: use what the "
                 "earlier pages returned.",
                 {"count": n, "limit": self.config.max_empty_pages - 1, "tool": call.name})
        return self._ladder(*found)

    def _retry_budget(self, call: ToolCallRequest, tool: str, index: int, at_s: float,
                      result: ToolResultEvent) -> Intervention | None:
        """After a transient failure: the transient failures of this tool in a row
        (whatever its arguments: a backoff or attempt counter in them changes
        nothing). The ``retry_hint_after``-th draws a hint (a hint only: no
        attempt within ``max_transient_retries`` retries is blocked or stopped;
        the attempt after them is, see :meth:`_retry_spent`). A retry made less
        than ``min_retry_gap_s`` after the last failure with no wait tool between
        hammers the service and counts against ``max_immediate_retries``: the
        failure that uses those up draws a hint and the next attempt stops."""
        cfg = self.config
        r = self.retries.get(tool)
        asked, delay = retry_after_s(result), delay_asked(call.arguments)
        said = result_hash(result, call.arguments)
        if r is None:
            r = self.retries[tool] = [0, index, at_s, 0, -1, asked, delay, said, True]
            _bound(self.retries)
        else:
            while len(r) < 9:
                r.append(-1 if len(r) == 4 else True if len(r) == 8 else None)
            r[8] = r[8] and r[7] == said        # the very same failure every time (not a timeout, then a 429)
            r[7] = said
            if self.waited > r[1]:
                r[4] = self.waited              # backing off with a wait tool
            elif at_s - r[2] < cfg.min_retry_gap_s:
                r[3] += 1
            if _grew(r[5], asked) or _grew(r[6], delay):
                r[4] = index                    # backing off: the wait the server asks for grows (it is being
                                                # honoured), or the call sets a growing delay itself
            r[5], r[6] = asked, delay
        r[0] += 1
        r[1], r[2] = index, at_s
        retried = r[0] - 1
        hammering = r[3] >= cfg.max_immediate_retries
        key = f"retry_budget:{tool}"
        if hammering:
            limit, how = cfg.max_immediate_retries, " in quick succession"
        elif (r[0] == cfg.retry_hint_after and r[4] < 0 and r[8] or r[0] == cfg.max_transient_retries + 1) \
                and key not in self.hinted and len(self.hinted) < cfg.max_hints:
            limit, how = cfg.max_transient_retries, ""
        else:
            return None                     # within the budget nothing stops a retry
        self._say("loop.retry_budget", tool=call.name, args=_short(call.arguments), count=r[0], retries=retried,
                  limit=limit)
        found = ("retry_budget", tool,
                 f"{call.name} ({_short(call.arguments)}) failed the same transient way {r[0]} times "
                 f"({retried} retries{how}; the budget is {limit}). Do not keep retrying: tell the user the service "
                 "is failing, use another source, or wait before one more attempt.",
                 {"count": r[0], "limit": limit, "tool": call.name})
        return self._ladder(*found)

    def _retry_spent(self, call: ToolCallRequest):
        """An attempt at a tool that failed transiently past its budget: ``max_transient_retries``
        retries, or ``max_immediate_retries`` in quick succession after a hint about them."""
        r = self.retries.get(call.name)
        if r is None:
            return None
        cfg = self.config
        if r[0] - 1 < cfg.max_transient_retries and not (
                r[3] >= cfg.max_immediate_retries and f"retry_budget:{call.name}" in self.hinted):
            return None
        return ("retry_budget", call.name,
                f"{call.name} ({_short(call.arguments)}): {r[0]} transient failures in a row and the retry budget "
                f"({cfg.max_transient_retries} retries) is used up; this attempt is not made.",
                {"count": r[0] + 1, "limit": r[0] - 1, "tool": call.name})

    def _learn_irrelevant(self, tool: str, sig: str, parts: dict, rkey: str, data: Any, index: int,
                          nothing: bool, target: str) -> str:
        """Two calls of a read-only tool in a row that differ only in arguments whose
        values differ only in digits (a counter, a timestamp, a request uuid) and
        return the very same substantive data: those arguments change nothing, and
        the calls are the same call. Returns the signature to record the call under."""
        prev = self.last.get(tool)
        same = prev is not None and prev[1] == rkey and not nothing and not is_ack(data)
        # a rewording: other arguments, the same resources named (another region is not a rewording)
        reworded = same and prev[0] != parts and (len(prev) < 4 or prev[3] == target)
        self.last[tool] = [parts, rkey, (prev[2] if len(prev) > 2 else 1) + 1 if reworded else 1, target]
        _bound(self.last)
        if not same:
            return sig
        before = prev[0]
        diff = [k for k in before.keys() | parts.keys() if before.get(k) != parts.get(k)]
        if not 1 <= len(diff) <= 2 or not all(volatile_pair(before.get(k), parts.get(k)) for k in diff) \
                or any(names_resource(k) or parts.get(k, "").isdigit() or parts.get(k, "")[:1] in ("{", "[")
                       for k in diff):
            return sig                      # an argument named for a resource (a line range, a page) never is,
                                            # nor an object (it may hold the page)
        known = self.irrelevant.setdefault(tool, [])
        known += [k for k in diff if k not in known]
        _bound(self.irrelevant)
        reduced = f"{tool}:{','.join(f'{k}={v}' for k, v in parts.items() if k not in known)}"
        st = self.sigs.get(reduced)
        if st is None or st[0] != rkey:
            self.sigs[reduced] = [rkey, 1, _NORMAL, index, self.progressed, index, 1, 1]   # the earlier call
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
        if len(st) > 7 and st[4] != self.progressed:
            return None                     # something made progress since its last call: a check after a change
        return self._replay_trip(call, sig, self.calls[-1], "repeat earlier calls that got")

    def _replayed(self, call: ToolCallRequest, sig: str, st: list):
        """After the result: this call and the one before it both repeated earlier calls and
        got the very same results, although work was done since (the before-call check
        leaves a repeat after progress alone: a check after a change may answer anew; this
        one did not)."""
        return self._replay_trip(call, sig, self.calls[-2], "repeated earlier calls and got")

    def _replay_trip(self, call: ToolCallRequest, sig: str, prev: list, said: str):
        """The replay trip when ``prev`` (the call before this one) also repeated an earlier call
        with the very same result; ``said`` tells it before the call or after its result."""
        if prev[_SIG] == sig or prev[_KIND] != _NORMAL or prev[_PROGRESS]:
            return None
        pst = self.sigs.get(prev[_SIG])
        if pst is None or pst[1] < 2 or pst[0] != prev[_RESULT]:
            return None
        self._say("loop.replay", tool=call.name)
        return ("cycle", "replay",
                f"{call.name} ({_short(call.arguments)}) and the call before it {said} the very same results: "
                "the work is being started over. Use what those calls returned and go on from where you were.",
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
        # failures before a wait tool call do not block: waiting out an outage earns one probe
        horizon = max(self.count - cfg.outage_window, self.waited + 1)
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
    def _kind(self, ctx: GuardContext, tool: str) -> tuple[bool, bool, bool]:
        """(side-effecting, a wait tool, a read by its name): the spec's
        ``side_effect`` when the run has specs, else the verb in the name;
        computed once per tool."""
        kind = self._kinds.get(tool)
        if kind is None:
            spec = next((s for s in ctx.tools if s.name == tool), None)
            action = bool(spec is not None and spec.side_effect) or is_action_name(tool)
            kind = (action, is_wait_name(tool), not action and is_read_name(tool))
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

    def _heard(self, events: list) -> None:
        """The user answered since the last call (not a refusal): a call made again after
        it is not a repeat ("check again this afternoon", then the same lookup). Only the
        last few events are read: a reply is news to the calls right after it."""
        n = len(events)
        for event in events[max(self.heard + 1, n - 8):]:
            if type(event) is UserMessage and not Q.is_refusal(event.content):
                self.progressed += 1
                break
        self.heard = n - 1

    def _read_questions(self, ctx: GuardContext) -> None:
        """Fold the questions to the user and their replies since the last look."""
        events = ctx.trajectory.events
        for event in events[self.scanned:]:
            if isinstance(event, AgentMessage) and event.kind == "question":
                if self.asked and self.asked[-1][1] is None:
                    self.asked[-1][1] = True        # asked again before any reply: left unanswered
                words = Q.content(event.content)
                if any(Q.overlap(words, frozenset(q[0])) >= self.config.question_overlap for q in self.asked):
                    self.reasked += 1               # a question asked again
                self.asked.append([sorted(words), None])
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
                "hinted": list(self.hinted), "hinted_sigs": list(self.hinted_sigs), "trips": self.trips, "acted": dict(self.acted),
                "retries": {k: list(v) for k, v in self.retries.items()}, "waited": self.waited,
                "thinking_s": self.thinking_s, "thought_scanned": self.thought_scanned,
                "series": {k: list(v) for k, v in self.series.items()},
                "irrelevant": {k: list(v) for k, v in self.irrelevant.items()},
                "last": {k: [dict(v[0]), *v[1:]] for k, v in self.last.items()},
                "shapes": {k: dict(v) for k, v in self.shapes.items()}, "progressed": self.progressed, "heard": self.heard,
                "reasked": self.reasked, "sent": {k: [dict(v[0]), *v[1:]] for k, v in self.sent.items()},
                "refusals": list(self.refusals),
                "created": {k: [dict(v[0]), v[1]] for k, v in self.created.items()},
                "novel": self.novel, "hint_marks": {k: list(v) for k, v in self.hint_marks.items()},
                "err_runs": {k: list(v) for k, v in self.err_runs.items()},
                "units": {k: list(v) for k, v in self.units.items()},
                "page_fails": {k: list(v) for k, v in self.page_fails.items()}}

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
        self.hinted_sigs = list(state.get("hinted_sigs", []))
        self.trips = int(state.get("trips", 0))
        self.acted = dict(state.get("acted", {}))
        self.retries = {k: list(v) for k, v in state.get("retries", {}).items()}
        self.waited = int(state.get("waited", -1))
        self.thinking_s = float(state.get("thinking_s", 0.0))
        self.thought_scanned = int(state.get("thought_scanned", 0))
        self.series = {k: list(v) for k, v in state.get("series", {}).items()}
        self.irrelevant = {k: list(v) for k, v in state.get("irrelevant", {}).items()}
        self.last = {k: [dict(v[0]), *v[1:]] for k, v in state.get("last", {}).items()}
        self.shapes = {k: dict(v) for k, v in state.get("shapes", {}).items() if isinstance(v, dict)}
        self.progressed = int(state.get("progressed", 0))
        self.heard = int(state.get("heard", -1))
        self.reasked = int(state.get("reasked", 0))
        self.sent = {k: [dict(v[0]), *v[1:]] for k, v in state.get("sent", {}).items()}
        self.refusals = list(state.get("refusals", []))
        self.created = {k: [dict(v[0]), v[1]] for k, v in state.get("created", {}).items()}
        self.novel = int(state.get("novel", 0))
        self.hint_marks = {k: list(v) for k, v in state.get("hint_marks", {}).items()}
        self.err_runs = {k: list(v) for k, v in state.get("err_runs", {}).items()}
        self.units = {k: list(v) for k, v in state.get("units", {}).items()}
        self.page_fails = {k: list(v) for k, v in state.get("page_fails", {}).items()}


# the body of a message: two sends that differ only here say the same kind of thing to the same place
# (a title or subject that differs names another thing: six issues from a checklist)
_BODY_KEYS = frozenset({"message", "text", "body", "content", "html", "markdown", "msg"})


def _grew(before: float | None, now: float | None) -> bool:
    return before is not None and now is not None and now > before


def _only_body_differs(before: dict, parts: dict) -> bool:
    if before.keys() != parts.keys():
        return False
    differ = [k for k in parts if parts[k] != before[k]]
    return all(k.casefold() in _BODY_KEYS for k in differ) and any(k.casefold() in _BODY_KEYS for k in parts)


def _no_items(data: Any) -> bool:
    """A page with no items: an answer whose lists (at the top, or one level down) are all
    empty, next to counts and totals (``{"total": 287, "results": []}``)."""
    if type(data) is not dict:
        return False
    lists = False
    for value in data.values():
        kind = type(value)
        if kind is list:
            if value:
                return False
            lists = True
        elif kind is dict:
            for inner in value.values():
                if type(inner) is list:
                    if inner:
                        return False
                    lists = True
    return lists


_TEMPLATE_FILL = 80.0   # rapidfuzz ratio at or above which two messages are one template with other values in it


_MIN_CONTENT = 16   # characters of content that make two creates copies of one thing
_DIGITS_RE = re.compile(r"\d+")


_MAX_UNITS = 400    # content units kept per call signature
_MAX_KEYS = 512     # per-signature and per-tool maps: the oldest entries go first past this size


def _bound(mapping: dict, keep: int = _MAX_KEYS // 2) -> None:
    """Past ``_MAX_KEYS`` entries (or ``2 * keep``) keep the newer ``keep`` (amortised:
    deleting the oldest entry one at a time makes a dict's first entry ever slower to find)."""
    if len(mapping) > min(_MAX_KEYS, 2 * keep):
        newer = list(mapping.items())[-keep:]
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
