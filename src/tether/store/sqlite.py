"""The embedded store: one SQLite file (WAL) holding every run tether makes
(``tether run``, eval trials, replays, cassette runs, imports), their events,
checkpoints, the side-effect ledger, approvals and evals (groups of runs).

Every write is one short transaction, so a process killed at any instant
(SIGKILL included) leaves the file consistent: a checkpoint with the events
recorded before it, an effect's intent or outcome is either fully there or
not at all. Events are append-only: a sequence number written twice is an
error, never a replacement. The events of one write (a step's, a
checkpoint's) are one row, a chunk of JSON Lines: one insert per step
instead of one per event. Durability: WAL with ``synchronous=NORMAL`` (a
committed transaction survives a process crash; a power loss may lose the
last few).

The schema carries a version (``PRAGMA user_version``); opening an older
store migrates it in place, a newer one is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from . import _delta
from ._rows import (_INSERT_RUN, _approval, _Chain, _chunk, _duplicate, _effect, _ended_run, _finish_run_sql, _host,
                    _json, _new_run, _run, _taken)
from .queries import capped_count, run_where, runs_select

SCHEMA_VERSION = 5

# Statements are split on ";" when migrating: keep semicolons out of the comments.
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    status TEXT NOT NULL,            -- running | a terminal status
    model TEXT NOT NULL DEFAULT '',
    case_id TEXT,
    reply TEXT NOT NULL DEFAULT '',
    reason TEXT NOT NULL DEFAULT '',
    meta TEXT NOT NULL DEFAULT '{}', -- JSON: how to rebuild the run (model spec, case, guards, ...)
    kind TEXT NOT NULL DEFAULT 'run',-- run | eval | replay | cassette | import | mcp | plan
    eval_id TEXT,                    -- the eval this run is a trial of
    trial INTEGER NOT NULL DEFAULT 0,
    guards TEXT NOT NULL DEFAULT 'off',
    digest TEXT,                     -- sha256 of the run's events, set when it finishes
    error_kind TEXT,                 -- infrastructure | model | harness | misuse | aborted
    steps INTEGER,                   -- the run's metrics (store/facts.py), set when it finishes
    tool_calls INTEGER,
    tokens INTEGER,
    cost REAL,
    trips INTEGER,
    looped INTEGER,
    invented INTEGER,
    hitl INTEGER
);
CREATE INDEX IF NOT EXISTS runs_by_eval ON runs (eval_id);
CREATE TABLE IF NOT EXISTS evals (
    eval_id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    suite TEXT NOT NULL,
    status TEXT NOT NULL,            -- running | finished | interrupted
    config TEXT NOT NULL DEFAULT '{}',
    results TEXT                     -- the results document, once finished
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,            -- the sequence number of the chunk's first event
    last INTEGER NOT NULL,           -- ... and of its last (a chunk holds consecutive events)
    events BLOB NOT NULL,            -- the events of one write (a step's): UTF-8 JSON Lines
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL,
    n INTEGER NOT NULL,              -- checkpoint number within the run
    step INTEGER NOT NULL,
    phase TEXT NOT NULL,
    event_count INTEGER NOT NULL,    -- events persisted when it was taken
    state BLOB NOT NULL,             -- UTF-8 JSON: the state, or a delta against the previous checkpoint
    created REAL NOT NULL,
    base INTEGER,                    -- NULL for a whole state, or the whole checkpoint its delta chain starts at
    PRIMARY KEY (run_id, n)
);
CREATE TABLE IF NOT EXISTS effects (
    key TEXT PRIMARY KEY,            -- the idempotency key
    run_id TEXT NOT NULL,
    signature TEXT NOT NULL,         -- tool + canonical arguments
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    step INTEGER NOT NULL,
    status TEXT NOT NULL,            -- intent | done | failed | unknown
    result TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS effects_by_signature ON effects (run_id, signature);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    digest TEXT NOT NULL,            -- sha256 of the canonical arguments the decision is bound to
    reason TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,            -- pending | approved | rejected | modified | escalated | terminated | expired | consumed
    decided_by TEXT,
    note TEXT,
    new_arguments TEXT,
    created REAL NOT NULL,
    decided REAL,
    expires REAL,                    -- a pending approval not decided by then is expired (default deny)
    used INTEGER NOT NULL DEFAULT 0  -- a decision applies to the one call it was given for
);
CREATE TABLE IF NOT EXISTS leases (
    run_id TEXT PRIMARY KEY,         -- one process drives a run at a time
    holder TEXT NOT NULL,            -- pid@host/nonce
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    acquired REAL NOT NULL,
    expires REAL NOT NULL            -- renewed with every checkpoint: a crashed holder's lease runs out
);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created, run_id);
CREATE INDEX IF NOT EXISTS runs_by_eval_created ON runs (eval_id, created, run_id);
CREATE INDEX IF NOT EXISTS runs_metrics ON runs (kind, status, created, steps, looped, invented, hitl, cost, tokens);
CREATE INDEX IF NOT EXISTS evals_by_created ON evals (created, eval_id);
CREATE INDEX IF NOT EXISTS approvals_by_run ON approvals (run_id, status);
CREATE INDEX IF NOT EXISTS effects_by_run ON effects (run_id, created)
"""


# Columns added to an existing table by a migration: (table, column, definition).
_MIGRATIONS: dict[int, list[tuple[str, str, str]]] = {
    2: [("runs", "kind", "TEXT NOT NULL DEFAULT 'run'"), ("runs", "eval_id", "TEXT"),
        ("runs", "trial", "INTEGER NOT NULL DEFAULT 0"), ("runs", "guards", "TEXT NOT NULL DEFAULT 'off'"),
        ("runs", "digest", "TEXT"), ("runs", "error_kind", "TEXT")],
    3: [("checkpoints", "base", "INTEGER")],      # delta checkpoints (store/_delta.py)
    4: [("approvals", "expires", "REAL"), ("approvals", "used", "INTEGER NOT NULL DEFAULT 0")],
    # per-run metrics (store/facts.py), set when a run finishes: stats are aggregate queries
    5: [("runs", "steps", "INTEGER"), ("runs", "tool_calls", "INTEGER"), ("runs", "tokens", "INTEGER"),
        ("runs", "cost", "REAL"), ("runs", "trips", "INTEGER"), ("runs", "looped", "INTEGER"),
        ("runs", "invented", "INTEGER"), ("runs", "hitl", "INTEGER")],
}


def default_store_path() -> Path:
    return Path(os.environ.get("TETHER_STORE", ".tether/tether.db"))


# How long a write waits for the store's write lock, which another process holds for one short
# transaction at a time, but for as long as it runs in `tether store vacuum` and `store prune` (tens
# of seconds on a store of a year of runs, more on a busy machine): a write waits for them, as the
# gateways do (gateway/_writer.py), and is told the store is busy only past this.
WAIT_FOR_LOCK_S = 600.0
# Runs deleted per transaction by `store prune` (a fraction of a second of the write lock each; under
# SQLite's 999 bound parameters of old builds).
PRUNE_BATCH = 500
CHECKPOINT_WAIT_S = 10.0     # how long `store vacuum` waits for readers to let its WAL be emptied
# The write-ahead log grows while another process holds a long read (a store copy, a vacuum meeting a
# reader); once it has been copied back it is cut to this size, not kept at its largest for as long as
# any process (a gateway, `tether view`) keeps the store open.
WAL_LIMIT_BYTES = 64 * 1024 * 1024


def _wal(db: sqlite3.Connection, wait_s: float = WAIT_FOR_LOCK_S) -> None:
    """Put the store in WAL mode. Switching a new store's journal takes a lock that SQLite does not
    wait for (its busy handler is not called), so two processes making one store at once would see
    one of them fail as busy: retry for up to ``wait_s``, as a write waits for its lock."""
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            from .opening import SQLITE_BUSY, SQLITE_LOCKED

            code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
            if code not in (SQLITE_BUSY, SQLITE_LOCKED) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


class SQLiteStore:
    """Thread-safe enough for one process running many runs (one connection, a lock).

    Opening checks the file first (see :mod:`tether.store.opening`): a
    directory, a device, a file that is not SQLite, a damaged store
    (a cheap header and schema check; ``tether store check`` scans it all) or a store from a newer tether is a
    :class:`StoreError` naming the file and what to do. ``read_only=True``
    (the read commands: ``runs list``, ``runs show``, ``score``, ``diff``)
    opens the file read-only when it or its folder cannot be written.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, read_only: bool = False):
        from .opening import connect

        self.path = Path(path) if path is not None else default_store_path()
        self._lock = threading.Lock()
        self._chains: dict[str, _Chain] = {}
        self.skipped: list[str] = []          # rows a listing left out (damaged), with why
        self._db, self.read_only = connect(self.path, read_only=read_only)
        from .opening import hold

        self._held = hold(self.path) if str(self.path) != ":memory:" else None
        self._db.row_factory = sqlite3.Row
        from .opening import checked

        with checked(self.path):
            if not self.read_only:
                # 2 KiB pages (a new store only): a checkpoint or a step's events rewrite fewer bytes than with 4 KiB
                self._db.execute("PRAGMA page_size=2048")
                _wal(self._db)
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute(f"PRAGMA journal_size_limit={int(WAL_LIMIT_BYTES)}")
            self._db.execute(f"PRAGMA busy_timeout={int(WAIT_FOR_LOCK_S * 1000)}")
            self._migrate()

    def _migrate(self) -> None:
        from .opening import StoreError, schema_check

        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"store {self.path} has schema version {version}, newer than this tether "
                             f"({SCHEMA_VERSION}); upgrade tether or use another --store")
        if version == SCHEMA_VERSION:
            schema_check(self._db, self.path)      # cheap: the tables are there (tether store check scans it all)
            return
        if self.read_only:
            raise StoreError(f"store {self.path} is from an older tether (schema {version}) and cannot be written "
                             "here, so it cannot be upgraded; open it once where it can be written")
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                existing = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                # an older store: add the columns its tables lack, then create the tables it lacks
                for target in range(2, SCHEMA_VERSION + 1):     # each step checks what is there: idempotent
                    if target == 3 and "events" in existing:
                        _events_to_chunks(self._db)
                    for table, column, definition in _MIGRATIONS.get(target, []):
                        have = {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}
                        if table in existing and column not in have:
                            self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                if version and version < 5:
                    _fill_metrics(self._db)
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:        # SQLITE_FULL rolls back itself: keep its error
                    self._db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        from .opening import release

        with self._lock:
            self._db.close()
            held, self._held = self._held, None
        release(held)

    def __del__(self) -> None:
        # Python's sqlite3 connection sits in a reference cycle (its statement cache), so it would
        # stay open, holding the file, until the cycle collector ran: close it with its store.
        if hasattr(self, "_db"):
            try:
                self.close()
            except Exception:       # interpreter shutdown, or already closed
                pass

    def _tx(self, sql: str, params: tuple = ()) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(sql, params)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:        # SQLITE_FULL rolls back itself: keep its error
                    self._db.execute("ROLLBACK")
                raise

    def _rows(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        from .opening import checked

        with self._lock, checked(self.path):
            return list(self._db.execute(sql, params))

    # -- runs --------------------------------------------------------------------
    def create_run(self, run_id: str, *, model: str = "", case_id: str | None = None, meta: dict | None = None,
                   kind: str = "run", eval_id: str | None = None, trial: int = 0, guards: str = "off") -> None:
        try:
            self._tx(_INSERT_RUN, _new_run(run_id, {"model": model, "case_id": case_id, "meta": meta, "kind": kind,
                                                    "eval_id": eval_id, "trial": trial, "guards": guards}))
        except sqlite3.IntegrityError:
            raise _taken(run_id, self.path) from None

    def finish_run(self, run_id: str, status: str, reply: str, reason: str, *, digest: str | None = None,
                   error_kind: str | None = None) -> None:
        from .facts import row_values, run_facts

        self._chains.pop(run_id, None)
        facts = row_values(run_facts({"status": status}, self.events(run_id)))
        self._tx(_finish_run_sql(), (status, reply, reason, time.time(), digest, error_kind, *facts, run_id))

    def mark_running(self, run_id: str) -> None:
        self._tx("UPDATE runs SET status='running', updated=? WHERE run_id=?", (time.time(), run_id))

    def add_whole_run(self, run_id: str, run: dict, events: list[tuple[int, dict]], end: dict | None) -> None:
        """A whole run from elsewhere (``tether runs import``) in one transaction: its row (``run``:
        :meth:`create_run`'s keywords), its events and, when it ended, its end (``end``:
        :meth:`finish_run`'s status, reply, reason, digest, error_kind). Killed half way, none of it is
        there, so importing again starts clean; UsageError when the id is taken."""
        chunk = _chunk(run_id, events) if events else None
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                try:
                    self._db.execute(_INSERT_RUN, _new_run(run_id, run))
                except sqlite3.IntegrityError:
                    raise _taken(run_id, self.path) from None
                if chunk:
                    self._db.execute(_INSERT_CHUNK, chunk)
                if end is not None:
                    self._db.execute(_finish_run_sql(), _ended_run(run_id, end, chunk))
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:        # SQLITE_FULL rolls back itself: keep its error
                    self._db.execute("ROLLBACK")
                raise

    def get_run(self, run_id: str) -> dict | None:
        rows = self._rows(_SELECT_RUNS + " WHERE run_id=?", (run_id,))
        if not rows:
            return None
        try:
            return _run(rows[0])
        except ValueError as exc:
            from .opening import StoreError

            raise StoreError(f"run {run_id!r} in store {self.path} is damaged: {exc}") from None

    def list_runs(self, limit: int = 50, *, eval_id: str | None = None, model: str | None = None,
                  case_id: str | None = None, status: str | None = None, kind: str | None = None,
                  since: float | None = None, before: tuple[float, str] | None = None,
                  q: str | None = None) -> list[dict]:
        """Runs newest first, filtered by any of eval, model, case, status, kind (globs allowed: * and ?);
        one page: ``before`` = (created, run_id) of the last run of the previous page (keyset)."""
        from .queries import read_page

        rows, _ = read_page(self._fetch, "sqlite", limit, before=before, counts=False, eval_id=eval_id, model=model,
                            case_id=case_id, status=status, kind=kind, since=since, q=q)
        return self._page(rows)

    def count_runs(self, *, eval_id: str | None = None, model: str | None = None, case_id: str | None = None,
                   status: str | None = None, kind: str | None = None, since: float | None = None,
                   q: str | None = None, upto: int | None = None) -> int:
        """How many runs match the filters of :meth:`list_runs`; with ``upto``, counting stops past that many
        (the answer is then ``upto + 1``), so a listing's total costs the same at any store size."""
        where, params = run_where("sqlite", eval_id=eval_id, model=model, case_id=case_id, status=status, kind=kind,
                                  since=since, q=q)
        sql, args = capped_count(where, params, upto)
        return self._rows(sql, args)[0]["c"]

    def run_page(self, limit: int = 50, *, before: tuple[float, str] | None = None, upto: int | None = None,
                 **filters: Any) -> tuple[list[dict], int]:
        """A listing's page: :meth:`list_runs` with the columns a listing shows (not the reply, reason or
        metrics) and each run's ``checkpoints`` and ``approvals_waiting``, and :meth:`count_runs` of the
        same filters (up to ``upto``)."""
        from .queries import read_page

        rows, total = read_page(self._fetch, "sqlite", limit, before=before, count=True, upto=upto, **filters)
        return self._page(rows), int(total or 0)

    def _fetch(self, *queries: tuple[str, tuple]) -> list[list[sqlite3.Row]]:
        return [self._rows(sql, params) for sql, params in queries]

    def _page(self, rows: Any) -> list[dict]:
        runs = []
        for r in rows:
            try:
                runs.append(_run(r))
            except ValueError as exc:        # one damaged row: said once, left out, the listing goes on
                self.skipped.append(f"run {r['run_id']!r}: {exc}; left out")
        return runs

    # -- evals ---------------------------------------------------------------------
    def create_eval(self, eval_id: str, suite: str, config: dict) -> None:
        now = time.time()
        try:
            self._tx("INSERT INTO evals (eval_id, created, updated, suite, status, config) VALUES (?,?,?,?,?,?)",
                     (eval_id, now, now, suite, "running", _json(config)))
        except sqlite3.IntegrityError:
            from ..errors import UsageError

            raise UsageError(f"eval id {eval_id!r} is already in {self.path}") from None

    def finish_eval(self, eval_id: str, results: dict, status: str = "finished") -> None:
        self._tx("UPDATE evals SET status=?, results=?, updated=? WHERE eval_id=?",
                 (status, _json(results), time.time(), eval_id))

    def get_eval(self, eval_id: str) -> dict | None:
        rows = self._rows("SELECT * FROM evals WHERE eval_id=?", (eval_id,))
        if not rows:
            return None
        d = dict(rows[0])
        d["config"] = json.loads(d["config"])
        d["results"] = json.loads(d["results"]) if d["results"] else None
        return d

    def list_evals(self, limit: int = 50, before: str | None = None) -> list[dict]:
        """The newest evals, or the ones older than eval ``before`` (a keyset page)."""
        from .queries import evals_page_sql

        return [dict(r) | {"config": json.loads(r["config"])}
                for r in self._rows(evals_page_sql(before), (*([before] if before is not None else []), limit))]

    def eval_overview(self, eval_ids: list[str], results: list[str] | None = None) -> dict[str, dict]:
        from .queries import eval_overview

        return eval_overview(self._rows, eval_ids, results)

    # -- events ------------------------------------------------------------------
    def append_events(self, run_id: str, events: list[tuple[int, dict]]) -> None:
        """Append a batch of consecutive (seq, event) as one chunk, in one statement
        (one transaction); a seq already stored is an error."""
        if not events:
            return
        chunk = _chunk(run_id, events)
        with self._lock:
            if self._db.execute(_INSERT_CHUNK, chunk).rowcount != 1:
                raise _duplicate(run_id, events)

    def events(self, run_id: str) -> list[dict]:
        """The run's events; DamagedRun naming the run and the row when one cannot be read."""
        loads = orjson.loads
        out: list[dict] = []
        for seq, blob in self._db_rows("SELECT seq, events FROM events WHERE run_id=? ORDER BY seq", (run_id,)):
            try:
                chunk = [loads(line) for line in blob.split(b"\n") if line]
            except (orjson.JSONDecodeError, TypeError, AttributeError) as exc:
                raise _damaged(self.path, run_id, seq, f"not JSON Lines ({str(exc)[:80]})") from None
            if not all(isinstance(e, dict) for e in chunk):
                raise _damaged(self.path, run_id, seq, "an event that is not a JSON object")
            out.extend(chunk)
        return out

    def truncate_events(self, run_id: str, count: int) -> None:
        """Drop the events from ``count`` on (a resume drops what came after its checkpoint)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                straddling = self._db.execute("SELECT seq, events FROM events WHERE run_id=? AND seq<? AND last>=?",
                                              (run_id, count, count)).fetchall()
                self._db.execute("DELETE FROM events WHERE run_id=? AND last>=?", (run_id, count))
                for seq, blob in straddling:
                    kept = [line for line in blob.split(b"\n") if line][:count - seq]
                    self._db.execute("INSERT INTO events (run_id, seq, last, events) VALUES (?,?,?,?)",
                                     (run_id, seq, count - 1, b"".join(line + b"\n" for line in kept)))
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:        # SQLITE_FULL rolls back itself: keep its error
                    self._db.execute("ROLLBACK")
                raise

    def _db_rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # -- checkpoints -------------------------------------------------------------
    def save_checkpoint(self, run_id: str, step: int, phase: str, event_count: int, state: dict,
                        events: list[tuple[int, dict]] = ()) -> int:
        """A checkpoint, with the events recorded since the previous one, in one
        transaction (one statement when there are no events). The state is
        stored whole, or as a delta against the run's previous checkpoint
        (store/_delta.py); :meth:`latest_checkpoint` gives it back whole."""
        chunk = _chunk(run_id, events) if events else None
        with self._lock:
            try:
                return self._checkpoint(run_id, step, phase, event_count, state, chunk, events)
            except sqlite3.IntegrityError:          # another writer numbered this run on: count again, once
                self._chains.pop(run_id, None)
                return self._checkpoint(run_id, step, phase, event_count, state, chunk, events)

    def _checkpoint(self, run_id: str, step: int, phase: str, event_count: int, state: dict, chunk: tuple | None,
                    events: Any) -> int:
        chain = self._chains.get(run_id)
        if chain is None:
            chain = self._chains[run_id] = _Chain(self._next_checkpoint(run_id))
        n = chain.next
        delta = _delta.encode(state, chain.lists) if chain.base is not None and chain.length < _delta.MAX_CHAIN \
            else None
        if delta is None:
            row = (run_id, n, step, phase, event_count, orjson.dumps(state, default=str), time.time(), None)
        else:
            row = (run_id, n, step, phase, event_count, orjson.dumps(delta, default=str), time.time(), chain.base)
        if chunk is None:
            self._db.execute(_INSERT_CHECKPOINT, row)      # autocommit: one statement is one transaction
        elif not self._write_with_events(row, chunk):
            raise _duplicate(run_id, events)
        chain.next = n + 1
        if delta is not None:
            chain.length += 1
            chain.lists = _delta.lists_of(state)
        elif chain.base is not None or _delta.size(state) >= _delta.MIN_ITEMS:    # a new chain starts here
            chain.base, chain.length, chain.lists = n, 1, _delta.lists_of(state)
        return n

    def _write_with_events(self, row: tuple, chunk: tuple) -> bool:
        """The checkpoint and its events in one transaction; False (nothing written)
        when the events overlap events already stored."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if self._db.execute(_INSERT_CHUNK, chunk).rowcount != 1:
                self._db.execute("ROLLBACK")
                return False
            self._db.execute(_INSERT_CHECKPOINT, row)
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:        # SQLITE_FULL rolls back itself: keep its error
                self._db.execute("ROLLBACK")
            raise
        return True

    def _next_checkpoint(self, run_id: str) -> int:
        return self._db.execute("SELECT COALESCE(MAX(n), -1) + 1 FROM checkpoints WHERE run_id=?",
                                (run_id,)).fetchone()[0]

    def latest_checkpoint(self, run_id: str) -> dict | None:
        rows = self._rows("SELECT * FROM checkpoints WHERE run_id=? ORDER BY n DESC LIMIT 1", (run_id,))
        if not rows:
            return None
        r = rows[0]
        if r["base"] is None:
            state = orjson.loads(r["state"])
        else:       # the chain: its whole checkpoint, then each delta in order
            chain = self._rows("SELECT state FROM checkpoints WHERE run_id=? AND n BETWEEN ? AND ? ORDER BY n",
                               (run_id, r["base"], r["n"]))
            state = orjson.loads(chain[0]["state"])
            for link in chain[1:]:
                state = _delta.decode(orjson.loads(link["state"]), state)
        return {"n": r["n"], "step": r["step"], "phase": r["phase"], "event_count": r["event_count"], "state": state}

    def checkpoint_count(self, run_id: str) -> int:
        return self._rows("SELECT COUNT(*) AS c FROM checkpoints WHERE run_id=?", (run_id,))[0]["c"]

    # -- side-effect ledger --------------------------------------------------------
    def effect(self, key: str) -> dict | None:
        rows = self._rows("SELECT * FROM effects WHERE key=?", (key,))
        return _effect(rows[0]) if rows else None

    def record_intent(self, key: str, run_id: str, signature: str, tool: str, arguments: dict, step: int) -> None:
        now = time.time()
        self._tx("INSERT OR IGNORE INTO effects (key, run_id, signature, tool, arguments, step, status, created, updated) "
                 "VALUES (?,?,?,?,?,?, 'intent', ?, ?)", (key, run_id, signature, tool, _json(arguments), step, now, now))

    def record_outcome(self, key: str, status: str, result: dict | None) -> None:
        self._tx("UPDATE effects SET status=?, result=?, updated=? WHERE key=?",
                 (status, _json(result) if result is not None else None, time.time(), key))

    def effects(self, run_id: str) -> list[dict]:
        return [_effect(r) for r in self._rows("SELECT * FROM effects WHERE run_id=? ORDER BY created", (run_id,))]

    # -- approvals -----------------------------------------------------------------
    def create_approval(self, approval_id: str, run_id: str, tool: str, arguments: dict, digest: str, reason: str,
                        expires: float | None = None) -> None:
        self._tx("INSERT INTO approvals (id, run_id, tool, arguments, digest, reason, status, created, expires) "
                 "VALUES (?,?,?,?,?,?, 'pending', ?, ?)",
                 (approval_id, run_id, tool, _json(arguments), digest, reason, time.time(), expires))

    def _change(self, sql: str, params: tuple) -> int:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                cur = self._db.execute(sql, params)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:        # SQLITE_FULL rolls back itself: keep its error
                    self._db.execute("ROLLBACK")
                raise
        return cur.rowcount

    def decide_approval(self, approval_id: str, status: str, decided_by: str, note: str = "",
                        new_arguments: dict | None = None) -> bool:
        """Decide a pending, unexpired approval (compare-and-set): False when it was
        already decided, expired or never existed; the caller lost and must say so."""
        if not decided_by:
            raise ValueError("an approval decision needs who decided")
        now = time.time()
        return self._change(
            "UPDATE approvals SET status=?, decided_by=?, note=?, new_arguments=?, decided=? "
            "WHERE id=? AND status='pending' AND (expires IS NULL OR expires > ?)",
            (status, decided_by, note, _json(new_arguments) if new_arguments is not None else None, now,
             approval_id, now)) == 1

    def expire_approvals(self, run_id: str | None = None) -> int:
        """Mark pending approvals past their expiry as expired (they then deny)."""
        now = time.time()
        sql = "UPDATE approvals SET status='expired', decided_by='expiry', decided=? " \
              "WHERE status='pending' AND expires IS NOT NULL AND expires <= ?"
        return self._change(sql + (" AND run_id=?" if run_id else ""), (now, now, run_id) if run_id else (now, now))

    def consume_approval(self, approval_id: str) -> bool:
        """Mark a decision used by the call it was given for; False when it was
        already used (a decision is good once, a rejection included)."""
        return self._change("UPDATE approvals SET used=1, status=CASE WHEN status IN ('approved','modified') "
                            "THEN 'consumed' ELSE status END WHERE id=? AND used=0 AND status!='pending'",
                            (approval_id,)) == 1

    # -- leases: one process drives a run at a time ------------------------------------
    def acquire_lease(self, run_id: str, holder: str, ttl: float = 120.0,
                      stale: Callable[[dict], bool] | None = None) -> None:
        """Take the run's lease, or raise RunBusy naming who holds it. A lease whose
        holder stopped renewing it (a crash) is taken over once it expires, or at
        once when ``stale(row)`` says its holder is gone (a dead pid on this host)."""
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute("SELECT * FROM leases WHERE run_id=?", (run_id,)).fetchone()
                if (row is not None and row["holder"] != holder and row["expires"] > now
                        and not (stale is not None and stale(dict(row)))):
                    self._db.execute("ROLLBACK")
                    from ..errors import RunBusy

                    raise RunBusy(run_id, row["pid"], row["host"], row["acquired"])
                self._db.execute("INSERT OR REPLACE INTO leases (run_id, holder, pid, host, acquired, expires) "
                                 "VALUES (?,?,?,?,?,?)", (run_id, holder, os.getpid(), _host(), now, now + ttl))
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def renew_lease(self, run_id: str, holder: str, ttl: float = 120.0) -> bool:
        """Extend the lease; False when this holder no longer has it (another process took over)."""
        return self._change("UPDATE leases SET expires=? WHERE run_id=? AND holder=?",
                            (time.time() + ttl, run_id, holder)) == 1

    def release_lease(self, run_id: str, holder: str) -> None:
        self._change("DELETE FROM leases WHERE run_id=? AND holder=?", (run_id, holder))

    def lease(self, run_id: str) -> dict | None:
        rows = self._rows("SELECT * FROM leases WHERE run_id=?", (run_id,))
        return dict(rows[0]) if rows else None

    def approvals(self, run_id: str | None, status: str | None = None, limit: int | None = None) -> list[dict]:
        """A run's approvals (``run_id`` None: every run's, newest first), optionally of one status."""
        from .queries import approvals_sql

        sql, params = approvals_sql(run_id, status, limit)
        return [_approval(r) for r in self._rows(sql, params)]

    def get_approval(self, approval_id: str) -> dict | None:
        rows = self._rows("SELECT * FROM approvals WHERE id=?", (approval_id,))
        return _approval(rows[0]) if rows else None

    # -- a store that holds a year of runs (tether store ...; both backends: store/protocol.py) --
    backend = "sqlite"

    @property
    def where(self) -> str:
        """How messages and results name this store."""
        return str(self.path)

    def run_metrics(self, **filters: Any) -> dict:
        """The run metrics of the runs matching ``filters`` (store/queries.py), as aggregate queries."""
        from .queries import run_metrics

        return run_metrics(lambda sql, params: [tuple(r) for r in self._rows(sql, tuple(params))], "sqlite",
                           **filters)

    def run_cursor(self, run_id: str) -> tuple[float, str] | None:
        """The keyset position of a run (for ``list_runs(before=...)``), or None."""
        rows = self._rows("SELECT created, run_id FROM runs WHERE run_id=?", (run_id,))
        return (rows[0][0], rows[0][1]) if rows else None

    def info(self) -> dict:
        """Size (the file and its WAL), runs, evals, oldest and newest run."""
        sizes = [p.stat().st_size if str(self.path) != ":memory:" and p.exists() else 0
                 for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))]
        size = sum(sizes)
        runs, oldest, newest = self._rows("SELECT COUNT(*), MIN(created), MAX(created) FROM runs")[0]
        evals = self._rows("SELECT COUNT(*) FROM evals")[0][0]
        schema = self._rows("PRAGMA user_version")[0][0]          # the store's own (a read-only older one stays so)
        return {"backend": self.backend, "where": self.where, "size": size, "runs": runs, "evals": evals,
                "oldest": oldest, "newest": newest, "schema": schema, "wal": sizes[1]}

    def prune(self, older_than: float, keep_evals: tuple[str, ...] = (), *,
              progress: Callable[[int, int], None] | None = None) -> dict:
        """Delete the runs created before ``older_than`` (a UNIX time) with all their rows, except
        runs still running and the trials of evals matching ``keep_evals`` (globs); then the evals
        created before it that have no run left.

        In transactions of ``PRUNE_BATCH`` runs, oldest first: SQLite has one writer at a time, and a
        year of runs deleted in one transaction held every other writer (a gateway recording a
        conversation, an eval) for tens of seconds. Each batch checks its runs again under the lock
        (a paused run resumed meanwhile is running, and kept). Stopped half way, the runs deleted are
        gone whole and the rest are all there: pruning again finishes. ``progress(done, total)`` after
        each batch."""
        from .queries import RUN_TABLES, keep_clause

        keep, params = keep_clause("sqlite", keep_evals)
        where = f"created < ? AND status != 'running' AND NOT {keep}"
        with self._lock:
            ids = [r[0] for r in self._db.execute(f"SELECT run_id FROM runs WHERE {where} ORDER BY created, run_id",
                                                  (older_than, *params))]
        runs = 0
        for start in range(0, len(ids), PRUNE_BATCH):
            batch = ids[start:start + PRUNE_BATCH]
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.execute("DROP TABLE IF EXISTS temp.pruned")
                    self._db.execute("CREATE TEMP TABLE pruned (run_id TEXT PRIMARY KEY)")
                    self._db.execute(f"INSERT INTO pruned SELECT run_id FROM runs WHERE {where} AND run_id IN "
                                     f"({', '.join('?' * len(batch))})", (older_than, *params, *batch))
                    for table in RUN_TABLES:
                        self._db.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM pruned)")
                    runs += self._db.execute("DELETE FROM runs WHERE run_id IN (SELECT run_id FROM pruned)").rowcount
                    self._db.execute("DROP TABLE temp.pruned")
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            self._chains.clear()
            if progress:
                progress(min(start + PRUNE_BATCH, len(ids)), len(ids))
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                evals = self._db.execute(
                    f"DELETE FROM evals WHERE created < ? AND status != 'running' AND NOT {keep} AND NOT EXISTS "
                    "(SELECT 1 FROM runs WHERE runs.eval_id = evals.eval_id)", (older_than, *params)).rowcount
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        self._chains.clear()
        return {"runs": runs, "evals": evals}

    def vacuum(self) -> None:
        """Give the space of deleted rows back to the file system (rewrites the file)."""
        from .opening import checked

        with self._lock, checked(self.path):
            self._db.execute("VACUUM")
            # the WAL back into the file and emptied: that waits for every reader to be done with the WAL,
            # so a reader holding a long transaction (a store copy, a notebook) is waited for a moment only;
            # the space then comes back when the last process closes the store
            self._db.execute(f"PRAGMA busy_timeout={int(CHECKPOINT_WAIT_S * 1000)}")
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                self._db.execute(f"PRAGMA busy_timeout={int(WAIT_FOR_LOCK_S * 1000)}")

    def check(self) -> list[str]:
        """The full scan (``PRAGMA integrity_check``) and the schema: what is wrong, or []."""
        from .opening import StoreError, schema_check

        with self._lock:
            try:
                rows = [str(r[0]) for r in self._db.execute("PRAGMA integrity_check(20)").fetchall()]
            except sqlite3.DatabaseError as exc:
                return [f"the scan stopped: {exc}"]
        problems = [] if rows == ["ok"] else [" ".join(r.split()) for r in rows]
        try:
            schema_check(self._db, self.path)
        except StoreError as exc:
            problems.append(str(exc))
        return problems

    @contextlib.contextmanager
    def snapshot(self) -> Iterator["SQLiteStore"]:
        """Reads inside see the store as it was at one moment (one read transaction), whatever
        other processes write meanwhile: a copy's source, read table after table."""
        from .opening import checked

        with self._lock, checked(self.path):
            self._db.execute("BEGIN")
            self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()     # the moment is the first read
        try:
            yield self
        finally:
            with self._lock:
                if self._db.in_transaction:
                    self._db.execute("COMMIT")

    def dump(self, table: str, batch: int = 1000):
        """Every row of ``table`` (store/queries.py TABLES), in batches of tuples (a copy's source)."""
        from .queries import KEYS, TABLES

        cur = self._db.execute(f"SELECT {', '.join(TABLES[table])} FROM {table} ORDER BY {KEYS[table]}")
        while rows := cur.fetchmany(batch):
            yield [tuple(r) for r in rows]

    def load(self, table: str, rows: list[tuple]) -> None:
        """Insert rows as :meth:`dump` gives them, in one transaction (a copy's destination)."""
        from .queries import TABLES

        cols = TABLES[table]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                                     rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise


# A run's `updated` is its row's last change or its last checkpoint, whichever is later (a checkpoint
# does not touch the run's row: one statement fewer per step).
_SELECT_RUNS = runs_select("sqlite")
# A chunk goes in only after every event already stored for the run (append-only, checked in the statement).
_INSERT_CHUNK = ("INSERT INTO events (run_id, seq, last, events) SELECT ?1, ?2, ?3, ?4 WHERE "
                 "COALESCE((SELECT last FROM events WHERE run_id=?1 ORDER BY seq DESC LIMIT 1), -1) < ?2")
def _events_to_chunks(db: sqlite3.Connection) -> None:
    """Schema 3: one row per event becomes one row per chunk (here, a chunk of one)."""
    if "last" in {r[1] for r in db.execute("PRAGMA table_info(events)")}:
        return
    db.execute("ALTER TABLE events RENAME TO events_v2")
    db.execute("CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, last INTEGER NOT NULL, "
               "events BLOB NOT NULL, PRIMARY KEY (run_id, seq))")
    db.execute("INSERT INTO events (run_id, seq, last, events) "
               "SELECT run_id, seq, seq, CAST(CAST(event AS TEXT) || char(10) AS BLOB) FROM events_v2")
    db.execute("DROP TABLE events_v2")


def _fill_metrics(db: sqlite3.Connection) -> None:
    """Schema 5: the metrics of every run that ended before them (once, when migrating)."""
    from .facts import COLUMNS, row_values, run_facts

    todo = db.execute("SELECT run_id, status FROM runs WHERE status != 'running' AND steps IS NULL").fetchall()
    for run_id, status in todo:
        try:
            events = [orjson.loads(line) for (blob,) in db.execute("SELECT events FROM events WHERE run_id=? "
                                                                   "ORDER BY seq", (run_id,))
                      for line in bytes(blob).split(b"\n") if line]
            facts = row_values(run_facts({"status": status}, (e for e in events if isinstance(e, dict))))
        except (orjson.JSONDecodeError, TypeError, ValueError):
            continue                # a damaged run keeps no metrics; stats count it as zero steps and cost
        db.execute("UPDATE runs SET " + ", ".join(f"{c}=?" for c in COLUMNS) + " WHERE run_id=?", (*facts, run_id))


_INSERT_CHECKPOINT = ("INSERT INTO checkpoints (run_id, n, step, phase, event_count, state, created, base) "
                      "VALUES (?,?,?,?,?,?,?,?)")


def _damaged(path: Any, run_id: str, seq: Any, what: str) -> Exception:
    from .opening import DamagedRun

    return DamagedRun(f"run {run_id} in {path} is damaged: its events row at seq {seq} is {what}; the other runs "
                      f"are fine (tether runs export {run_id} cannot copy it)")
