"""``tether store copy``: a whole store into an empty one, either backend to either."""

from __future__ import annotations

import contextlib
from typing import Any

from ..errors import UsageError
from .queries import TABLES


def copy_store(src: Any, dst: Any, *, verify: bool = True, batch: int = 500) -> dict[str, Any]:
    """Every row of every table, as is (times, digests, metrics included); with
    ``verify``, every finished run's digest recomputed from the copied events.
    ``dst`` must hold no run and no eval (a run is never overwritten)."""
    from ..events import events_digest

    if src.where == dst.where:
        raise UsageError(f"store copy: {src.where} is both the source and the destination")
    held = dst.info()
    if held["runs"] or held["evals"]:
        raise UsageError(f"store copy: {dst.where} already holds {held['runs']} run(s) and {held['evals']} eval(s); "
                         "copy into an empty store (a run is never overwritten)")
    # the source as it was at one moment (others may write to it meanwhile: a run finished between two
    # tables would be copied half before and half after); a backend without snapshots is read as it is
    with getattr(src, "snapshot", contextlib.nullcontext)():
        rows: dict[str, int] = {}
        for table in TABLES:
            rows[table] = 0
            for chunk in src.dump(table, batch):
                dst.load(table, chunk)
                rows[table] += len(chunk)
        checked = 0
        if verify:
            for run in src.dump("runs", batch):
                for r in run:
                    run_id, digest = r[0], r[13]
                    if not digest:
                        continue
                    events = dst.events(run_id)
                    end = next((i for i, e in enumerate(events) if e.get("type") == "run_finished"), len(events) - 1)
                    got = events_digest(events[:end + 1])
                    if got != digest:
                        raise UsageError(f"store copy: run {run_id} has digest {got[:12]} in {dst.where} but "
                                         f"{digest[:12]} in {src.where}; the copy is not faithful")
                    checked += 1
    return {"rows": rows, "checked": checked}



