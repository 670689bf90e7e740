"""Trajectory assertions (seed 004 section 11): steps, arguments, counts, order,
side effects, terminal state, reply, efficiency.

Each failure raises one of the typed mismatches of :mod:`tether.mismatch` (on the :mod:`tether.replay` face)
(all ``AssertionError``), naming the step where the run departed::

    assert_tool_sequence(result, [
        ("get_order", {"order_id": "A100"}),
        ("check_refund", {"order_id": "A100"}),
        ("create_refund", {"order_id": "A100", "amount": 19900}),
    ])
    # ReplayMismatch.ToolArguments at step 3: create_refund arguments differ
    #   amount: expected 19900, actual 199

Every function takes a :class:`~tether.events.Trajectory` or anything with a
``.trajectory`` (a ``RunResult``). Argument modes follow agentevals: ``exact``,
``ignore``, ``superset`` (the call has at least the expected arguments),
``subset`` (the call has only expected arguments), a list of keys (compare
those only) or ``fn(actual, expected) -> bool``; a mapping gives per-tool modes,
``"*"`` the default.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence, Union

from ..errors import UsageError
from ..events import ToolCallEvent, ToolResultEvent, Trajectory
from ..mismatch import (
    SemanticOutputMismatch,
    TerminalStateMismatch,
    ToolArgumentsMismatch,
    ToolCallCountMismatch,
    ToolNameMismatch,
    ToolResultMismatch,
)
from ..status import TerminalStatus
from ..tools.doubles import args_match

SequenceMode = Literal["strict", "unordered", "subset", "superset"]
ArgsMatcher = Union[str, Sequence[str], Callable[[dict[str, Any], dict[str, Any]], bool]]
ArgsSpec = Union[ArgsMatcher, Mapping[str, ArgsMatcher]]
Expected = Union[str, tuple[str, dict[str, Any]]]


def _traj(t: Any) -> Trajectory:
    return t if isinstance(t, Trajectory) else t.trajectory


def _matcher(tool: str, args: ArgsSpec) -> tuple[Callable[[dict[str, Any], dict[str, Any]], bool], str]:
    spec: Any = args
    if isinstance(args, Mapping):
        spec = args.get(tool, args.get("*", "exact"))
    if isinstance(spec, str):
        mode = spec
        return (lambda a, e: args_match(a, e, mode)), mode  # type: ignore[arg-type]
    if callable(spec):
        return spec, getattr(spec, "__name__", "custom matcher")
    keys = list(spec)
    return (lambda a, e: all(a.get(k) == e.get(k) for k in keys)), f"keys {keys}"


def _item(item: Expected) -> tuple[str, dict[str, Any] | None]:
    if isinstance(item, str):
        return item, None
    name, arguments = item
    return name, arguments


def _fits(call: ToolCallEvent, want: tuple[str, dict[str, Any] | None], args: ArgsSpec) -> bool:
    name, expected = want
    if call.tool != name:
        return False
    return expected is None or _matcher(name, args)[0](call.arguments, expected)


def _args_mismatch(call: ToolCallEvent, expected: dict[str, Any], args: ArgsSpec) -> ToolArgumentsMismatch:
    return ToolArgumentsMismatch(call.step, expected, call.arguments, rule=_matcher(call.tool, args)[1],
                                 detail=f"{call.tool} arguments differ")


# -- steps -------------------------------------------------------------------------
def assert_tool_sequence(trajectory: Any, expected: Iterable[Expected], *, mode: SequenceMode = "strict",
                         args: ArgsSpec = "exact", executed_only: bool = False) -> None:
    """The agent's tool calls against ``expected`` (names, or ``(name, arguments)``;
    a bare name leaves that call's arguments unchecked).

    * ``strict``: the same calls in the same order, no more, no fewer;
    * ``unordered``: the same calls, any order;
    * ``superset``: at least the expected calls (others allowed), any order;
    * ``subset``: only expected calls (some may be missing), any order.
    """
    calls = _traj(trajectory).tool_calls(executed_only=executed_only)
    want = [_item(i) for i in expected]
    if mode == "strict":
        for call, (name, exp) in zip(calls, want):
            if call.tool != name:
                raise ToolNameMismatch(call.step, name, call.tool, detail=f"expected {name}, the agent called {call.tool}")
            if exp is not None and not _fits(call, (name, exp), args):
                raise _args_mismatch(call, exp, args)
        if len(calls) > len(want):
            extra = calls[len(want)]
            raise ToolCallCountMismatch(extra.step, len(want), len(calls),
                                        detail=f"unexpected call {extra.tool} {extra.arguments}")
        if len(calls) < len(want):
            name = want[len(calls)][0]
            raise ToolCallCountMismatch(calls[-1].step + 1 if calls else None, len(want), len(calls),
                                        detail=f"expected call {len(calls) + 1} ({name}) was never made")
        return
    if mode not in ("unordered", "subset", "superset"):
        raise UsageError(f"unknown sequence mode {mode!r}; use strict, unordered, subset or superset")
    pairs = _match(calls, want, args)
    unmatched_calls = [c for i, c in enumerate(calls) if i not in pairs.values()]
    missing = [w for j, w in enumerate(want) if j not in pairs]
    if mode in ("unordered", "superset") and missing:
        _raise_missing(missing[0], unmatched_calls, calls, want, args)
    if mode in ("unordered", "subset") and unmatched_calls:
        _raise_extra(unmatched_calls[0], [w for j, w in enumerate(want) if j not in pairs], calls, want, args)


def _match(calls: list[ToolCallEvent], want: list[tuple[str, dict[str, Any] | None]], args: ArgsSpec) -> dict[int, int]:
    """Maximum matching expected -> call (Kuhn's algorithm; sizes are small)."""
    owner: dict[int, int] = {}   # call index -> expected index

    def place(j: int, seen: set[int]) -> bool:
        for i, call in enumerate(calls):
            if i in seen or not _fits(call, want[j], args):
                continue
            seen.add(i)
            if i not in owner or place(owner[i], seen):
                owner[i] = j
                return True
        return False

    for j in range(len(want)):
        place(j, set())
    return {j: i for i, j in owner.items()}


def _counts(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in items:
        out[name] = out.get(name, 0) + 1
    return out


def _raise_missing(w: tuple[str, dict[str, Any] | None], free: list[ToolCallEvent], calls: list[ToolCallEvent],
                   want: list[tuple[str, dict[str, Any] | None]], args: ArgsSpec) -> None:
    name, exp = w
    same = [c for c in free if c.tool == name]
    if same and exp is not None:
        raise _args_mismatch(same[0], exp, args)
    raise ToolCallCountMismatch(None, _counts(n for n, _ in want).get(name, 0), _counts(c.tool for c in calls).get(name, 0),
                                detail=f"expected call {name} {exp or ''} was never made".rstrip())


def _raise_extra(call: ToolCallEvent, free: list[tuple[str, dict[str, Any] | None]], calls: list[ToolCallEvent],
                 want: list[tuple[str, dict[str, Any] | None]], args: ArgsSpec) -> None:
    same = [exp for n, exp in free if n == call.tool and exp is not None]
    if same:
        raise _args_mismatch(call, same[0], args)
    allowed = _counts(n for n, _ in want)
    if call.tool not in allowed:
        raise ToolNameMismatch(call.step, sorted(allowed), call.tool, detail=f"{call.tool} is not an expected tool")
    raise ToolCallCountMismatch(call.step, allowed[call.tool], _counts(c.tool for c in calls)[call.tool],
                                detail=f"{call.tool} called more often than expected")


# -- order and preconditions -------------------------------------------------------------
def assert_called_before(trajectory: Any, first: str, then: str) -> None:
    """Both tools were called, and ``first`` before any call to ``then``."""
    t = _traj(trajectory)
    a, b = t.tool_calls(first), t.tool_calls(then)
    for name, calls in ((first, a), (then, b)):
        if not calls:
            raise ToolCallCountMismatch(None, "at least 1", 0, detail=f"{name} was never called")
    if b[0].seq < a[0].seq:
        raise ToolNameMismatch(b[0].step, first, then, detail=f"{then} at step {b[0].step} came before any {first}")


def assert_precondition(trajectory: Any, tool: str, *, requires: str, same: Sequence[str] = (),
                        check: Callable[[ToolResultEvent], bool] | None = None) -> None:
    """Every call to ``tool`` comes after a successful call to ``requires`` (with
    equal ``same`` arguments, e.g. ``("order_id",)``; ``check`` tests its result,
    e.g. ``lambda r: r.data["eligible"]``). Passes when ``tool`` was never called."""
    t = _traj(trajectory)
    ok = check or (lambda r: r.ok)
    for call in t.tool_calls(tool):
        met = any(
            r is not None and ok(r) and pre.seq < call.seq
            and all(pre.arguments.get(k) == call.arguments.get(k) for k in same)
            for pre, r in t.calls_with_results(requires)
        )
        if not met:
            keys = {k: call.arguments.get(k) for k in same}
            raise ToolNameMismatch(call.step, requires, tool,
                                   detail=f"{tool} at step {call.step} without a satisfied {requires} before it"
                                          + (f" for {keys}" if keys else ""))


# -- arguments and counts ------------------------------------------------------------------
def assert_args(trajectory: Any, tool: str, expected: dict[str, Any] | Callable[[dict[str, Any]], bool], *,
                mode: ArgsMatcher = "exact", call: int | None = None) -> None:
    """The arguments of every call to ``tool`` (or only its ``call``-th, from 1)
    match ``expected`` under ``mode``, or satisfy ``expected`` when it is a predicate."""
    calls = _traj(trajectory).tool_calls(tool)
    if call is not None:
        if len(calls) < call:
            raise ToolCallCountMismatch(None, f"at least {call}", len(calls), detail=f"calls to {tool}")
        calls = [calls[call - 1]]
    if not calls:
        raise ToolCallCountMismatch(None, "at least 1", 0, detail=f"{tool} was never called")
    for c in calls:
        if callable(expected):
            if not expected(c.arguments):
                name = getattr(expected, "__name__", "predicate")
                raise ToolArgumentsMismatch(c.step, name, c.arguments, rule="predicate",
                                            detail=f"{tool} arguments fail {name}")
        elif not _matcher(tool, mode)[0](c.arguments, expected):
            raise _args_mismatch(c, expected, mode)


def assert_call_count(trajectory: Any, tool: str, expected: int | range | tuple[int, int], *,
                      executed_only: bool = False) -> None:
    """``tool`` was called ``expected`` times (an int, a ``range`` or an inclusive ``(lo, hi)``)."""
    calls = _traj(trajectory).tool_calls(tool, executed_only=executed_only)
    lo, hi = ((expected, expected) if isinstance(expected, int) else
              (expected.start, expected.stop - 1) if isinstance(expected, range) else expected)
    n = len(calls)
    if lo <= n <= hi:
        return
    step = calls[hi].step if n > hi else None
    want: Any = lo if lo == hi else f"{lo}..{hi}"
    raise ToolCallCountMismatch(step, want, n, detail=f"calls to {tool}")


def assert_retry_safe(trajectory: Any, tool: str, *, key: str = "idempotency_key") -> None:
    """A side-effecting ``tool`` retried after a failed call (a timeout: did it
    happen?) repeats the failed call's idempotency ``key``; a new key risks a
    second effect (seed 004 section 10.2)."""
    pending: dict[str, Any] = {}   # the other arguments -> key of the failed call
    for call, result in _traj(trajectory).calls_with_results(tool):
        rest = repr(sorted((k, repr(v)) for k, v in call.arguments.items() if k != key))
        if rest in pending and call.arguments.get(key) != pending[rest]:
            raise ToolArgumentsMismatch(call.step, {key: pending[rest]}, {key: call.arguments.get(key)},
                                        rule="retry keeps the key",
                                        detail=f"{tool} retried after a failure with another {key}")
        if result is not None and not result.ok:
            pending[rest] = call.arguments.get(key)
        else:
            pending.pop(rest, None)


# -- side effects, terminal state, reply ---------------------------------------------------------
def assert_side_effects(records: Sequence[Mapping[str, Any]], expected: int | Sequence[Mapping[str, Any]], *,
                        what: str = "side effects") -> None:
    """The records a fake keeps (``fake.refunds``): how many, and optionally what
    each holds (every expected field equal; other fields ignored)."""
    want = expected if isinstance(expected, int) else len(expected)
    if len(records) != want:
        raise ToolCallCountMismatch(None, want, len(records), detail=f"{what}: expected {want}, found {len(records)}")
    if isinstance(expected, int):
        return
    for i, (record, exp) in enumerate(zip(records, expected)):
        if not args_match(dict(record), dict(exp), "superset"):
            raise ToolResultMismatch(None, dict(exp), {k: record.get(k) for k in exp}, rule="superset",
                                     detail=f"{what}[{i}] differs")


def assert_status(trajectory: Any, expected: str | TerminalStatus | Iterable[str | TerminalStatus]) -> None:
    t = _traj(trajectory)
    allowed = {str(expected)} if isinstance(expected, str) else {str(s) for s in expected}
    actual = str(t.status) if t.status is not None else None
    if actual not in allowed:
        finished = t.finished
        want: Any = next(iter(allowed)) if len(allowed) == 1 else sorted(allowed)
        raise TerminalStateMismatch(finished.steps if finished else None, want, actual,
                                    detail=f"reason: {finished.reason}" if finished and finished.reason else "")


def assert_reply(trajectory: Any, *, contains: Iterable[str] = (), not_contains: Iterable[str] = (),
                 matches: str | re.Pattern[str] | Callable[[str], bool] | None = None,
                 equals: str | None = None) -> None:
    """Checks on the final reply: exact text, substrings present or absent, a
    regular expression (searched) or a predicate."""
    t = _traj(trajectory)
    reply = t.final_reply
    step = t.finished.steps if t.finished else None
    if equals is not None and reply != equals:
        raise SemanticOutputMismatch(step, equals, reply, detail="reply differs")
    for s in contains:
        if s not in reply:
            raise SemanticOutputMismatch(step, f"contains {s!r}", reply, detail=f"reply lacks {s!r}")
    for s in not_contains:
        if s in reply:
            raise SemanticOutputMismatch(step, f"does not contain {s!r}", reply, detail=f"reply contains {s!r}")
    if matches is not None:
        if callable(matches) and not isinstance(matches, re.Pattern):
            ok, label = matches(reply), getattr(matches, "__name__", "predicate")
        else:
            ok, label = re.search(matches, reply) is not None, f"matches {getattr(matches, 'pattern', matches)!r}"
        if not ok:
            raise SemanticOutputMismatch(step, label, reply, detail=f"reply fails {label}")


# -- efficiency -------------------------------------------------------------------------------------
def _empty(data: Any) -> bool:
    return data is None or data == {} or data == [] or data == ""


def redundant_calls(trajectory: Any) -> list[ToolCallEvent]:
    """Calls that repeat the latest identical call (tool + canonical arguments)
    when that one succeeded with a non-empty result, and did not bring a
    different result. A retry after an error, a timeout or an empty result is
    not redundant; the same call returning something new is progress."""
    last: dict[str, ToolResultEvent | None] = {}
    out: list[ToolCallEvent] = []
    for call, result in _traj(trajectory).calls_with_results():
        before = last.get(call.signature)
        if before is not None and before.ok and not _empty(before.data):
            if result is None or not result.ok or result.data == before.data:
                out.append(call)
        last[call.signature] = result
    return out


def efficiency(trajectory: Any) -> float:
    """``1 - redundant / total`` over tool calls (seed 004 section 11.3); 1.0 with no calls."""
    total = len(_traj(trajectory).tool_calls())
    return 1.0 if total == 0 else 1.0 - len(redundant_calls(trajectory)) / total


__all__ = [
    "assert_args", "assert_call_count", "assert_called_before", "assert_precondition", "assert_reply",
    "assert_retry_safe", "assert_side_effects", "assert_status", "assert_tool_sequence", "efficiency",
    "redundant_calls",
]
