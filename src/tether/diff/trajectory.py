"""Trajectory diff: Δ = (Δstep, Δargs, Δrecovery, Δterminal, Δtext) (seed 004, section 14).

An agent regression is never judged by ``old_reply == new_reply``. Two runs of
the same case are compared in five parts:

- **step**: which tools were called, in what order (``difflib.SequenceMatcher``
  over the *executed* calls' tool names): tools added, removed, moved, with
  their 1-based positions, and per-tool call counts;
- **args**: for calls aligned on the same tool, the arguments that differ,
  readable as ``create_refund.amount: 19900 -> 199``;
- **recovery**: how failures were handled: errors, empty results, retries of
  failed calls, distinct strategies, calls after the first failure, guard trips;
- **terminal**: the status the run ended with;
- **text**: the final reply: a similarity ratio and a short unified diff.

A sixth, ``cost`` (steps, tool calls, tokens), is kept beside them for the
performance change type. Timings and ids are ignored: only what the agent did counts.
"""

from __future__ import annotations

import difflib
from collections import Counter
from typing import Any

from .._assess import is_empty_data
from ..events import Outcome, Trajectory
from ..evals.scoring import unsuccessful
from ..messages import canonical_json
from ..status import TerminalStatus
from .parts import (
    TEXT_DIFF_LINES,
    ArgChange,
    ArgsDiff,
    Assessment,
    ComparedCall,
    CostDiff,
    CountChange,
    MetricChange,
    RecoveryDiff,
    RecoveryStats,
    StepChange,
    StepDiff,
    TerminalDiff,
    TerminalKind,
    TextDiff,
    TrajectoryDiff,
)

__all__ = ["ArgChange", "ArgsDiff", "RecoveryDiff", "RecoveryStats", "StepChange", "StepDiff", "TerminalDiff",
           "TextDiff", "TrajectoryDiff", "diff_recovery", "diff_terminal", "diff_text", "diff_trajectories",
           "recovery_stats"]


def diff_trajectories(base: Trajectory, new: Trajectory) -> TrajectoryDiff:
    """Compare two runs of the same case, part by part."""
    base_calls = _calls(base)
    new_calls = _calls(new)
    step, pairs = _step_diff(base_calls, new_calls)
    base_cost, new_cost = _cost(base), _cost(new)
    return TrajectoryDiff(
        base_run=base.started.run_id if base.started else "",
        new_run=new.started.run_id if new.started else "",
        step=step,
        args=ArgsDiff(changes=[c for i, j in pairs for c in _arg_changes(base_calls[i], new_calls[j], i, j)]),
        recovery=diff_recovery(recovery_stats(base), recovery_stats(new)),
        terminal=diff_terminal(_status(base), _status(new)),
        text=diff_text(base.final_reply, new.final_reply),
        cost=CostDiff(changes=_metric_changes(base_cost, new_cost, worse_if_higher=set(base_cost))),
    )


def _calls(t: Trajectory) -> list[ComparedCall]:
    """The executed calls, each marked side-effecting or not from the record: the
    tool specs the run offered and the ledger's events (None for a trace that has neither)."""
    from ..events import SideEffectEvent

    specs = t.started.tool_specs if t.started else []
    ledger = {e.tool for e in t.of_type(SideEffectEvent)}
    known = bool(specs) or bool(ledger)
    effecting = {s.name for s in specs if s.side_effect} | ledger
    return [ComparedCall(tool=c.tool, arguments=c.arguments, side_effect=(c.tool in effecting) if known else None)
            for c in t.tool_calls(executed_only=True)]


def _status(t: Trajectory) -> str | None:
    return str(t.status) if t.status is not None else None


def _step_diff(base: list[ComparedCall], new: list[ComparedCall]) -> tuple[StepDiff, list[tuple[int, int]]]:
    """Align identical calls first (tool + arguments), then, between them, calls
    of the same tool (their arguments differ); what is left was added or removed."""
    a, b = [c.tool for c in base], [c.tool for c in new]
    pairs: list[tuple[int, int]] = []
    items: list[list] = []          # [kind, base index | None, new index | None], in opcode order
    exact = difflib.SequenceMatcher(None, [c.signature for c in base], [c.signature for c in new], autojunk=False)
    for op, i1, i2, j1, j2 in exact.get_opcodes():
        if op == "equal":
            pairs.extend(zip(range(i1, i2), range(j1, j2)))
            continue
        by_name = difflib.SequenceMatcher(None, a[i1:i2], b[j1:j2], autojunk=False)
        for op2, k1, k2, m1, m2 in by_name.get_opcodes():
            if op2 == "equal":
                pairs.extend(zip(range(i1 + k1, i1 + k2), range(j1 + m1, j1 + m2)))
                continue
            items += [["removed", i, None] for i in range(i1 + k1, i1 + k2)]
            items += [["added", None, j] for j in range(j1 + m1, j1 + m2)]
    pairs.sort()
    # A tool removed in one place and added in another was moved (reordered).
    for rem in [x for x in items if x[0] == "removed"]:
        add = next((x for x in items if x[0] == "added" and b[x[2]] == a[rem[1]]), None)
        if add is not None:
            rem[0], rem[2] = "moved", add[2]
            items.remove(add)
    changes: list[StepChange] = []
    for kind, i, j in items:
        last = changes[-1] if changes else None
        if (last is not None and last.kind == kind
                and _next(last.base_pos, last.count, i) and _next(last.new_pos, last.count, j)):
            last.tools.append(a[i] if i is not None else b[j])
            continue
        changes.append(StepChange(kind=kind, tools=[a[i] if i is not None else b[j]],
                                  base_pos=None if i is None else i + 1, new_pos=None if j is None else j + 1))
    ca, cb = Counter(a), Counter(b)
    counts = [CountChange(tool=t, base=ca[t], new=cb[t]) for t in sorted(set(ca) | set(cb)) if ca[t] != cb[t]]
    return StepDiff(base_calls=base, new_calls=new, changes=changes, counts=counts), pairs


def _next(start: int | None, count: int, index: int | None) -> bool:
    if start is None or index is None:
        return start is None and index is None
    return index + 1 == start + count


def _arg_changes(base: ComparedCall, new: ComparedCall, i: int, j: int) -> list[ArgChange]:
    out: list[ArgChange] = []

    def walk(path: str, x: Any, y: Any, in_x: bool = True, in_y: bool = True) -> None:
        if in_x and in_y and isinstance(x, dict) and isinstance(y, dict):
            for key in sorted(set(x) | set(y), key=str):
                walk(f"{path}.{key}" if path else str(key), x.get(key), y.get(key), key in x, key in y)
        elif in_x and in_y and isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for k, (u, v) in enumerate(zip(x, y)):
                walk(f"{path}[{k}]", u, v)
        elif not (in_x and in_y and canonical_json(x) == canonical_json(y)):
            out.append(ArgChange(tool=base.tool, path=path or "(arguments)", base_pos=i + 1, new_pos=j + 1,
                                 base=x, new=y, base_present=in_x, new_present=in_y))

    walk("", base.arguments, new.arguments)
    return out


def recovery_stats(t: Trajectory) -> RecoveryStats:
    """How failures were handled in one run (executed calls only).

    After the first unsuccessful result (error or empty), each call is a
    *retry* (the same tool and arguments as a call that failed), a *reword*
    (a tool that failed, other arguments) or a *fallback* (another tool)."""
    failed_sigs: set[str] = set()
    failed_tools: set[str] = set()
    retries = after = 0
    kinds: list[str] = []
    for call, result in t.calls_with_results(executed_only=True):
        if failed_sigs:
            after += 1
            kind = ("retry" if call.signature in failed_sigs
                    else "reword" if call.tool in failed_tools else "fallback")
            retries += kind == "retry"
            if kind not in kinds:
                kinds.append(kind)
        if unsuccessful(result):
            failed_sigs.add(call.signature)
            failed_tools.add(call.tool)
    results = [r for r in t.tool_results() if r.outcome is not Outcome.BLOCKED]
    executed = t.tool_calls(executed_only=True)
    return RecoveryStats(
        errors=sum(1 for r in results if not r.ok),
        empty=sum(1 for r in results if r.ok and is_empty_data(r.data)),
        retries=retries,
        max_identical=t.max_identical_calls(executed_only=True),
        strategies=kinds,
        calls_after_failure=after,
        guard_trips=len(t.guard_trips()),
        blocked=len(t.tool_calls()) - len(executed),
    )


_WORSE_IF_HIGHER = {"retries", "max_identical", "guard_trips", "blocked"}


def diff_recovery(base: RecoveryStats, new: RecoveryStats) -> RecoveryDiff:
    """More retries of failed calls, more identical repeats, more guard trips or
    blocked calls are worse; fewer distinct strategies is worse when the new run
    met a failure. Error, empty-result and after-failure counts are reported as
    neutral: they depend on what the tools answered."""
    changes = _metric_changes(base.model_dump(), new.model_dump(), worse_if_higher=_WORSE_IF_HIGHER)
    for c in changes:
        if c.metric == "strategies":
            fewer = len(c.new) < len(c.base)
            met_failure = new.errors + new.empty > 0
            c.assessment = "worse" if fewer and met_failure else "better" if len(c.new) > len(c.base) else "neutral"
    return RecoveryDiff(base=base, new=new, changes=changes)


def _metric_changes(base: dict[str, Any], new: dict[str, Any], *, worse_if_higher: set[str]) -> list[MetricChange]:
    out = []
    for key, old in base.items():
        value = new.get(key)
        if value == old:
            continue
        assessment: Assessment = "neutral"
        if key in worse_if_higher and isinstance(old, (int, float)) and isinstance(value, (int, float)):
            assessment = "worse" if value > old else "better"
        out.append(MetricChange(metric=key, base=old, new=value, assessment=assessment))
    return out


def _cost(t: Trajectory) -> dict[str, int]:
    usage = t.usage()
    return {"steps": t.finished.steps if t.finished else 0,
            "tool_calls": len(t.tool_calls(executed_only=True)),
            "tokens": usage.input_tokens + usage.output_tokens}


def is_clean(status: str | None) -> bool:
    try:
        return status is not None and TerminalStatus(status).is_clean_ending
    except ValueError:
        return False


def diff_terminal(base: str | None, new: str | None) -> TerminalDiff:
    """``improved``: from an unclean ending (step_limit, error, ...) to a clean one
    (completed, awaiting_user, submitted, succeeded, rejected); ``regressed``: the
    reverse; ``changed``: another status of the same kind."""
    if base == new:
        kind: TerminalKind = "same"
    elif is_clean(base) != is_clean(new):
        kind = "improved" if is_clean(new) else "regressed"
    else:
        kind = "changed"
    return TerminalDiff(base=base, new=new, kind=kind)


def diff_text(base: str, new: str) -> TextDiff:
    if base == new:
        return TextDiff(base=base, new=new)
    ratio = difflib.SequenceMatcher(None, base, new).ratio()
    lines = list(difflib.unified_diff(base.splitlines(), new.splitlines(), "base", "new", lineterm="", n=0))
    lines = [ln for ln in lines[2:] if not ln.startswith("@@")]
    return TextDiff(base=base, new=new, similarity=round(ratio, 3), diff=lines[:TEXT_DIFF_LINES])
