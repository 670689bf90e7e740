"""Step-level loop features for the learned-scorer experiment (``benchmarks/learned_loop.py``).

A :class:`Featurizer` is fed a run's agent actions one at a time, the way a live
guard sees them (a tool call with its result, or a question with its reply), and
returns one feature vector per action computed from actions ``1..t`` only. State is
kept in hash maps and short windows, so a step costs the same at 10 and at 10,000
actions of history (only the "seen words" set grows).

Features are generic: no tool name, no field spelling of one writer. Arguments and
results are compared after canonicalisation (key order and list order ignored, NFKC,
case, width, punctuation and whitespace folded); "volatile" leaves (ids, uuids,
timestamps, urls, by key name or by value shape) are blanked in the *stable* form, so a
create that returns a fresh id, or a poll that returns a fresh timestamp, compares
equal to the one before. Key names are matched by broad concept patterns
(``more|next|cursor`` for continuation, ``status|state|phase`` for status,
``wait|sleep|delay|seconds`` for waits), which is as generic as a loop rule can be.

This is benchmark code, not product code: nothing under ``src/`` imports it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable

from tether.events import ModelDecisionEvent, ToolCallEvent, ToolResultEvent, Trajectory, UserMessage
from tether.messages import DecisionKind

WINDOW = 12          # actions looked back at for cycles, similarity and diversity
MAX_TEXT = 4000      # characters of one result read for words
MAX_LEAVES = 400     # leaves of one value walked

_PUNCT = re.compile(r"[\W_]+", re.UNICODE)
_VOLATILE_KEY = re.compile(r"(^| )(id|ids|uuid|guid|etag|url|uri|link|href|token|ts|timestamp|time|date|"
                           r"created|updated|modified|at|nonce|request id|trace id|sha|hash|elapsed|took|ms)$")
_VOLATILE_VAL = re.compile(r"^(?:[0-9a-f]{6,}(?:-[0-9a-f]{2,})*|\d{4}-\d{2}-\d{2}.*|\d{9,}|[a-z]{1,6}[-_ ]?\d{3,}"
                           r"|https? .*|\d+(?:\.\d+)? ?(?:ms|s|sec|seconds))$")
_CONT_KEY = re.compile(r"(more|next|cursor|continu|page token|truncated)")
_TOTAL_KEY = re.compile(r"(^| )(total|count|total count|total results|num results|size|last page|pages)$")
_PAGE_KEY = re.compile(r"(offset|page|cursor|start|skip|from|after|since|position)")
_STATUS_KEY = re.compile(r"(^| )(status|state|phase|stage|progress|conclusion|result)$")
_WAIT_KEY = re.compile(r"(wait|sleep|delay|seconds|secs|duration|backoff|interval|timeout|ms)")
_WAIT_TOOL = re.compile(r"(sleep|wait|delay|pause|backoff)")
_TRANSIENT = re.compile(r"(429|50[0234]|timeout|timed out|rate ?limit|too many|unavailable|temporar|overload|"
                        r"retry|try again|connection|reset|throttl|busy|gateway|econn|quota)")
_RETRY_AFTER = re.compile(r"(retry after|retry in|retry-after|wait \d|after \d+ ?s)")
_DIGITS = re.compile(r"\d+")
_REFUSE = re.compile(r"(^|\b)(no|not|don ?t|won ?t|can ?t|cannot|refuse|skip|later|stop|already|decline|n a)(\b|$)")


@lru_cache(maxsize=8192)
def norm_text(s: str) -> str:
    """NFKC (folds full width), case folded, punctuation and whitespace collapsed to one space."""
    s = unicodedata.normalize("NFKC", s).casefold()
    return " ".join(_PUNCT.sub(" ", s).split())


def canon(v: Any, stable: bool = False, key: str = "", budget: list | None = None) -> Any:
    """A hashable canonical form: dict keys and list items sorted, text normalised; with
    ``stable``, volatile leaves (ids, timestamps, urls) are blanked."""
    budget = budget if budget is not None else [MAX_LEAVES]
    budget[0] -= 1
    if budget[0] < 0:
        return "…"
    if isinstance(v, dict):
        items = []
        for k, x in v.items():
            nk = norm_text(str(k))
            items.append((nk, canon(x, stable, nk, budget)))
        return ("{",) + tuple(sorted(items, key=repr))
    if isinstance(v, (list, tuple)):
        return ("[",) + tuple(sorted((canon(x, stable, key, budget) for x in v), key=repr))
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        if stable and _VOLATILE_KEY.search(key):
            return "*"
        return float(v) if math.isfinite(float(v)) else str(v)
    t = norm_text(str(v)[:MAX_TEXT])
    if stable and (_VOLATILE_KEY.search(key) or _VOLATILE_VAL.match(t)):
        return "*"
    return t


def leaves(v: Any, key: str = "", out: list | None = None) -> list[tuple[str, Any]]:
    """(normalised key, leaf) pairs of a JSON value, bounded."""
    out = [] if out is None else out
    if len(out) >= MAX_LEAVES:
        return out
    if isinstance(v, dict):
        for k, x in v.items():
            leaves(x, norm_text(str(k)), out)
    elif isinstance(v, (list, tuple)):
        for x in v:
            leaves(x, key, out)
    else:
        out.append((key, v))
    return out


def is_empty(v: Any) -> bool:
    """None, an empty container, or a dict whose containers are all empty (an empty page)."""
    if v is None or v == "" or v == [] or v == {}:
        return True
    if isinstance(v, dict):
        conts = [x for x in v.values() if isinstance(x, (list, dict))]
        return bool(conts) and all(len(x) == 0 for x in conts)
    return False


def words(v: Any, lv: list | None = None) -> set[str]:
    out: set[str] = set()
    n = 0
    for k, x in (leaves(v) if lv is None else lv):
        if isinstance(x, bool) or x is None:
            continue
        t = norm_text(str(x)[:MAX_TEXT])
        if _VOLATILE_KEY.search(k) or _VOLATILE_VAL.match(t):
            continue
        for w in t.split():
            out.add(w)
            n += 1
            if n > 600:
                return out
    return out


def jaccard(a: set, b: set) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass
class Action:
    kind: str                       # "call" or "ask"
    tool: str = ""
    args: dict = field(default_factory=dict)
    ok: bool = True
    data: Any = None
    error: str = ""
    error_type: str = ""
    text: str = ""                  # the question
    answer: str | None = None


def actions_of(trajectory: Trajectory) -> list[Action]:
    """The agent actions of a trajectory in order, numbered as guard_quality.action_index numbers them."""
    out: list[Action] = []
    by_call: dict[str, Action] = {}
    last_ask: Action | None = None
    for e in trajectory:
        if isinstance(e, ToolCallEvent):
            a = Action("call", tool=e.tool, args=dict(e.arguments or {}))
            by_call[e.call_id] = a
            out.append(a)
            last_ask = None
        elif isinstance(e, ToolResultEvent) and e.call_id in by_call:
            a = by_call[e.call_id]
            a.ok, a.data, a.error, a.error_type = e.ok, e.data, e.error or "", e.error_type or ""
        elif isinstance(e, ModelDecisionEvent) and e.kind == DecisionKind.QUESTION:
            last_ask = Action("ask", text=str(e.text or ""))
            out.append(last_ask)
        elif isinstance(e, UserMessage) and last_ask is not None:
            last_ask.answer = e.content
            last_ask = None
    return out


FEATURES = [
    "log_t", "is_ask", "is_error", "same_call", "same_call_same_result", "same_call_stable_result",
    "same_tool_stable_result", "same_result_any", "result_empty", "empty_streak_tool", "novelty_leaf",
    "novelty_word", "no_new_info_streak", "since_new_call", "error_same_msg", "error_same_class",
    "error_streak", "error_distinct_ratio", "transient", "transient_recent", "wait_action", "wait_growing",
    "retry_after", "cycle_call", "cycle_tool", "cycle_result", "paging_after_end", "offset_past_total",
    "page_arg_advanced", "fresh_id_same_result", "args_sim_max", "result_sim_of_similar",
    "status_unchanged_streak", "status_changed", "ask_similar", "ask_refused_streak", "distinct_tools_recent",
    "frac_unique_calls", "ok_streak_tool",
]


def _period_run(seq: deque, maxp: int = 4) -> float:
    """The longest repetition ending at the newest element, in cycles: for period p, how many
    consecutive elements equal the one p back, divided by p (A B A B A -> 1.5 for p=2)."""
    s = list(seq)
    best = 0.0
    n = len(s)
    for p in range(1, maxp + 1):
        k = 0
        while k + p < n and s[n - 1 - k] == s[n - 1 - k - p]:
            k += 1
        if p > 1 and k and len(set(s[n - p:])) < 2:
            continue             # a run of one key is period 1's business
        best = max(best, k / p)
    return best


class Featurizer:
    """Incremental features of one run; :meth:`step` takes action t and returns its vector."""

    def __init__(self) -> None:
        self.t = 0
        self.call_count: dict = {}
        self.call_result: dict = {}
        self.call_stable: dict = {}
        self.tool_stable: dict = {}
        self.result_any: dict = {}
        self.empty_streak: dict = {}
        self.seen_leaves: set = set()
        self.seen_words: set = set()
        self.no_new = 0
        self.since_new_call = 0
        self.err_msg: dict = {}
        self.err_class: dict = {}
        self.err_streak = 0
        self.err_streak_msgs: set = set()
        self.recent_transient: deque = deque(maxlen=8)
        self.last_wait: float | None = None
        self.keys: deque = deque(maxlen=WINDOW)
        self.tools: deque = deque(maxlen=WINDOW)
        self.results: deque = deque(maxlen=WINDOW)
        self.ended: dict = {}          # tool -> calls after an end-of-pages signal (-1: no end seen)
        self.total_seen: dict = {}     # tool -> largest total-like number seen
        self.last_page: dict = {}      # tool -> {key: number} of its last call's page-like args
        self.recent_calls: deque = deque(maxlen=WINDOW)   # (tool, arg words, result words)
        self.status: dict = {}         # tool -> (last status, unchanged streak)
        self.asks: deque = deque(maxlen=WINDOW)
        self.ask_refused = 0
        self.ok_streak: dict = {}
        self.unique_calls = 0

    def step(self, a: Action) -> list[float]:
        self.t += 1
        f = dict.fromkeys(FEATURES, 0.0)
        f["log_t"] = math.log1p(self.t)
        if a.kind == "ask":
            self._ask(a, f)
        else:
            self._call(a, f)
        f["distinct_tools_recent"] = len(set(self.tools)) / max(len(self.tools), 1)
        f["frac_unique_calls"] = self.unique_calls / self.t
        return [f[k] for k in FEATURES]

    # -- questions ---------------------------------------------------------------
    def _ask(self, a: Action, f: dict) -> None:
        f["is_ask"] = 1.0
        w = set(norm_text(a.text).split())
        f["ask_similar"] = float(sum(1 for x in self.asks if jaccard(w, x) >= 0.5))
        ans = norm_text(a.answer) if a.answer is not None else None
        self.ask_refused = self.ask_refused + 1 if ans is None or _REFUSE.search(ans) else 0
        f["ask_refused_streak"] = float(self.ask_refused)
        self.asks.append(w)
        key = ("ask", tuple(sorted(w)))
        self._sequence(key, "ask", key, f)
        self.no_new += 1
        f["no_new_info_streak"] = math.log1p(self.no_new)

    # -- tool calls ----------------------------------------------------------------
    def _call(self, a: Action, f: dict) -> None:
        tool = norm_text(a.tool)
        args_c = canon(a.args)
        key = (tool, args_c)
        payload = a.data if a.ok else {"error": _DIGITS.sub("#", a.error)}
        res = (a.ok, canon(payload))
        stable = (a.ok, canon(payload, stable=True))
        n = self.call_count.get(key, 0)
        f["same_call"] = math.log1p(n)
        if n == 0:
            self.unique_calls += 1
            self.since_new_call = 0
        else:
            self.since_new_call += 1
        f["since_new_call"] = math.log1p(self.since_new_call)
        self.call_count[key] = n + 1
        for d, k, name in ((self.call_result, (key, res), "same_call_same_result"),
                           (self.call_stable, (key, stable), "same_call_stable_result"),
                           (self.tool_stable, (tool, stable), "same_tool_stable_result"),
                           (self.result_any, stable, "same_result_any")):
            m = d.get(k, 0)
            f[name] = math.log1p(m)
            d[k] = m + 1
        # a fresh id on an otherwise identical result of the same call
        f["fresh_id_same_result"] = float(res != stable and self.call_stable[(key, stable)] > 1
                                          and self.call_result[(key, res)] == 1)
        empty = a.ok and is_empty(a.data)
        f["result_empty"] = float(empty)
        self.empty_streak[tool] = self.empty_streak.get(tool, 0) + 1 if empty else 0
        f["empty_streak_tool"] = math.log1p(self.empty_streak[tool])
        # novelty of content, order-independent
        pl = leaves(payload)
        lv = {canon(x, True, k) for k, x in pl} if a.ok else set()
        new_lv = lv - self.seen_leaves
        f["novelty_leaf"] = len(new_lv) / len(lv) if lv else 0.0
        ws = words(payload, pl) if a.ok else set()
        new_ws = ws - self.seen_words
        f["novelty_word"] = len(new_ws) / len(ws) if ws else 0.0
        self.seen_leaves |= lv
        self.seen_words |= ws
        self.no_new = 0 if (new_ws or (new_lv - {"*"})) else self.no_new + 1
        f["no_new_info_streak"] = math.log1p(self.no_new)
        # errors
        if not a.ok:
            f["is_error"] = 1.0
            msg = norm_text(_DIGITS.sub("#", a.error))[:300]
            cls = norm_text(a.error_type) or "error"
            f["error_same_msg"] = math.log1p(self.err_msg.get(msg, 0))
            f["error_same_class"] = math.log1p(self.err_class.get(cls, 0))
            self.err_msg[msg] = self.err_msg.get(msg, 0) + 1
            self.err_class[cls] = self.err_class.get(cls, 0) + 1
            self.err_streak += 1
            self.err_streak_msgs.add(msg)
            tr = bool(_TRANSIENT.search(msg + " " + cls))
            f["transient"] = float(tr)
            f["retry_after"] = float(bool(_RETRY_AFTER.search(norm_text(a.error))))
        else:
            self.err_streak = 0
            self.err_streak_msgs = set()
            tr = False
        self.recent_transient.append(tr)
        f["error_streak"] = math.log1p(self.err_streak)
        f["error_distinct_ratio"] = len(self.err_streak_msgs) / self.err_streak if self.err_streak else 0.0
        f["transient_recent"] = float(sum(self.recent_transient))
        # waits / backoff
        wait = None
        arg_leaves = leaves(a.args)
        for k, x in arg_leaves:
            if isinstance(x, (int, float)) and not isinstance(x, bool) and _WAIT_KEY.search(k):
                wait = float(x)
                break
        if wait is not None or _WAIT_TOOL.search(tool):
            f["wait_action"] = 1.0
            if wait is not None and self.last_wait is not None and wait > self.last_wait:
                f["wait_growing"] = 1.0
            if wait is not None:
                self.last_wait = wait
        # paging
        pages = {k: float(x) for k, x in arg_leaves if isinstance(x, (int, float)) and not isinstance(x, bool)
                 and _PAGE_KEY.search(k)}
        prev = self.last_page.get(tool)
        if prev and any(k in prev and v > prev[k] for k, v in pages.items()):
            f["page_arg_advanced"] = 1.0
        if pages:
            self.last_page[tool] = pages
        total = self.total_seen.get(tool)
        if total is not None and pages and max(pages.values()) >= total > 0:
            f["offset_past_total"] = 1.0
        ended = self.ended.get(tool, -1)
        if ended >= 0:
            self.ended[tool] = ended + 1
            f["paging_after_end"] = math.log1p(ended + 1)
        if a.ok:
            end = empty
            for k, x in pl:
                if _CONT_KEY.search(k) and (x is False or x is None or x == "" or x == 0):
                    end = True
                if _TOTAL_KEY.search(k) and isinstance(x, (int, float)) and not isinstance(x, bool):
                    self.total_seen[tool] = max(self.total_seen.get(tool, 0.0), float(x))
            if end and tool not in self.ended:
                self.ended[tool] = 0
            # status
            st = next((canon(x) for k, x in pl if _STATUS_KEY.search(k)), None)
            if st is not None:
                last, streak = self.status.get(tool, (None, 0))
                if last == st:
                    streak += 1
                    f["status_unchanged_streak"] = math.log1p(streak)
                elif last is not None:
                    f["status_changed"] = 1.0
                    streak = 0
                self.status[tool] = (st, streak)
        # reworded calls: the most similar recent call of the same tool, and how alike its result was
        aw = words(a.args, arg_leaves)
        best, best_res = 0.0, 0.0
        for t2, w2, r2 in self.recent_calls:
            if t2 == tool:
                s = jaccard(aw, w2)
                if s > best:
                    best, best_res = s, jaccard(ws, r2) if a.ok else 0.0
        f["args_sim_max"] = best
        f["result_sim_of_similar"] = best_res
        self.recent_calls.append((tool, aw, ws))
        self.ok_streak[tool] = self.ok_streak.get(tool, 0) + 1 if a.ok else 0
        f["ok_streak_tool"] = math.log1p(self.ok_streak[tool])
        self._sequence(key, tool, stable, f)

    def _sequence(self, key: Any, tool: str, result: Any, f: dict) -> None:
        self.keys.append(hash(key))
        self.tools.append(tool)
        self.results.append(hash(result))
        f["cycle_call"] = _period_run(self.keys)
        f["cycle_tool"] = _period_run(self.tools)
        f["cycle_result"] = _period_run(self.results)


def features_of(actions: Iterable[Action]) -> list[list[float]]:
    fz = Featurizer()
    return [fz.step(a) for a in actions]
