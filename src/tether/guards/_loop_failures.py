"""The loop guard's retry_budget, outage and failures that do not change: errors as (no) progress
(methods of :class:`~tether.guards.loop.LoopGuard`, which holds the state they read)."""

from __future__ import annotations

import re

from ..events import ToolResultEvent
from ..messages import ToolCallRequest
from ._evidence import delay_asked, held_by_another, retry_after_s
from ._base import Intervention
from ._calls import no_such_tool, result_hash
from ._loop_common import _SIG, _RESULT, _family, _grew, _MAX_KEYS, _bound, _short


# An error that refuses an argument as such (not its value): another value will be refused the same way.
_REFUSED_OPTION = re.compile(
    r"(?:option|parameter|argument|field|param)s?\W{0,3}(?:is |are )?not (?:supported|allowed|permitted)|"
    r"(?:unsupported|unknown|unrecognized|invalid) (?:option|parameter|argument|field|param)s?\b|"
    r"不支持的?(?:参数|选项|字段)|(?:参数|选项)\S{0,8}不(?:支持|允许)|未知的?(?:参数|字段|选项)", re.IGNORECASE)


class _FailureRules:
    """Mixed into :class:`~tether.guards.loop.LoopGuard`."""

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
                       result: ToolResultEvent, parts: dict | None = None):
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
        refused = self._refused_argument(run, rkey, parts, result)
        run = self.err_runs[tool] = [rkey, run[1] + 1 if same else 1, target, [*earlier[-7:], rkey], parts]
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
        if refused is not None and "no_progress" in cfg.rules:
            self._say("loop.no_progress", count=2, limit=1)
            return ("no_progress", f"~refused:{tool}",
                    f"{call.name} ({_short(self._args or {})}) failed again with the same error, which names the "
                    f"argument changed between ({refused}): the argument itself is refused, whatever its value. Do "
                    "not try other values of it: drop it, look the supported options up, or say what cannot be done.",
                    {"count": 2, "limit": 1})
        if "no_progress" in cfg.rules and run[1] >= cfg.max_same_error:
            self._say("loop.no_progress", count=run[1], limit=cfg.max_same_error - 1)
            return ("no_progress", f"~error:{tool}",
                    f"the last {run[1]} calls to {call.name}, each with other arguments, all failed with the same "
                    f"error; limit {cfg.max_same_error - 1}. Changing the arguments this way does not reach what the "
                    "error is about: read it again, look the expected form up, or ask.",
                    {"count": run[1], "limit": cfg.max_same_error - 1})
        return None

    @staticmethod
    def _refused_argument(run: list | None, rkey: str, parts: dict | None, result: ToolResultEvent) -> str | None:
        """The tool's last failure was this very error, the call changed one argument since, and
        the error names that argument ("Option not supported: page[offset]"): the name of the
        argument, else None."""
        if run is None or len(run) < 5 or run[0] != rkey or not parts or not run[4] or run[4].keys() != parts.keys():
            return None
        differ = [k for k in parts if parts[k] != run[4][k]]
        error = result.error or ""
        if len(differ) != 1 or len(differ[0]) < 4 or differ[0] not in error or _REFUSED_OPTION.search(error) is None:
            return None                     # ("old_string not found": the value is wrong, not the argument)
        return differ[0]

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
            elif at_s - r[2] < cfg.min_retry_gap_s or (r[5] is not None and at_s - r[2] < r[5]
                                                        and not _grew(r[5], asked)):
                r[3] += 1                       # no wait between, or less than the wait the server asked for (and
                                                # asks again: a wait that grows is being honoured, see below)
            if _grew(r[5], asked) or _grew(r[6], delay):
                r[4] = index                    # backing off: the wait the server asks for grows (it is being
                                                # honoured), or the call sets a growing delay itself
            r[5], r[6] = asked, delay
        r[0] += 1
        r[1], r[2] = index, at_s
        retried = r[0] - 1
        hammering = r[3] >= cfg.max_immediate_retries
        # the very same lock every time (the same holder, since the same moment): a hint at the usual attempt
        # count whatever the waits between (a backoff does not make another holder let go)
        key = f"retry_budget:{tool}"
        if hammering:
            limit, how = cfg.max_immediate_retries, " in quick succession"
        elif (r[0] == cfg.retry_hint_after and r[8] and (r[4] < 0 or held_by_another(result))
              or r[0] == cfg.max_transient_retries + 1) \
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
