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
the model what it repeated and what else to do; a trip of any rule on the very
call a hint was about (a retry: on the tool whose budget ran out), with nothing
new read and no reply from the user since the hint (and, after a hint given on a
result, one more call), stops the run as
``loop_aborted`` (or escalates with ``on_repeat="escalate"``) after a
finish-up request, so the user still gets an answer. A trip about other calls
is never a stop, whatever came before. ``outage`` blocks the call instead, since calling a dead service again
only wastes time.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any
from .. import i18n
from .._assess import is_empty_data
from ..events import ModelDecisionEvent, ToolResultEvent
from ..messages import ToolCallRequest
from ..status import TerminalStatus
from ._evidence import (
    asks_page_size,
    short_page,
    walks_on,
    cursor_resent,
    is_watch_name,
    offset_end,
    only_shape_differs,
    pending_within,
    transient_failure,
    idempotency_key,
    unwrap,
    without_stamps,
)
from ._base import BaseGuard, GuardContext, Intervention
from ._calls import (
    describe_call,
    error_signature,
    is_ack,
    is_action_name,
    is_create_name,
    is_pending,
    _POLL_KEYS,
    pending_form,
    accepted_job,
    is_submitted,
    is_wait_name,
    waits_in,
    no_such_tool,
    is_write_call,
    is_read_name,
    is_not_ready,
    hit_a_limit,
    flat_answer,
    asks_since,
    looks_failed,
    is_user_refusal,
    split_free,
    id_split,
    page_state,
    result_hash,
    canon_result,
    _digest,
    canonical_call,
)
from ._loop_common import (
    _NORMAL,
    _TRANSIENT,
    _POLL,
    _SIG,
    _TOOL,
    _TARGET,
    _RESULT,
    _INDEX,
    LoopConfig,
    _only_body_differs,
    _no_items,
    _shows_items,
    _MAX_KEYS,
    _bound,
    RULES,
)
from ._loop_asks import _QuestionRules
from ._loop_effects import _EffectRules
from ._loop_failures import _FailureRules
from ._loop_repeats import _RepeatRules

__all__ = ["RULES", "LoopConfig", "LoopGuard", "canonical_call", "result_hash"]


_NO_LAST = (None, None, 0)
_GO_ON: Any = object()      # _after_rare: no check applied, go on with the rest


def _small(value: Any) -> bool:
    """The content of a one-key envelope kept for a fresh-id compare: a small object or a one-item list
    (a checkpoint holds it as JSON)."""
    return (type(value) is dict and len(value) <= 16) or (type(value) is list and len(value) == 1)


def _sent_values(args: dict) -> frozenset:
    """The string values a call sent at its top level (the ids it named)."""
    return frozenset(v for v in args.values() if type(v) is str and v)


@dataclass
class LoopGuard(_RepeatRules, _EffectRules, _FailureRules, _QuestionRules, BaseGuard):
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
    acted_replied: dict[str, int] = field(default_factory=dict)  # side-effecting sig -> user replies heard at its last
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
    told: int = 0                                                # the user said they had already answered (1)
    told_at: int = -1                                            # ... in reply to this question (index in asked)
    progressed: int = 0                                          # calls so far that made progress
    heard: int = -1                                              # trajectory events read for user replies
    replied: int = 0                                             # user replies (not refusals) heard so far
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
        self._restored = False              # loaded from a checkpoint: the answers read before it are not here
        self._sizes: dict[str, bool] = {}   # tool -> False once its paged calls named no page size (skips the look-up)

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

    def _describe(self, call: ToolCallRequest) -> tuple[str, str, str, dict, int]:
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
        self._pending = (call.id, described)
        self._sig, self._tool = sig, tool
        rules = cfg.rules
        found = self._outage(tool) if self.failed and "outage" in rules else None
        if found is not None:
            self._tripped = call.id
            return Intervention("block", "outage", self._said or found[0], found[1])
        seen = sig in self.sigs             # the rules about repeats need the call seen before
        # each test reads the state it needs first (empty on a call never seen before), then the rule's switch
        found = ((self.retries and "retry_budget" in rules and self._retry_spent(call))
                 or ((self.acted or self.created or self.sent) and "duplicate_action" in rules
                     and ((sig in self.acted and self._duplicate_action(call, sig))
                          or (self.created and self._duplicate_create(call, described))
                          or (tool in self.sent and self._resend(call, described))))
                 or (self.refusals and sig in self.refusals and "identical" in rules and self._refused_again(call))
                 or (seen and "identical" in rules and self._identical(call, sig))
                 or (self.series and sig != described[2] and described[2] in self.series and "past_end" in rules
                     and self._past_end(call, described))
                 or (seen and "cycle" in rules and (self._cycle(sig) or self._replay(call, sig)))
                 or (self.tool_streak.get(tool, 0) >= cfg.max_near_duplicates and "near_duplicate" in rules
                     and self._near_duplicate(call))
                 or (self.same_result[1] >= cfg.max_no_progress and "no_progress" in rules and self._no_progress()))
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
            sig, target, skey, parts, offset = pending[1]
        else:
            sig, target, skey, parts, offset = self._describe(call)
        self._pending = None
        self._sig, self._tool = sig, tool
        self._args = args
        tripped, self._tripped = self._tripped == call_id, None   # this call was already tripped on
        ok = result.ok
        if ok:                              # result_hash(), written out (it runs on every result)
            rkey = canon_result(result.data)
            if len(rkey) > 40:
                rkey = _digest(rkey)
        else:
            rkey = result_hash(result, args)
        kinds = self._kinds.get(tool)
        action, wait, reads = kinds if kinds is not None else self._kind(ctx, tool)
        if not wait and not action and not reads and waits_in(args):
            wait = True                     # a command that sleeps first: a wait, and what it runs a poll
        if not action and "method" in args:
            action = is_write_call(args)
        data = result.data
        index = self.count
        st = self.sigs.get(sig)
        if st is not None and not action and ok and type(data) is dict and 202 in data.values() \
                and accepted_job(data, args):
            action = True                   # the same call accepted (202) again under a job id of its own: each
                                            # call started work (read when a call repeats: a re-submission does)
        if ok and not action and not wait:
            if st is None:                  # a first call: its answer is kept as is, compared only on a repeat
                answers = self._answers
                answers[sig] = data
                if len(answers) > 128:
                    _bound(answers, 64)     # amortised: the newer half stays
                if offset & 2 and tool in self.last:
                    rkey = self._reordered(tool, parts, rkey, data)    # a listing asked for in another order
            else:
                rkey = self._known_content(sig, st, rkey, data)
        fresh = None
        if ok and not wait and not reads and type(data) is dict and len(data) <= 16 \
                and (flat_answer(data) or (len(data) == 1 and _small(next(iter(data.values()))))):
            # the answer is kept as is (a small flat dict, or an envelope of one key: JSON in a checkpoint) until
            # the same call comes again; only then are the two split into identifiers and the rest (the split
            # costs more)
            before = self.shapes.get(sig) if st is not None else None
            same, was = st, rkey
            if before is None and self.calls and self.calls[-1][_TOOL] == tool:
                # the tool's call just before differs only in tokens made up for it (a fresh out_trade_no): the
                # same call
                prev = self.last.get(tool)
                if prev is not None and self._made_up_call(prev[0], parts):
                    psig = f"{tool}:" + ",".join(f"{k}={v}" for k, v in prev[0].items())
                    same = self.sigs.get(psig)
                    before = self.shapes.get(psig) if same is not None else None
                    was = prev[1]
            self.shapes[sig] = dict(data)
            if len(self.shapes) > _MAX_KEYS:
                _bound(self.shapes)
            if before is not None and rkey != (st[0] if same is st else was):
                shape = id_split(without_stamps(unwrap(data)), cfg.ignore_fields)
                earlier = id_split(without_stamps(unwrap(before)), cfg.ignore_fields)
                if shape is not None and earlier is not None and earlier[0] == shape[0] and earlier[1] != shape[1] \
                        and self._quiet_since(same, tool):
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
            elif ((type(data) is not dict or not _POLL_KEYS.isdisjoint(data)) and is_pending(data)) \
                    or (st is not None and (pending_within(data, _sent_values(args)) or pending_form(data))):
                # a poll is a repeat
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
            if kind == _NORMAL and st is not None and len(st) > 7 and self.waited > st[5] and not hit_a_limit(result):
                kind = _POLL                # the same call failing again after a wait ("no checks reported yet"):
                                            # waiting for the world to change; a limit is not lifted by waiting
        tkey = f"{tool}\x00{target}" if target else ""
        nothing = ok and (is_empty_data(data) or (skey != sig and type(data) is dict and [] in data.values()
                                                   and _no_items(data)))
        past = walked = False
        capped = None
        reading = ok and not action and kind == _NORMAL
        listing = self.series.get(skey) if ok and not action and self.series else None
        state = 0
        if reading:
            paged = skey != sig
            if nothing or paged:
                state = page_state(data, args)
            if not paged:
                if state == -2 and cursor_resent(data, args):
                    state = 2               # the cursor sent where the API does not read it comes back
            elif state == 0 and offset & 1 and offset_end(data, args):
                state = 1                   # an offset at or past the total the answer reports
            elif state <= 0 and not nothing and self._sizes.get(tool, True) \
                    and short_page(data, args) and tool in self.last and self.last[tool][0] != parts:
                state = 1                   # fewer items than the page size asked for, on a walk to another page:
                                            # the last page, whatever a has_more flag says
            elif state == -2 and cursor_resent(data, args):
                state = 2
            if paged and tool not in self._sizes:
                self._sizes[tool] = asks_page_size(args)     # read once per tool (its paged calls name a size or not)
                if len(self._sizes) > _MAX_KEYS:
                    _bound(self._sizes)
        if kind != _NORMAL:
            progress = False
        elif not ok:
            progress = rkey not in self.seen_results     # another error: the last one was fixed
        elif action:
            progress = sig not in self.acted
        elif listing is not None and listing[0] and (nothing or rkey in self.seen_results
                                                     or (state > 0 and sig != skey and not _shows_items(data))):
            progress = False                # a page past the end of a listing (or one more page that shows no
                                            # item and says again that the listing ended)
            listing[1] += 1
            past = sig != skey
        elif nothing and state > 1:
            progress = False                # an empty page whose next cursor is the one sent: stuck
        elif rkey not in self.seen_results and not nothing:
            progress = True
        elif tkey and tkey not in self.targets:
            # a new target: progress, unless a read returned the very same data again
            progress = rkey not in self.seen_results or nothing or is_ack(data)
            if not progress and reading and tool in self.last and walks_on(self.last[tool][0], parts):
                progress = walked = True    # a new span of one resource ("cells": "10-19" after "0-9"): a walk
        elif reading and not nothing and self.last and tool in self.last and walks_on(self.last[tool][0], parts):
            progress = walked = True        # a read walking on through a range (lines 1-400, then 401-800): each
                                            # step reads a part it had not read, whatever its summary says
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
            if prev is not None and prev[1] == rkey and not walked:
                if not nothing and only_shape_differs(prev[0], parts) and "near_duplicate" in cfg.rules \
                        and not tripped:
                    capped = self._capped(call)     # a bigger limit, the very same answer: there is no more
                sig = self._learn_irrelevant(tool, sig, parts, rkey, data, index, nothing, target)
                st = self.sigs.get(sig)
            else:
                self.last[tool] = [parts, rkey, 1, target]
                if len(self.last) > _MAX_KEYS:
                    _bound(self.last)
        if ok and action:
            self.acted[sig] = self.acted.get(sig, 0) + 1
            _bound(self.acted)
            if self.replied:
                self.acted_replied[sig] = self.replied
                _bound(self.acted_replied)
            free, rest = split_free(parts)
            prev = self.sent.get(tool)
            # sends in a row to the same place (the same other arguments), nothing else between
            run = prev[3] + 1 if (free and prev is not None and len(prev) > 4 and prev[4] == index - 1
                                  and _only_body_differs(prev[0], parts) and not is_create_name(tool)) else 1
            self.sent[tool] = [parts, free, rest, run, index, idempotency_key(args)]
            _bound(self.sent)
            if is_create_name(tool):
                self._created(tool, parts)

        self.count += 1
        calls = self.calls
        calls.append([sig, tool, tkey, rkey, progress, kind, index])
        seen_results = self.seen_results
        known = seen_results.get(rkey, 0)   # calls in the window that got this result (before this one)
        if not known and not (ok and action):
            self.novel += 1                 # news read (a receipt of an action, a fresh id, is not news)
        seen_results[rkey] = known + 1
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
                if not ok:
                    self.same_result = [rkey, 1, False, sig]
                elif self.same_result[1]:
                    self.same_result = ["", 0, False, ""]    # (a count of 0 is this very list already)
            else:
                self.tool_streak[tool] = self.tool_streak.get(tool, 0) + 1
                run = self.same_result
                if run[0] == rkey:
                    run[1] += 1
                    run[2] = run[2] or run[3] != sig
                    run[3] = sig
                else:
                    self.same_result = [rkey, 1, False, sig]
        if len(calls) > cfg.window:
            # the oldest call leaves the window: its result, target and signature counts go down
            gone = calls.popleft()
            gone_r, gone_t = gone[_RESULT], gone[_TARGET]
            left = seen_results[gone_r] - 1
            if left:
                seen_results[gone_r] = left
            else:
                del seen_results[gone_r]
            if gone_t:
                left = self.targets[gone_t] - 1
                if left:
                    self.targets[gone_t] = left
                else:
                    del self.targets[gone_t]
            gone_st = self.sigs.get(gone[_SIG])
            if gone_st is not None and gone[_INDEX] >= gone_st[3]:
                gone_st[1] -= 1
                if gone_st[1] <= 0:
                    del self.sigs[gone[_SIG]]
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
        if not ok or kind != _NORMAL or st[1] >= 2 or past or fresh is not None or capped is not None:
            found = self._after_rare(call, tool, sig, st, rkey, target, result, ok, kind, past, nothing, listing,
                                     skey, parts, fresh, capped)
            if found is not _GO_ON:
                return found                # a verdict, or None: a check that applied and said nothing ends it too
        elif self.err_runs:
            self.err_runs.pop(tool, None)
        if known and kind == _NORMAL and "cycle" in cfg.rules and (not ok or sig == skey) and len(calls) > 2:
            # an answer that came back: it was in the window before this call
            found = self._came_back(tool, sig, rkey, ok)
            if found is not None:
                return self._ladder(*found)
        if reading and self.last.get(tool, _NO_LAST)[2] >= cfg.max_same_answer and "near_duplicate" in cfg.rules:
            found = self._same_answer(call)
            if found is not None:
                return self._ladder(*found)
        return None

    def _after_rare(self, call: ToolCallRequest, tool: str, sig: str, st: list, rkey: str, target: str,
                    result: ToolResultEvent, ok: bool, kind: str, past: bool, nothing: bool, listing: list | None,
                    skey: str, parts: dict, fresh: Any, capped: Any) -> Any:
        """The checks after a result that only a failure, a wait, a repeat, a page past the end,
        a fresh id or a bigger page asked for can trip (a new call answered anew skips them).
        Returns ``_GO_ON`` when none of them applied (the checks after them come next)."""
        cfg = self.config
        data = result.data
        if past and "past_end" in cfg.rules and len(self.calls) > 1 and self.calls[-2][_TOOL] == tool \
                and (self.calls[-2][_RESULT] == rkey or (nothing and listing[1] > cfg.max_past_end)):
            # the second empty answer in a row from a listing that ended (one page past the end is forgiven),
            # or a second page past the end that brought nothing (an answer that echoes the page asked for
            # differs only in the echo): the end signal was not read
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
            found = self._failing_again(call, tool, sig, st, rkey, target, result, parts)
            if found is not None:
                return self._ladder(*found)
        elif self.err_runs:
            self.err_runs.pop(tool, None)
        if kind == _NORMAL and st[1] >= 2 and "cycle" in cfg.rules and len(self.calls) > 2 \
                and "cycle:replay" not in self.hinted:
            found = self._replayed(call, sig, st)
            if found is not None:
                return self._ladder(*found)
        return _GO_ON

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
        if self._sig not in self.hinted_sigs and rule != "retry_budget":
            return None                     # the same kind of trip on another call (the next host of a batch, the
                                            # next revision checked): look-alikes of a loop are legitimate work too,
                                            # so only the very call a hint was about is stopped (a retry's budget
                                            # counts the tool's attempts, whatever their arguments)
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
        mark = [self.count if delay else self.count - 1, self.novel, self.replied]
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
        if len(mark) > 2 and mark[2] != self.replied and not trip_key.startswith("question_repeat:"):
            return False                    # the user answered since the hint (not a refusal): a person chose to go
                                            # on ("check once more"); a question asked again is the exception, its
                                            # evidence is the answer
        st = self.sigs.get(self._sig)
        if st is not None and st[2] == _POLL:
            return False                    # waiting (an answer that says pending, a wait between): how long to wait
                                            # is the budget's business (calls, seconds); the loop guard hints once
        if trip_key.startswith("identical:") and self._tool and is_watch_name(self._tool):
            st = self.sigs.get(self._sig)   # a status read answered the same again is someone waiting for a
            if st is not None and not st[0].startswith("!"):            # change: it is stopped only where a
                return st[1] >= self.config.max_polls                   # poll would be (a failure is not)
        return True

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

    # -- state -------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"calls": [list(c) for c in self.calls], "seen_results": dict(self.seen_results),
                "targets": dict(self.targets), "sigs": {k: list(v) for k, v in self.sigs.items()},
                "tool_streak": dict(self.tool_streak), "same_result": list(self.same_result),
                "failed": {k: list(v) for k, v in self.failed.items()},
                "asked": [[list(w), r] for w, r in self.asked], "scanned": self.scanned, "count": self.count,
                "hinted": list(self.hinted), "hinted_sigs": list(self.hinted_sigs), "trips": self.trips, "acted": dict(self.acted), "acted_replied": dict(self.acted_replied),
                "retries": {k: list(v) for k, v in self.retries.items()}, "waited": self.waited,
                "thinking_s": self.thinking_s, "thought_scanned": self.thought_scanned,
                "series": {k: list(v) for k, v in self.series.items()},
                "irrelevant": {k: list(v) for k, v in self.irrelevant.items()},
                "last": {k: [dict(v[0]), *v[1:]] for k, v in self.last.items()},
                "shapes": {k: dict(v) for k, v in self.shapes.items()}, "progressed": self.progressed, "heard": self.heard, "replied": self.replied,
                "reasked": self.reasked, "told": [self.told, self.told_at], "sent": {k: [dict(v[0]), *v[1:]] for k, v in self.sent.items()},
                "refusals": list(self.refusals),
                "created": {k: [dict(v[0]), v[1]] for k, v in self.created.items()},
                "novel": self.novel, "hint_marks": {k: list(v) for k, v in self.hint_marks.items()},
                "err_runs": {k: list(v) for k, v in self.err_runs.items()},
                "units": {k: list(v) for k, v in self.units.items()},
                "page_fails": {k: list(v) for k, v in self.page_fails.items()}}

    def load_state(self, state: dict[str, Any]) -> None:
        self._restored = True
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
        self.acted_replied = dict(state.get("acted_replied", {}))
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
        self.replied = int(state.get("replied", 0))
        self.reasked = int(state.get("reasked", 0))
        self.told, self.told_at = (int(v) for v in state.get("told", [0, -1]))
        self.sent = {k: [dict(v[0]), *v[1:]] for k, v in state.get("sent", {}).items()}
        self.refusals = list(state.get("refusals", []))
        self.created = {k: [dict(v[0]), v[1]] for k, v in state.get("created", {}).items()}
        self.novel = int(state.get("novel", 0))
        self.hint_marks = {k: list(v) for k, v in state.get("hint_marks", {}).items()}
        self.err_runs = {k: list(v) for k, v in state.get("err_runs", {}).items()}
        self.units = {k: list(v) for k, v in state.get("units", {}).items()}
        self.page_fails = {k: list(v) for k, v in state.get("page_fails", {}).items()}
