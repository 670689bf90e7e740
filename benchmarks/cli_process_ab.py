"""The read commands as processes, another tether's source against this one, taking turns.

    mkdir /tmp/before && git archive REV src | tar -x -C /tmp/before
    python -m compileall -q /tmp/before/src
    python benchmarks/cli_process_ab.py --before /tmp/before/src --store /tmp/scale/scale.db

Each command (``runs list``, ``runs list --eval ID``, ``runs show RUN``, ``stats``)
runs as ``python -m tether.cli ...`` (stdout a pipe) with ``PYTHONPATH`` at the
other source ("before") and as installed ("after"), repetition by repetition,
the two in turn (which goes first alternates), so both see the same machine.
The last row, "cold first command", is ``runs list`` with the store's file (a
SQLite store) dropped from the page cache just before (``posix_fadvise
DONTNEED``; reading it back is the cost). Prints the median wall-clock and CPU
seconds. Use the python of a plain virtualenv: a start-up hook (a ``.pth``
importing things) would be in every figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the other tether's src folder")
    ap.add_argument("--store", required=True, help="the store both read (a file or a postgresql:// URL)")
    ap.add_argument("--repeat", type=int, default=11)
    args = ap.parse_args()

    from tether.store import open_store

    db = open_store(args.store, read_only=True)
    run = db.run_page(1)[0][0]
    db.close()
    commands = {"runs list": ["runs", "list"], "runs list --eval ID": ["runs", "list", "--eval", run["eval_id"] or "-"],
                "runs show RUN": ["runs", "show", run["run_id"]], "stats": ["stats"]}
    cold = "://" not in args.store
    if cold:
        commands["cold first command"] = ["runs", "list"]
    sides = {"before": {**os.environ, "PYTHONPATH": args.before}, "after": dict(os.environ)}
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    load = os.getloadavg()[0]
    for name, command in commands.items():
        for i in range(args.repeat):
            for side, env in (sides.items() if i % 2 == 0 else reversed(sides.items())):
                if name == "cold first command":
                    evict(args.store)
                r0, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
                subprocess.run([sys.executable, "-m", "tether.cli", *command, "--store", args.store], env=env,
                               capture_output=True, check=True)
                wall, r1 = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
                out.setdefault((name, side), []).append((wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime))
    print(f"load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} after; median of {args.repeat}, "
          "taking turns; wall seconds (CPU)\n")
    print("| as a process | before | after |\n|---|---:|---:|")
    for name in commands:
        cells = [f"{statistics.median(w for w, _ in out[(name, s)]):.3f} s "
                 f"({statistics.median(c for _, c in out[(name, s)]):.3f} s)" for s in sides]
        print(f"| {name} | " + " | ".join(cells) + " |")


def evict(path: str) -> None:
    """Drop the store's file (and WAL) from the page cache: the next read comes from the disk."""
    for p in (path, f"{path}-wal", f"{path}-shm"):
        if os.path.exists(p):
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


if __name__ == "__main__":
    main()
