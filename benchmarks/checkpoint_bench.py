"""Time to write one step's checkpoint, tether's SQLite store vs LangGraph's SqliteSaver.

    pip install 'tether[bench]'          # adds langgraph-checkpoint-sqlite
    python benchmarks/checkpoint_bench.py

Both write the same state (a conversation of N messages plus counters) to a
SQLite file on disk, one checkpoint per step, WAL mode with synchronous=NORMAL
(durable across process crashes, which the crash test exercises; not across
power loss), in one process. The writes are interleaved (tether, LangGraph,
tether, ...) so both see the same machine load; the median is reported, and
the ratio tether / LangGraph (below 1 means tether is faster).

Three workloads: a small and a large state written again and again, and a
growing conversation (two messages a step, 2 to 400 messages), the shape of a
real run. tether stores a checkpoint whole or as a delta against the run's
last full one (src/tether/store/_delta.py); the "whole state" column forces
every checkpoint to be written whole, to show what the delta is worth.
Reading the latest checkpoint back (what a resume does) is timed too.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from tether.store import SQLiteStore, _delta

WRITES = 200


def message(i: int) -> dict:
    return {"role": "user" if i % 2 else "assistant",
            "content": f"第 {i} 步：查询订单 A100 的退款状态，结果 status=paid, amount=19900。" * 4}


def state(messages: int) -> dict:
    return {"messages": [message(i) for i in range(messages)], "step": messages,
            "usage": {"input_tokens": 1200 * messages, "output_tokens": 80},
            "guards": [{"calls": [], "trips": 0}], "pending_calls": []}


def same(st: dict) -> Callable[[int], dict]:
    return lambda i: st


def growing(i: int) -> dict:
    """Step i of a run: 2 + 2i messages, a fresh state object each time (as the session builds it)."""
    return state(2 + 2 * i)


class Tether:
    def __init__(self, path: Path, whole: bool = False):
        self.store = SQLiteStore(path)
        self.store.create_run("r1", model="bench")
        self.whole = whole

    def write(self, i: int, st: dict) -> float:
        saved = _delta.MIN_ITEMS
        if self.whole:
            _delta.MIN_ITEMS = 10**9          # no delta base is ever kept: every checkpoint whole
        try:
            start = time.perf_counter()
            self.store.save_checkpoint("r1", i, "before_model", i, st)
            return time.perf_counter() - start
        finally:
            _delta.MIN_ITEMS = saved

    def read(self) -> float:
        start = time.perf_counter()
        self.store.latest_checkpoint("r1")
        return time.perf_counter() - start


class LangGraph:
    def __init__(self, path: Path):
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.conn = sqlite3.connect(str(path), check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")     # the same durability setting as tether's store
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()
        self.config = {"configurable": {"thread_id": "r1", "checkpoint_ns": ""}}

    def write(self, i: int, st: dict) -> float:
        from langgraph.checkpoint.base import empty_checkpoint

        ckpt = empty_checkpoint()
        ckpt["channel_values"] = dict(st)
        ckpt["channel_versions"] = {k: i + 1 for k in st}
        start = time.perf_counter()
        self.config = self.saver.put(self.config, ckpt, {"source": "loop", "step": i, "parents": {}},
                                     ckpt["channel_versions"])
        return time.perf_counter() - start

    def read(self) -> float:
        start = time.perf_counter()
        self.saver.get_tuple({"configurable": {"thread_id": "r1", "checkpoint_ns": ""}})
        return time.perf_counter() - start


def interleaved(writers: list, make: Callable[[int], dict]) -> Iterator[list[float]]:
    samples: list[list[float]] = [[] for _ in writers]
    for i in range(WRITES):
        st = make(i)
        for k, w in enumerate(writers):
            samples[k].append(w.write(i, st))
    yield [statistics.median(s) * 1e3 for s in samples]
    reads: list[list[float]] = [[] for _ in writers]
    for _ in range(50):
        for k, w in enumerate(writers):
            reads[k].append(w.read())
    yield [statistics.median(s) * 1e3 for s in reads]


def main() -> None:
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        sys.exit("needs LangGraph's saver: pip install langgraph-checkpoint-sqlite (or pip install -e '.[bench]')")
    workloads = {"small (4 messages), rewritten": same(state(4)),
                 "large (400 messages), rewritten": same(state(400)),
                 "growing run (2 to 400 messages)": growing}
    print(f"python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}; WAL, synchronous=NORMAL for both; "
          f"median of {WRITES} interleaved checkpoint writes; milliseconds per checkpoint; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| workload | state size | tether SQLiteStore | tether, whole state | LangGraph SqliteSaver "
          "| ratio tether/LangGraph |")
    print("|---|---:|---:|---:|---:|---:|")
    reads = []
    for label, make in workloads.items():
        size = len(json.dumps(make(WRITES - 1), ensure_ascii=False).encode())
        with tempfile.TemporaryDirectory() as d:
            writers = [Tether(Path(d) / "tether.db"), Tether(Path(d) / "whole.db", whole=True),
                       LangGraph(Path(d) / "langgraph.db")]
            results = interleaved(writers, make)
            ours, whole, theirs = next(results)
            reads.append((label, next(results)))
        print(f"| {label} | {size / 1024:.0f} KiB | {ours:.3f} ms | {whole:.3f} ms | {theirs:.3f} ms "
              f"| {ours / theirs:.2f} |")
    print("\nreading the latest checkpoint back (a resume), median of 50:\n")
    print("| workload | tether | tether, whole state | LangGraph | ratio tether/LangGraph |")
    print("|---|---:|---:|---:|---:|")
    for label, (ours, whole, theirs) in reads:
        print(f"| {label} | {ours:.3f} ms | {whole:.3f} ms | {theirs:.3f} ms | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
