"""Guard stacks named by spec strings, for the CLI and evals.

* ``off``: no guards.
* ``on``: the reference stack, in this order (hard limits first, then
  behaviour, then semantics):

  - ``budget``: 25 tool calls, 40 model calls, 300 s of wall clock, 200k total
    tokens; a hint at 80%. Generous for C4 (the longest good run makes ~8
    calls) but tight enough that a runaway loop ends within seconds.
  - ``loop``: an unchanged identical call at most twice (the seed's LD-01
    expects the loop recognised when the 3rd call repeats the 1st); a side
    effect that succeeded is not repeated (a fresh id is not new work); a
    tool failing transiently gets 4 retries when they are paced, 2 when they
    hammer, a hint when they are used up and never a block; pages past the end
    of a listing; ten unchanged polls (one hint at the 5th when nothing waits
    between them); cycles and work started over; 4 calls of one tool without
    progress, or 3 rewordings with the very same answer; 5 different calls
    with the same result; an outage across tools; a question the user
    refused or declined is not asked again (docs/guards.md says why each
    number is what it is). First trip of a kind: a hint; the same trip again:
    stop as ``loop_aborted`` after a finish-up.
  - ``result``: tool-result checks, the done / not-done ledger, and the claim
    check on the final answer.

* a comma list picks guards with those defaults: ``loop,budget``.

The goal guard needs a goal spec per run, so it is not in the named stacks;
add it in code (``GoalGuard(GoalSpec(...))``).
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..errors import UsageError
from ._base import Guard
from .budget import Budget, BudgetGuard
from .loop import LoopConfig, LoopGuard
from .result import ResultGuard

REFERENCE_BUDGET = Budget(max_tool_calls=25, max_model_calls=40, max_seconds=300, max_total_tokens=200_000)

FACTORIES: dict[str, Callable[[], Guard]] = {
    "budget": lambda: BudgetGuard(REFERENCE_BUDGET),
    "loop": lambda: LoopGuard(LoopConfig()),
    "result": lambda: ResultGuard(),
}
REFERENCE_ORDER = ("budget", "loop", "result")


def guard_stack(spec: str) -> Callable[[], Sequence[Guard]]:
    """A factory of fresh guards (guards hold per-run state) for ``spec``."""
    spec = spec.strip()
    if spec in ("off", "none", ""):
        return lambda: ()
    names = list(REFERENCE_ORDER) if spec == "on" else [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in FACTORIES]
    if unknown:
        goal = (" (the goal guard needs a goal per run: add GoalGuard(GoalSpec(task=..., acceptance=[...])) "
                "in code, docs/guards.md)") if "goal" in unknown else ""
        raise UsageError(f"unknown guard(s) {', '.join(unknown)} in --guards {spec!r}; "
                         f"use off, on, or a comma list of: {', '.join(FACTORIES)}{goal}")
    return lambda: tuple(FACTORIES[n]() for n in names)
