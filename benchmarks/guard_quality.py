"""Loop detection quality on a labelled corpus: recall, false alarms, stops.

    python benchmarks/guard_quality.py            # the table (markdown)
    python benchmarks/guard_quality.py --items    # also every item's first trip

Each trajectory of ``tests/data/loop_corpus`` is fed through a guard stack by
tether's offline path (:func:`tether.guards.offline.check_trace`, what
``tether guard-check`` runs), for the reference stack (``guard_stack("on")``:
budget + loop + result) and for each loop rule alone. Measures:

* recall: loop items on which a guard tripped (hint, block or stop) by the
  item's deadline action;
* false alarms: ok items with any trip at all (a hint counts);
* stops on ok items: ok items that a guard stopped, escalated or blocked a call in;
* the median action at which caught loops were first caught.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data" / "loop_corpus"))

from corpus import Item, action_index, items  # noqa: E402

from tether.guards.loop import RULES, LoopConfig, LoopGuard  # noqa: E402
from tether.guards.offline import check_trace  # noqa: E402
from tether.guards.stacks import guard_stack  # noqa: E402


def first_trips(item: Item, make: Callable[[], Sequence]) -> tuple[int | None, bool]:
    """(action index of the first trip or None, whether any trip stopped/blocked)."""
    trips = asyncio.run(check_trace(item.trajectory, list(make())))
    where = action_index(item.trajectory)
    first = min((where.get(t.seq, 1) for t in trips), default=None)
    hard = any(t.verdict.action in ("stop", "escalate", "block") for t in trips)
    return first, hard


def measure(corpus: list[Item], make: Callable[[], Sequence]) -> dict:
    loops = [i for i in corpus if i.label == "loop"]
    oks = [i for i in corpus if i.label == "ok"]
    caught_at: list[int] = []
    missed: list[str] = []
    for it in loops:
        first, _ = first_trips(it, make)
        if first is not None and first <= it.trip_by:
            caught_at.append(first)
        else:
            missed.append(f"{it.id}" + (f" (at {first})" if first else ""))
    alarms, stops = [], []
    for it in oks:
        first, hard = first_trips(it, make)
        if first is not None:
            alarms.append(it.id)
        if hard:
            stops.append(it.id)
    return {"loops": len(loops), "oks": len(oks), "caught": len(caught_at), "missed": missed, "alarms": alarms,
            "stops": stops, "median": statistics.median(caught_at) if caught_at else None}


def rule_alone(rule: str) -> Callable[[], Sequence]:
    return lambda: (LoopGuard(LoopConfig(rules=frozenset({rule}))),)


def main(argv: list[str]) -> None:
    corpus = items()
    rows = [("reference stack (on)", guard_stack("on"))] + [(f"loop: {r} alone", rule_alone(r)) for r in RULES]
    results = [(name, measure(corpus, make)) for name, make in rows]
    n_loop = results[0][1]["loops"]
    n_ok = results[0][1]["oks"]
    print(f"corpus: {len(corpus)} trajectories ({n_loop} loop, {n_ok} ok), tests/data/loop_corpus; "
          "offline path (check_trace)\n")
    print("| stack / rule | recall | false alarms (any trip on ok) | stops on ok | median action caught |")
    print("|---|---:|---:|---:|---:|")
    for name, m in results:
        median = "-" if m["median"] is None else f"{m['median']:g}"
        print(f"| {name} | {m['caught']}/{m['loops']} = {m['caught'] / m['loops']:.1%} | "
              f"{len(m['alarms'])}/{m['oks']} = {len(m['alarms']) / m['oks']:.1%} | {len(m['stops'])} | {median} |")
    ref = results[0][1]
    print(f"\nreference stack: missed {', '.join(ref['missed']) or 'none'}; "
          f"false alarms {', '.join(ref['alarms']) or 'none'}; stops on ok {', '.join(ref['stops']) or 'none'}")
    if "--items" in argv:
        make = guard_stack("on")
        for it in corpus:
            trips = asyncio.run(check_trace(it.trajectory, list(make())))
            where = action_index(it.trajectory)
            desc = "; ".join(f"{t.guard}.{t.verdict.rule} {t.verdict.action} @{where.get(t.seq)}" for t in trips[:3])
            print(f"{it.id:34} {it.label:4} by {it.trip_by or '-':>2}  {desc or '-'}")


if __name__ == "__main__":
    main(sys.argv[1:])
