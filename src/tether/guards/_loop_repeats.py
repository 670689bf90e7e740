"""The loop guard's identical, cycle, near_duplicate and no_progress: the same call, answer or round again
(methods of :class:`~tether.guards.loop.LoopGuard`, which holds the state they read)."""

from __future__ import annotations

import re
from typing import Any
from ..messages import ToolCallRequest
from ._evidence import content_units
from ._calls import _QUERY, _key_kind, is_ack, is_order_key, names_resource, volatile_pair
from ._loop_common import (
    _NORMAL,
    _TRANSIENT,
    _POLL,
    _SIG,
    _TOOL,
    _RESULT,
    _PROGRESS,
    _KIND,
    _INDEX,
    _MAX_UNITS,
    _bound,
    _ordinal,
    _short,
)


def _only_query_differs(before: dict, parts: dict) -> bool:
    """Two calls whose arguments differ only in free text (``q``, ``query``, ``keywords``) put in other
    words: a search reworded. Words dropped from it (the same words in another order, or fewer of them)
    widen the search: a new try, not a rewording."""
    if before.keys() != parts.keys() or before == parts:
        return False
    return all(_key_kind(k) == _QUERY and not set(_WORDS.findall(parts[k])) <= set(_WORDS.findall(before[k]))
               for k in parts if parts[k] != before[k])


_WORDS = re.compile(r"[\u3400-\u9fff]|[^\W_\u3400-\u9fff]+")   # each CJK character, and words of other scripts


class _RepeatRules:
    """Mixed into :class:`~tether.guards.loop.LoopGuard`."""

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

    def _reordered(self, tool: str, parts: dict, rkey: str, data: Any) -> str:
        """The same question in another order (only ``sort`` / ``orderBy`` changed since the tool's
        last call) answered with the same things: the same answer, whatever order and numbers
        (counts, scores) it lists them with. Returns the result key to record the call under.
        Read only on a first call that names an order."""
        prev = self.last[tool]
        before = prev[0]
        if prev[1] == rkey or before.keys() != parts.keys():
            return rkey
        differ = [k for k in parts if parts[k] != before[k]]
        if not differ or not all(is_order_key(k) for k in differ):
            return rkey
        earlier = self._answers.get(f"{tool}:" + ",".join(f"{k}={v}" for k, v in before.items()))
        if earlier is None:
            return rkey
        units = content_units(data, names=True)
        if not units or units != content_units(earlier, names=True):
            return rkey
        return prev[1]

    def _capped(self, call: ToolCallRequest):
        """A read asked for more (a bigger ``limit``) and answered the very same: there is no more."""
        self._say("loop.same_answer", tool=call.name, count=2)
        return ("near_duplicate", f"~cap:{call.name}",
                f"{call.name} ({_short(call.arguments)}) asked for more and returned the very same data: that is "
                "all there is. Asking for more again will not change it: use what it returned.",
                {"count": 2, "limit": 1, "tool": call.name})

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

    def _refused_again(self, call: ToolCallRequest):
        """The same call a person already refused ("User rejected permission")."""
        self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=1)
        return ("identical", f"refused:{call.name}",
                f"{call.name} ({_short(call.arguments)}) was refused by the user; asking again with the same call "
                "will not change the answer. Ask what they would accept, or explain what cannot be done.",
                {"count": 2, "limit": 1, "tool": call.name})

    def _learn_irrelevant(self, tool: str, sig: str, parts: dict, rkey: str, data: Any, index: int,
                          nothing: bool, target: str) -> str:
        """Two calls of a read-only tool in a row that differ only in arguments whose
        values differ only in digits (a counter, a timestamp, a request uuid) and
        return the very same substantive data: those arguments change nothing, and
        the calls are the same call. Returns the signature to record the call under."""
        prev = self.last.get(tool)
        same = prev is not None and prev[1] == rkey and not is_ack(data) \
            and (not nothing or _only_query_differs(prev[0], parts))
        # (nothing again is the same answer only to a search reworded: nothing found for other targets is news)
        # a rewording: other arguments, the same resources named (another region is not a rewording)
        # the same data again, in other words, or asked again right away (no other call, no wait between)
        reworded = same and (len(prev) < 4 or prev[3] == target) \
            and (prev[0] != parts or (self.calls and self.calls[-1][_SIG] == sig))
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
