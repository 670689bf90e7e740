"""Time to write one step's checkpoint, tether's SQLite store vs LangGraph's SqliteSaver.

    pip install 'tether[bench]'          # adds langgraph-checkpoint-sqlite
    python benchmarks/checkpoint_bench.py

Both write the same state (a conversation of N messages plus counters) to a
SQLite file on disk, one checkpoint per step, WAL mode with synchronous=NORMAL
(durable across process crashes, which the crash test exercises; not across
power loss), in one process; the
median of many writes is reported for a small and a large state, and the
ratio tether / LangGraph (below 1 means tether is faster).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from tether.store import SQLiteStore

WRITES = 200


def state(messages: int) -> dict:
    msgs = [{"role": "user" if i % 2 else "assistant",
             "content": f"第 {i} 步：查询订单 A100 的退款状态，结果 status=paid, amount=19900。" * 4}
            for i in range(messages)]
    return {"messages": msgs, "step": messages, "usage": {"input_tokens": 1200 * messages, "output_tokens": 80},
            "guards": [{"calls": [], "trips": 0}], "pending_calls": []}


def bench_tether(path: Path, st: dict) -> float:
    store = SQLiteStore(path)
    store.create_run("r1", model="bench")
    samples = []
    for i in range(WRITES):
        start = time.perf_counter()
        store.save_checkpoint("r1", i, "before_model", i, st)
        samples.append(time.perf_counter() - start)
    store.close()
    return statistics.median(samples) * 1e3


def bench_langgraph(path: Path, st: dict) -> float | None:
    try:
        import sqlite3

        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return None
    conn = sqlite3.connect(str(path), check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")     # the same durability setting as tether's store
    saver = SqliteSaver(conn)
    saver.setup()
    config = {"configurable": {"thread_id": "r1", "checkpoint_ns": ""}}
    samples = []
    for i in range(WRITES):
        ckpt = empty_checkpoint()
        ckpt["channel_values"] = dict(st)
        ckpt["channel_versions"] = {k: i + 1 for k in st}
        start = time.perf_counter()
        config = saver.put(config, ckpt, {"source": "loop", "step": i, "parents": {}}, ckpt["channel_versions"])
        samples.append(time.perf_counter() - start)
    conn.close()
    return statistics.median(samples) * 1e3


def main() -> None:
    sizes = {"small (4 messages)": state(4), "large (400 messages)": state(400)}
    print(f"python {sys.version.split()[0]}; median of {WRITES} checkpoint writes; milliseconds per checkpoint\n")
    print("| state | size | tether SQLiteStore | LangGraph SqliteSaver | ratio tether/LangGraph |")
    print("|---|---:|---:|---:|---:|")
    import json
    for label, st in sizes.items():
        size = len(json.dumps(st, ensure_ascii=False).encode())
        with tempfile.TemporaryDirectory() as d:
            ours = bench_tether(Path(d) / "tether.db", st)
            theirs = bench_langgraph(Path(d) / "langgraph.db", st)
        if theirs is None:
            print(f"| {label} | {size / 1024:.0f} KiB | {ours:.3f} ms | (pip install langgraph-checkpoint-sqlite) | - |")
        else:
            print(f"| {label} | {size / 1024:.0f} KiB | {ours:.3f} ms | {theirs:.3f} ms | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
