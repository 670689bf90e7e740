"""Where a PostgreSQL listing's time goes: ``tether runs list`` in one process, taken apart.

    python benchmarks/store_pg_cost.py "postgresql://...?options=-csearch_path%3Dscale_PID" --sqlite /tmp/scale/scale.db

Each repetition opens the store as the command does and times, in order:

* ``connect``: ``psycopg.connect`` with tether's arguments (TCP or a Unix socket,
  libpq's SSL request when ``sslmode`` asks for one, the start of a server process);
  the same with ``sslmode=disable`` and ``gssencmode=disable`` appended (measured
  only: tether never changes a user's URL), to show what the SSL probe costs;
* ``reads``: the listing's one pipeline (schema check, page, per-run counts, the
  capped count), and the tether CPU in it (psycopg's adaptation included); then
  the same reads again on that connection (what a connection that outlives the
  command, a pooler's, would cost);
* ``planning``: ``EXPLAIN (ANALYZE, SUMMARY)`` of the page on that new connection,
  then again on the same (now warm) one: what a new server process's cold
  catalog caches cost;
* ``render``: the command's Python after the store is closed (CliRunner, output
  to a pipe), as the difference of the whole command and its store part;
* the server process's CPU from ``/proc/PID/schedstat`` (the server on this host).

For comparison the same listing on the SQLite store (``--sqlite``), in process.
Medians of ``--repeat`` (25).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable


def server_cpu(pid: int) -> float | None:
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def with_params(url: str, extra: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{extra}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", help="the PostgreSQL store (its search_path included)")
    ap.add_argument("--sqlite", help="a SQLite store of the same runs, for comparison")
    ap.add_argument("--repeat", type=int, default=25)
    args = ap.parse_args()

    import psycopg
    from typer.testing import CliRunner

    from tether.cli import app
    from tether.store import open_store
    from tether.store.postgres import PostgresStore

    samples: dict[str, list[float]] = {}

    def add(key: str, value: float | None) -> None:
        if value is not None:
            samples.setdefault(key, []).append(value * 1000)

    def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        return out, time.perf_counter() - w, time.process_time() - c

    runner = CliRunner()
    page_sql = ("EXPLAIN (ANALYZE, SUMMARY) SELECT run_id, kind, status FROM runs "
                "ORDER BY created DESC, run_id DESC LIMIT 51")
    for _ in range(args.repeat):
        # the listing as the command does it, its parts timed
        store, wall, cpu = timed(lambda: PostgresStore(args.url, read_only=True))
        add("connect: wall", wall)
        add("connect: tether cpu", cpu)
        pid = store._db.info.backend_pid
        after_start = server_cpu(pid)
        _, wall, cpu = timed(lambda: store.run_page(51, upto=1000))
        add("reads (one pipeline): wall", wall)
        add("reads: tether cpu (psycopg included)", cpu)
        done = server_cpu(pid)
        add("server cpu: start of the process", after_start)
        add("server cpu: the reads", None if done is None or after_start is None else done - after_start)
        _, wall, _ = timed(lambda: store.run_page(51, upto=1000))        # again: what a kept connection costs
        add("the same reads again on that connection: wall", wall)
        again = server_cpu(pid)
        add("server cpu: the reads again", None if again is None or done is None else again - done)
        store.close()
        # the command whole (in process), for the rendering part
        _, wall, _ = timed(lambda: runner.invoke(app, ["runs", "list", "--store", args.url]))
        add("runs list, in process: wall", wall)
        # planning on a new connection, then on the same one again
        con = psycopg.connect(args.url, autocommit=True)
        for label in ("new connection", "used connection"):
            plan = [r[0] for r in con.execute(page_sql).fetchall()]
            for line in plan:
                if line.startswith(("Planning Time", "Execution Time")):
                    what, ms = line.split(":")
                    add(f"page query, {label}: {what.lower()}", float(ms.split()[0]) / 1000)
        con.close()
        # the SSL (and GSS) request, for what it costs only
        for label, extra in (("connect, sslmode=disable gssencmode=disable (measured only)",
                              "sslmode=disable&gssencmode=disable"),):
            c2, wall, _ = timed(lambda: psycopg.connect(with_params(args.url, extra), autocommit=True))
            add(label + ": wall", wall)
            c2.close()
        if args.sqlite:
            _, wall, _ = timed(lambda: runner.invoke(app, ["runs", "list", "--store", args.sqlite]))
            add("SQLite runs list, in process: wall", wall)
            db, wall, _ = timed(lambda: open_store(args.sqlite, read_only=True))
            add("SQLite open: wall", wall)
            _, wall, _ = timed(lambda: db.run_page(51, upto=1000))
            add("SQLite reads: wall", wall)
            db.close()

    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; median of {args.repeat}, ms\n")
    print("| | ms |\n|---|---:|")
    for key, values in samples.items():
        print(f"| {key} | {statistics.median(values):.2f} |")


if __name__ == "__main__":
    main()
