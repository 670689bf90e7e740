"""Events written into tether's store per second, next to the same events as JSON Lines.

    python benchmarks/store_bench.py

The events are real: the events of C4 runs (both calibration agents, guards
on), requests with their messages included, cycled to the count needed and
renumbered. They are written in batches the size a live run writes them in:
the events of one step (a request, a decision, one or more tool calls and
results, a checkpoint's worth) are 5 to 20 events; batch 1 (one event a
transaction) and 100 are shown for scale.

Writers, by durability:

* process crash (the data survives the process being killed; a power loss
  may lose the last transactions):
  - tether ``SQLiteStore.append_events``: one transaction per batch, WAL,
    ``synchronous=NORMAL`` (the store's setting);
  - JSON Lines, ``write`` + ``flush`` per batch (no fsync).
* power loss (each batch reaches the disk before the call returns):
  - tether's store with ``synchronous=FULL`` (WAL fsynced at every commit);
  - JSON Lines with ``os.fsync`` per batch.

Both formats encode with orjson. Writers of one durability class are
interleaved batch by batch so both see the same machine load; each cell gives
the rate in wall-clock time and, in parentheses, in the process's CPU time
(what the writer costs when it has a core to itself; on a shared machine the
wall-clock rate drops with the load). "from Event
objects" adds what a live run also pays: pydantic's ``model_dump`` of each
event before it is written (``RunSession.flush``).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import orjson

from tether.evals import load_suite
from tether.evals.runner import run_trial
from tether.events import EVENT_ADAPTER
from tether.guards.stacks import guard_stack
from tether.models import resolve_model
from tether.store import SQLiteStore

EVENTS = 100_000           # per writer, process-crash durability
EVENTS_FSYNC = 4_000       # per writer, power-loss durability (one fsync per batch is slow everywhere)
BATCHES = (1, 5, 10, 20, 100)


def real_events() -> list[dict]:
    cases = load_suite("c4")
    out: list[dict] = []

    async def collect():
        for model in ("policy:steady", "policy:stubborn"):
            for case in cases:
                _, result = await run_trial(case, resolve_model(model), guards=guard_stack("on")(), guards_label="on")
                out.extend(e.model_dump(mode="json") for e in result.trajectory)
    asyncio.run(collect())
    return out


class Store:
    def __init__(self, path: Path, synchronous: str = "NORMAL", objects: bool = False):
        self.store = SQLiteStore(path)
        self.store._db.execute(f"PRAGMA synchronous={synchronous}")   # the bench's FULL variant only
        self.store.create_run("r1", model="bench")
        self.objects = objects

    def write(self, batch: list[tuple[int, dict]], models: list) -> None:
        if self.objects:
            batch = [(seq, e.model_dump(mode="json")) for (seq, _), e in zip(batch, models)]
        self.store.append_events("r1", batch)

    def close(self) -> None:
        self.store.close()


class JSONL:
    def __init__(self, path: Path, fsync: bool):
        self.f = open(path, "ab")
        self.fsync = fsync

    def write(self, batch: list[tuple[int, dict]], models: list) -> None:
        self.f.write(b"".join(orjson.dumps(e) + b"\n" for _, e in batch))
        self.f.flush()
        if self.fsync:
            os.fsync(self.f.fileno())

    def close(self) -> None:
        self.f.close()


def run(writers: dict, pool: list[dict], models: list, total: int, size: int) -> dict[str, tuple[float, float]]:
    """(events per second of wall-clock time, of this process's CPU time) for each
    writer, batches interleaved across writers."""
    wall = dict.fromkeys(writers, 0.0)
    cpu = dict.fromkeys(writers, 0.0)
    seq = 0
    while seq < total:
        idx = [(seq + k) % len(pool) for k in range(size)]
        batch = [(seq + k, {**pool[i], "seq": seq + k}) for k, i in enumerate(idx)]
        objs = [models[i] for i in idx]
        for name, w in writers.items():
            c, start = time.process_time(), time.perf_counter()
            w.write(batch, objs)
            wall[name] += time.perf_counter() - start
            cpu[name] += time.process_time() - c
        seq += size
    return {name: (seq / wall[name], seq / cpu[name]) for name in writers}


def cell(rate: tuple[float, float]) -> str:
    return f"{rate[0]:,.0f} ({rate[1]:,.0f})"


def main() -> None:
    pool = real_events()
    models = [EVENT_ADAPTER.validate_python(e) for e in pool]
    avg = sum(len(orjson.dumps(e)) for e in pool) / len(pool)
    print(f"python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}; {len(pool)} real events from C4 runs "
          f"(average {avg:.0f} bytes), cycled; events per second (higher is better); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| batch (events per transaction) | tether store, WAL synchronous=NORMAL | same, from Event objects "
          "| JSONL, flush (no fsync) | ratio store/JSONL | tether store, synchronous=FULL | JSONL, fsync per batch "
          "| ratio FULL/fsync |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in BATCHES:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            crash = {"store": Store(tmp / "a.db"), "objects": Store(tmp / "b.db", objects=True),
                     "jsonl": JSONL(tmp / "a.jsonl", fsync=False)}
            power = {"full": Store(tmp / "c.db", synchronous="FULL"), "fsync": JSONL(tmp / "b.jsonl", fsync=True)}
            r = run(crash, pool, models, EVENTS, size)
            p = run(power, pool, models, EVENTS_FSYNC, size)
            for w in (*crash.values(), *power.values()):
                w.close()
        print(f"| {size} | {cell(r['store'])} | {cell(r['objects'])} | {cell(r['jsonl'])} "
              f"| {r['store'][0] / r['jsonl'][0]:.2f} | {cell(p['full'])} | {cell(p['fsync'])} "
              f"| {p['full'][0] / p['fsync'][0]:.2f} |")
    print(f"\nEach cell: events/s of wall-clock time (events/s of CPU time, what the writer costs with the machine "
          f"to itself). Ratios are of wall-clock rates.\n{EVENTS:,} events per writer at process-crash durability, "
          f"{EVENTS_FSYNC:,} at power-loss durability.")


if __name__ == "__main__":
    main()
