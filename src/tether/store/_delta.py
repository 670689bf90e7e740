"""Checkpoint states stored as deltas against the run's previous checkpoint.

A run's state grows by appending: the conversation gains a message or two a
step, the last request of each role likewise. Writing the whole state every
step writes the same messages again and again (a 400-message conversation is
~150 KiB per checkpoint). So a checkpoint is either *whole* (the state as is)
or a *delta* against the run's previous checkpoint: for every list in the
state (top level, or one level down in a dict of lists such as ``sent``), how
many items of the previous list it keeps and the items after them; every
other value as is. A delta row names the whole checkpoint its chain starts
from (its ``base``), so reading the latest state is one query over at most
``MAX_CHAIN`` rows. A whole checkpoint starts a new chain every
``MAX_CHAIN`` checkpoints, or when a delta would carry more than
``MAX_ADDED`` items; while the state is tiny (fewer than ``MIN_ITEMS`` list
items) it is always written whole.

The store keeps the previous checkpoint's lists in memory (shallow copies);
the items themselves must not be changed in place after a checkpoint (the
session builds a fresh state for every checkpoint).
"""

from __future__ import annotations

from typing import Any

MAX_ADDED = 64
MAX_CHAIN = 32
MIN_ITEMS = 16

Path_ = tuple[str, ...]


def lists_of(state: dict[str, Any]) -> dict[Path_, list]:
    """The lists a delta may cover: top-level lists and lists in a top-level dict of
    lists (shallow copies: a caller appending to its list later changes nothing here)."""
    found: dict[Path_, list] = {}
    for key, value in state.items():
        if type(value) is list:
            found[(key,)] = list(value)
        elif type(value) is dict and value and all(type(v) is list for v in value.values()):
            for sub, items in value.items():
                found[(key, sub)] = list(items)
    return found


def size(state: dict[str, Any]) -> int:
    """How many items the lists of a delta would cover hold (below ``MIN_ITEMS``
    a delta saves nothing worth its work)."""
    n = 0
    for value in state.values():
        if type(value) is list:
            n += len(value)
        elif type(value) is dict:
            n += sum(len(v) for v in value.values() if type(v) is list)
    return n


def _common_prefix(a: list, b: list) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:              # the usual case (append only), compared in C
        return n
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def encode(state: dict[str, Any], base: dict[Path_, list]) -> dict[str, Any] | None:
    """The delta of ``state`` against the lists of the previous state, or None
    when a whole checkpoint is better (too much was added). One pass over the
    state: it runs at every checkpoint."""
    covered: list[list] = []
    rest: dict[str, Any] = {}
    added = 0
    for key, value in state.items():
        if type(value) is list:
            old = base.get((key,))
            if old is not None:
                keep = _common_prefix(old, value)
                added += len(value) - keep
                covered.append([[key], keep, value[keep:]])
                continue
        elif type(value) is dict and value and all(type(v) is list for v in value.values()):
            kept: dict[str, Any] = {}
            for sub, items in value.items():
                old = base.get((key, sub))
                if old is None:
                    kept[sub] = items
                    continue
                keep = _common_prefix(old, items)
                added += len(items) - keep
                covered.append([[key, sub], keep, items[keep:]])
            rest[key] = kept
            continue
        rest[key] = value
    if added > MAX_ADDED:
        return None
    return {"lists": covered, "rest": rest}


def decode(delta: dict[str, Any], base_state: dict[str, Any]) -> dict[str, Any]:
    """The whole state a delta stands for, given the previous checkpoint's whole state."""
    state = dict(delta["rest"])
    base_lists = lists_of(base_state)
    for path, keep, items in delta["lists"]:
        full = base_lists[tuple(path)][:keep] + items
        if len(path) == 1:
            state[path[0]] = full
        else:
            state[path[0]] = {**state.get(path[0], {}), path[1]: full}
    return state
