"""The loop guard's shared pieces: the rule names, call-entry fields and small helpers
(:mod:`.loop` has the guard and its rules, one family per module)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal
from ..events import ModelDecisionEvent
from ..messages import canonical_json
from ._base import GuardContext

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


def _shows_items(data: Any) -> bool:
    """An answer with a non-empty list at the top or one level down (the items of a page)."""
    if type(data) is not dict:
        return bool(data) and type(data) is list
    for value in data.values():
        if type(value) is list and value:
            return True
        if type(value) is dict and any(type(inner) is list and inner for inner in value.values()):
            return True
    return False


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
