"""A store that holds a year of runs: 100,000 real eval runs, on SQLite and PostgreSQL.

    python benchmarks/store_scale.py                          # SQLite only
    python benchmarks/store_scale.py --postgres postgresql://tether@127.0.0.1:5432/postgres
    python benchmarks/store_scale.py --runs 20000 --keep /tmp/scale   # smaller; keep the stores

How the store is built: ``tether eval c4`` runs once (3 calibration agents x 16
cases: 48 real runs, their events, the eval and its results document), then its
rows are copied under new ids in bulk, one copy per eval, until there are
``--runs`` runs, their creation times spread evenly over the past 365 days. In
each copy the eval id is replaced everywhere it occurs (run ids, the events,
the results document), each run's digest is recomputed over its rewritten
events (and the results document pins the new digests), so every copied run
is a valid run: ``runs show`` prints it, the eval's report page reads and
checks it. The same rows are loaded into each backend through the store's own
bulk ``load`` (the path ``tether store copy`` takes).

What is timed, each the median of ``--repeat`` (7) runs, warm (the store was
just read), the backends taking turns at each repetition so that both see the
same machine (on a shared machine the load moves within seconds):

* ``runs list``, ``runs list --eval ID``, ``runs show RUN`` and ``stats``: the
  command inside one process (``CliRunner``: opening the store, for PostgreSQL
  a new connection, the queries, rendering; Python's start-up and imports are
  not in it);
* the viewer's index page and an eval's report page: server time
  (``Viewer.index`` / ``Viewer.eval_report`` on a fresh viewer: no cached page);
* the same four commands as a process (``python -m tether.cli ...``, stdout a
  pipe): what a user waits for, Python's start-up and imports (psycopg for
  PostgreSQL) included. tether is byte-compiled first, as ``pip install`` does
  (where ``PYTHONDONTWRITEBYTECODE`` is set an editable install would otherwise
  compile its modules in every process); run this with a virtualenv's python
  that has no extra ``.pth`` start-up hooks to see what a user sees;
* cold first command (SQLite): ``tether runs list`` as a new process after the
  store's file was evicted from the page cache (``posix_fadvise DONTNEED``),
  Python's start-up included;
* ``store prune`` of the older half, then ``store vacuum``: time, size before and
  after, and ``store check`` on the result (not with ``--no-prune``).

``--keep DIR --no-prune`` keeps both stores whole; ``--reuse`` then measures
them again without building (``--postgres`` names the store itself then, its
``options=-csearch_path%3D...`` included).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from typer.testing import CliRunner

from tether.cli import app
from tether.messages import canonical_json
from tether.store import open_store
from tether.store.queries import TABLES

DAY = 86400.0
TETHER = [sys.executable, "-m", "tether.cli"]


def seed(folder: Path) -> Path:
    """One real ``tether eval c4`` into a fresh SQLite store."""
    db = folder / "seed.db"
    env = {**os.environ, "TETHER_STORE": str(db)}
    done = subprocess.run([*TETHER, "eval", "c4", "--store", str(db)], cwd=folder, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"tether eval c4 failed: {done.stdout[-500:]} {done.stderr[-500:]}")
    return db


class Template:
    """The seed's rows, ready to be copied under a new eval id."""

    def __init__(self, db: Path):
        store = open_store(db)
        rows = {t: [r for batch in store.dump(t) for r in batch] for t in ("evals", "runs", "events")}
        if len(rows["evals"]) != 1:
            sys.exit(f"the seed store holds {len(rows['evals'])} evals, want 1")
        self.eval = rows["evals"][0]
        self.eval_id: str = self.eval[0]
        self.runs = rows["runs"]
        self.events = {r[0]: r for r in rows["events"]}
        if len(self.events) != len(self.runs):
            sys.exit("a seed run has its events in more than one chunk; expected one chunk per eval run")
        # per run: the canonical text its digest is the sha256 of (events up to the first run_finished)
        self.canon: dict[str, str] = {}
        for run_id, chunk in self.events.items():
            events = [json.loads(line) for line in bytes(chunk[3]).decode("utf-8").splitlines() if line]
            end = next((i for i, e in enumerate(events) if e.get("type") == "run_finished"), len(events) - 1)
            self.canon[run_id] = "".join(canonical_json(e) + "\n" for e in events[:end + 1])
            digest = dict(zip(TABLES["runs"], next(r for r in self.runs if r[0] == run_id)))["digest"]
            if hashlib.sha256(self.canon[run_id].encode("utf-8")).hexdigest() != digest:
                sys.exit(f"seed run {run_id}: its digest is not the sha256 of its canonical events")
        store.close()

    def copy(self, k: int, copies: int, now: float) -> dict[str, list[tuple]]:
        """Copy number k: eval id ev-YYYYMMDD-xxxxxx (the seed's length), created in day order."""
        new = f"ev-20250101-{k:06x}"
        assert len(new) == len(self.eval_id), (new, self.eval_id)
        old = self.eval_id
        base = now - 365 * DAY + (k + 0.5) * (365 * DAY / copies)
        t0 = min(r[1] for r in self.runs)
        shift = base - t0
        cols = TABLES["runs"]
        at = {c: i for i, c in enumerate(cols)}
        results = self.eval[6]
        runs = []
        digests = {}
        for r in self.runs:
            row = list(r)
            row[at["run_id"]] = r[0].replace(old, new)
            row[at["eval_id"]] = new
            row[at["created"]] = r[at["created"]] + shift
            row[at["updated"]] = r[at["updated"]] + shift
            row[at["meta"]] = r[at["meta"]].replace(old, new)
            digest = hashlib.sha256(self.canon[r[0]].replace(old, new).encode("utf-8")).hexdigest()
            digests[r[at["digest"]]] = digest
            row[at["digest"]] = digest
            runs.append(tuple(row))
        if results:
            results = results.replace(old, new)
            for was, now_digest in digests.items():
                results = results.replace(was, now_digest)
        ev = list(self.eval)
        ev[0], ev[1], ev[2], ev[5], ev[6] = new, self.eval[1] + shift, self.eval[2] + shift, \
            self.eval[5].replace(old, new), results
        events = [(c[0].replace(old, new), c[1], c[2], bytes(c[3]).replace(old.encode(), new.encode()))
                  for c in self.events.values()]
        return {"evals": [tuple(ev)], "runs": runs, "events": events}


def build(store: Any, template: Template, runs: int, now: float) -> tuple[int, float]:
    copies = -(-runs // len(template.runs))
    started = time.perf_counter()
    batch: dict[str, list[tuple]] = {"evals": [], "runs": [], "events": []}
    for k in range(copies):
        for table, rows in template.copy(k, copies, now).items():
            batch[table].extend(rows)
        if len(batch["runs"]) >= 2000 or k == copies - 1:
            for table in ("evals", "runs", "events"):
                store.load(table, batch[table])
                batch[table] = []
            print(f"\r  {(k + 1) * len(template.runs):,} runs", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return copies * len(template.runs), time.perf_counter() - started


def cli(*args: str) -> Callable[[], None]:
    runner = CliRunner()

    def go() -> None:
        res = runner.invoke(app, list(args))
        if res.exit_code != 0:
            raise SystemExit(f"tether {' '.join(args)}: exit {res.exit_code}: {res.output[-400:]}")
    return go


def process(*args: str) -> Callable[[], None]:
    def go() -> None:
        subprocess.run([*TETHER, *args], check=True, capture_output=True)
    return go


def evict(path: Path) -> None:
    """Drop the store's file (and WAL) from the page cache: the next read comes from the disk."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if p.exists():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def cpu_now(children: bool) -> float:
    if not children:
        return time.process_time()
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(targets: list[tuple[str, str, Path | None]], repeat: int) -> dict[str, dict[str, Any]]:
    """Every command on every backend, the backends taking turns at each repetition (both see the
    same machine: on a shared one the load moves within seconds); the median wall-clock time, and
    the median CPU time of the tether process (a subprocess's for the "as a process" rows)."""
    from tether.report.html.server import Viewer

    out: dict[str, dict[str, Any]] = {}
    jobs: dict[str, dict[str, tuple[Callable[[], Any], bool]]] = {}
    stores = {}
    for backend, where, _ in targets:
        store = stores[backend] = open_store(where, read_only=True)
        info = store.info()
        eval_id = f"ev-20250101-{info['evals'] // 2:06x}"           # an eval from the middle of the year
        some = store.list_runs(1, eval_id=eval_id)[0]
        out[backend] = {"runs": info["runs"], "evals": info["evals"], "size": info["size"], "cpu": {}}
        jobs[backend] = {
            "runs list": (cli("runs", "list", "--store", where), False),
            "runs show RUN": (cli("runs", "show", some["run_id"], "--store", where), False),
            "runs list --eval ID": (cli("runs", "list", "--eval", eval_id, "--store", where), False),
            "stats": (cli("stats", "--store", where), False),
            "viewer index (server)": (lambda store=store: Viewer(store).index({}), False),
            "viewer eval page (server)": (lambda store=store, e=eval_id: Viewer(store).eval_report(e), False),
            "runs list, as a process": (process("runs", "list", "--store", where), True),
            "runs list --eval ID, as a process": (process("runs", "list", "--eval", eval_id, "--store", where), True),
            "runs show RUN, as a process": (process("runs", "show", some["run_id"], "--store", where), True),
            "stats, as a process": (process("stats", "--store", where), True),
        }
    for key in jobs[targets[0][0]]:
        for backend in jobs:
            jobs[backend][key][0]()                                  # warm
        times: dict[str, list[float]] = {b: [] for b in jobs}
        cpus: dict[str, list[float]] = {b: [] for b in jobs}
        for _ in range(repeat):
            for backend, commands in jobs.items():
                fn, children = commands[key]
                started, cpu = time.perf_counter(), cpu_now(children)
                fn()
                times[backend].append(time.perf_counter() - started)
                cpus[backend].append(cpu_now(children) - cpu)
        for backend in jobs:
            out[backend][key] = statistics.median(times[backend])
            out[backend]["cpu"][key] = statistics.median(cpus[backend])
    for backend, where, path in targets:
        if path is not None:
            evict(path)
            started, cpu = time.perf_counter(), cpu_now(True)
            subprocess.run([*TETHER, "runs", "list", "--store", where], check=True, capture_output=True)
            out[backend]["cold first command (process)"] = time.perf_counter() - started
            out[backend]["cpu"]["cold first command (process)"] = cpu_now(True) - cpu
        stores[backend].close()
    return out


def prune_and_vacuum(where: str) -> dict[str, Any]:
    store = open_store(where)
    before = store.info()
    started = time.perf_counter()
    cli("store", "prune", "--older-than", "182.5d", "--store", where)()
    pruned = time.perf_counter() - started
    started = time.perf_counter()
    cli("store", "vacuum", "--store", where)()
    vacuumed = time.perf_counter() - started
    after = store.info()
    started = time.perf_counter()
    cli("store", "check", "--store", where)()
    checked = time.perf_counter() - started
    store.close()
    return {"runs before": before["runs"], "runs after": after["runs"], "size before": before["size"],
            "size after": after["size"], "prune": pruned, "vacuum": vacuumed, "check (full scan)": checked}


def startup(*args: str) -> float:
    times = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run(list(args) or [*TETHER, "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--postgres", help="a PostgreSQL server URL; the store goes in a new schema there")
    ap.add_argument("--keep", type=Path, help="build the stores in this folder and keep them")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    ap.add_argument("--repeat", type=int, default=7, help="time each command this many times (the median)")
    ap.add_argument("--sqlite-only", action="store_true", help="skip PostgreSQL even if --postgres is given")
    ap.add_argument("--no-prune", action="store_true", help="keep the stores whole (no prune, vacuum and check)")
    ap.add_argument("--reuse", action="store_true", help="measure the stores a run with --keep DIR --no-prune "
                    "left: DIR/scale.db and the store at --postgres URL (its search_path included); no build")
    args = ap.parse_args()
    import compileall

    import tether

    compileall.compile_dir(Path(tether.__file__).parent, quiet=2)     # as pip install does; only stale files
    folder = args.keep or Path(tempfile.mkdtemp(prefix="tether-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"python start-up (tether --help)": startup(),
                              "bare python (python -c pass)": startup(sys.executable, "-c", "pass"), "repeat": args.repeat,
                              "python": sys.executable}
    big = folder / "scale.db"
    targets: list[tuple[str, str, Path | None]] = [("sqlite", str(big), big)]
    if args.reuse:          # the stores a previous run built (and did not prune): measure them again
        if not big.exists():
            sys.exit(f"--reuse: no {big}")
        if args.postgres and not args.sqlite_only:
            targets.append(("postgresql", args.postgres, None))
        report |= {backend: {} for backend, _, _ in targets}
    else:
        print(f"seeding: tether eval c4 in {folder}", file=sys.stderr)
        template = Template(seed(folder))
        report["seed"] = {"runs": len(template.runs), "eval": template.eval_id}
        now = time.time()
        for p in (big, Path(f"{big}-wal"), Path(f"{big}-shm")):
            p.unlink(missing_ok=True)
        if args.postgres and not args.sqlite_only:
            import psycopg

            schema = f"scale_{os.getpid()}"
            with psycopg.connect(args.postgres, autocommit=True) as con:
                con.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
                con.execute(f"CREATE SCHEMA {schema}")
            sep = "&" if "?" in args.postgres else "?"
            targets.append(("postgresql", f"{args.postgres}{sep}options=-csearch_path%3D{schema}", None))
        for backend, where, path in targets:
            print(f"{backend}: building {args.runs:,} runs", file=sys.stderr)
            store = open_store(where)
            made, took = build(store, template, args.runs, now)
            if backend == "postgresql":
                store._db.execute("ANALYZE")        # fresh statistics, as autovacuum would give them
            store.close()
            report[backend] = {"build": took}
    print(f"measuring, {args.repeat} times each, the backends taking turns", file=sys.stderr)
    report["load average"] = os.getloadavg()
    for backend, numbers in measure(targets, args.repeat).items():
        report[backend] |= numbers
    report["load average after"] = os.getloadavg()
    if not args.reuse and not args.no_prune:
        for backend, where, _ in targets:
            report[backend] |= prune_and_vacuum(where)
    print(json.dumps(report, indent=2), file=sys.stderr)
    print_table(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def print_table(report: dict[str, Any]) -> None:
    backends = [b for b in ("sqlite", "postgresql") if b in report]
    first = report[backends[0]]
    seed = f" (copies of one `tether eval c4`: {report['seed']['runs']} runs)" if "seed" in report else ""
    print(f"\n{first['runs']:,} runs, {first['evals']:,} evals{seed}; python -c pass "
          f"{report.get('bare python (python -c pass)', 0):.3f} s, tether --help "
          f"{report['python start-up (tether --help)']:.3f} s; load average (1, 5, 15 min) "
          + ", ".join(f"{x:.2f}" for x in report["load average"]) + " at the start, "
          + ", ".join(f"{x:.2f}" for x in report["load average after"]) + " after the timings\n")
    print(f"wall-clock seconds, median of {report['repeat']}, the backends taking turns; in parentheses the CPU "
          "time of the tether process (for PostgreSQL the server's own CPU is not in it)\n")
    ratio = len(backends) == 2
    print("| | " + " | ".join(backends) + (" | PostgreSQL / SQLite |" if ratio else " |"))
    print("|---|" + "---:|" * (len(backends) + ratio))
    keys = ["runs list", "runs list --eval ID", "runs show RUN", "stats", "viewer index (server)",
            "viewer eval page (server)", "runs list, as a process", "runs list --eval ID, as a process",
            "runs show RUN, as a process", "stats, as a process", "cold first command (process)", "build", "prune", "vacuum", "check (full scan)"]
    for key in keys:
        if not any(key in report[b] for b in backends):
            continue
        cells = []
        for b in backends:
            if key not in report[b]:
                cells.append("-")
                continue
            cpu = report[b].get("cpu", {}).get(key)
            cells.append(f"{report[b][key]:.3f} s" + (f" (cpu {cpu:.3f} s)" if cpu is not None else ""))
        if ratio:
            both = [report[b].get(key) for b in backends]
            cells.append(f"{both[1] / both[0]:.2f}x" if None not in both and both[0] else "-")
        print(f"| {key} | " + " | ".join(cells) + " |")
    for key in ("size before", "size after"):
        if all(key in report[b] for b in backends):
            print(f"| {key} | " + " | ".join(f"{report[b][key] / 2**20:,.0f} MiB" for b in backends)
                  + (" | |" if ratio else " |"))
    for key in ("runs before", "runs after"):
        if all(key in report[b] for b in backends):
            print(f"| {key} | " + " | ".join(f"{report[b][key]:,}" for b in backends) + (" | |" if ratio else " |"))


if __name__ == "__main__":
    main()
