"""Proxied MCP calls while another process holds the store's write lock.

    python benchmarks/mcp_store_lock_bench.py [--hold 2] [--calls 40] [--store postgresql://...]

``tether guard mcp --store DB -- SERVER`` (the server is tests/gateway/mcp_servers.py,
the ``mcp`` SDK's server on stdio; guards on), driven by a lean newline-JSON client:
one warm-up call opens the window, then ``--calls`` calls of ``get_time`` one after
the other, timed from the request written to the answer read. Half-way through, a
second process takes the store's write lock (SQLite: ``BEGIN EXCLUSIVE``; PostgreSQL:
``LOCK TABLE events, runs IN EXCLUSIVE MODE``) and holds it ``--hold`` seconds.

Prints each phase's median and worst latency, and how many of the calls' events
were in the store once the gateway exited (every one of them should be).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / "tests" / "gateway" / "mcp_servers.py"
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}

SQLITE_LOCKER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
print("released", flush=True)
"""

PG_LOCKER = """
import sys, time, psycopg
db = psycopg.connect(sys.argv[1])
db.execute("LOCK TABLE events, runs IN EXCLUSIVE MODE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.commit()
print("released", flush=True)
"""


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


async def run(store: str, hold: float, calls: int, run_id: str) -> dict:
    command = [sys.executable, "-m", "tether.cli", "guard", "mcp", "--store", store, "--run-id", run_id,
               "--idle", "600", "--", sys.executable, str(SERVERS), "tools"]
    proc = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                env=env())
    assert proc.stdin is not None and proc.stdout is not None
    next_id = 0

    async def request(method: str, params: dict | None = None) -> tuple[dict, float]:
        nonlocal next_id
        next_id += 1
        started = time.perf_counter()
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method,
                                     "params": params or {}}).encode() + b"\n")
        await proc.stdin.drain()
        answer = json.loads(await proc.stdout.readuntil(b"\n"))
        return answer, (time.perf_counter() - started) * 1000

    await request("initialize", INIT)
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    await request("tools/list")
    await request("tools/call", {"name": "get_time", "arguments": {}})      # the window is open
    phases: dict[str, list[float]] = {"before the lock": [], "while locked": [], "after": []}
    errors: dict[str, list[str]] = {phase: [] for phase in phases}
    locker = None
    for i in range(calls):
        if i == calls // 4:
            script = PG_LOCKER if store.startswith("postgresql://") else SQLITE_LOCKER
            locker = subprocess.Popen([sys.executable, "-c", script, store, str(hold)], stdout=subprocess.PIPE,
                                      text=True)
            assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        phase = "before the lock" if locker is None else "while locked" if locker.poll() is None else "after"
        answer, ms = await request("tools/call", {"name": "get_time", "arguments": {}})
        phases[phase].append(ms)
        if "result" not in answer:
            errors[phase].append(str(answer.get("error", {}).get("message", answer))[:120])
        if phase == "while locked":
            await asyncio.sleep(hold / (calls // 2))    # spread the calls over the lock
    assert locker is not None
    locker.wait(timeout=60)
    proc.stdin.close()
    _, err = await proc.communicate()
    from tether.store import open_store

    db = open_store(store)
    results = [e for e in db.events(f"{run_id}-w1") if e["type"] == "tool_result"]
    return {"phases": phases, "errors": errors, "recorded": len(results), "calls": calls + 1,
            "status": db.get_run(f"{run_id}-w1")["status"], "stderr": err.decode()[-400:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hold", type=float, default=2.0)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--store", default=None, help="a postgresql:// URL (default: a new SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or str(Path(tmp) / "runs.db")
        out = asyncio.run(run(store, args.hold, args.calls, f"lockbench-{os.getpid()}"))
    print(f"store {'PostgreSQL' if args.store else 'SQLite'}, lock held {args.hold:g} s\n")
    print("| phase | calls | median ms | worst ms | errors |\n|---|---:|---:|---:|---:|")
    for phase, values in out["phases"].items():
        if values:
            print(f"| {phase} | {len(values)} | {statistics.median(values):.1f} | {max(values):.1f} "
                  f"| {len(out['errors'][phase])} |")
    for phase, errs in out["errors"].items():
        if errs:
            print(f"\n{phase}: {errs[0]}")
    print(f"\n{out['recorded']} of {out['calls']} calls' results in the store; window status {out['status']}")
    if out["recorded"] != out["calls"]:
        print(out["stderr"])


if __name__ == "__main__":
    main()
