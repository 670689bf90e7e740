"""The PostgreSQL backend: one store shared by every process and host that can
reach the server (CI runners, gateway replicas, durable workers, Ray workers).
``--store postgresql://user@host/db`` or ``TETHER_STORE=postgresql://...``;
``pip install 'tether[postgres]'`` (psycopg 3). Same tables, same guarantees
as the embedded SQLite store (see :mod:`tether.store.protocol`):

- events append-only: a chunk is inserted only after every event already
  stored for its run, in one statement, under a per-run advisory lock (two
  processes cannot both pass the check);
- a checkpoint and its events are one transaction;
- approvals are decided by a compare-and-set ``UPDATE ... WHERE status='pending'``
  (PostgreSQL re-checks the condition on the row a concurrent writer changed);
- a lease is taken under a per-run advisory lock (``SELECT ... FOR UPDATE``, then
  take-over when expired or stale);
- the ledger's intent is ``INSERT ... ON CONFLICT DO NOTHING``.

The schema carries a version (table ``tether_schema``); a newer one is refused.
The version is checked on a connection's first statement, in the same round trip
(a read goes in one pipeline behind the check; a write waits for it). A command
pays one new connection (a server process starts) and then, for a listing, one
round trip: the reads a page needs go in one pipeline.
A password in the URL is never shown: messages and results name the store by
its URL without it (give the password with ``PGPASSWORD`` or ``~/.pgpass`` to
reopen a store a results file names).
"""

from __future__ import annotations

import json
import os
import threading
import time
import zlib
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import orjson

from . import _delta
from ._rows import (_INSERT_RUN, _approval, _Chain, _chunk, _duplicate, _effect, _ended_run, _finish_run_sql, _host,
                    _json, _new_run, _run, _taken)
from .connect import redact
from .opening import StoreError
from .queries import KEYS, RUN_TABLES, TABLES, capped_count, keep_clause, pg, run_where, runs_select

SCHEMA_VERSION = 3          # 2: runs_by_eval_pattern (an eval-id glob's prefix finds its runs by index)
                            # 3: without runs_by_eval_created (the pattern index answers an eval id too)
SCHEMA = """
CREATE TABLE IF NOT EXISTS tether_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, created DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', case_id TEXT, reply TEXT NOT NULL DEFAULT '',
    reason TEXT NOT NULL DEFAULT '', meta TEXT NOT NULL DEFAULT '{}', kind TEXT NOT NULL DEFAULT 'run',
    eval_id TEXT, trial INTEGER NOT NULL DEFAULT 0, guards TEXT NOT NULL DEFAULT 'off', digest TEXT,
    error_kind TEXT, steps INTEGER, tool_calls INTEGER, tokens BIGINT, cost DOUBLE PRECISION, trips INTEGER,
    looped INTEGER, invented INTEGER, hitl INTEGER);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created, run_id);
CREATE INDEX IF NOT EXISTS runs_by_eval_pattern ON runs (eval_id text_pattern_ops, created, run_id);
CREATE INDEX IF NOT EXISTS runs_metrics ON runs (kind, status, created, steps, looped, invented, hitl, cost, tokens);
CREATE TABLE IF NOT EXISTS evals (
    eval_id TEXT PRIMARY KEY, created DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL,
    suite TEXT NOT NULL, status TEXT NOT NULL, config TEXT NOT NULL DEFAULT '{}', results TEXT);
CREATE INDEX IF NOT EXISTS evals_by_created ON evals (created, eval_id);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, last INTEGER NOT NULL, events BYTEA NOT NULL,
    PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL, n INTEGER NOT NULL, step INTEGER NOT NULL, phase TEXT NOT NULL,
    event_count INTEGER NOT NULL, state BYTEA NOT NULL, created DOUBLE PRECISION NOT NULL, base INTEGER,
    PRIMARY KEY (run_id, n));
CREATE TABLE IF NOT EXISTS effects (
    key TEXT PRIMARY KEY, run_id TEXT NOT NULL, signature TEXT NOT NULL, tool TEXT NOT NULL,
    arguments TEXT NOT NULL, step INTEGER NOT NULL, status TEXT NOT NULL, result TEXT,
    created DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS effects_by_signature ON effects (run_id, signature);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY, run_id TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL, digest TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '', status TEXT NOT NULL, decided_by TEXT, note TEXT, new_arguments TEXT,
    created DOUBLE PRECISION NOT NULL, decided DOUBLE PRECISION, expires DOUBLE PRECISION,
    used INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS approvals_by_run ON approvals (run_id, status);
CREATE TABLE IF NOT EXISTS leases (
    run_id TEXT PRIMARY KEY, holder TEXT NOT NULL, pid INTEGER NOT NULL, host TEXT NOT NULL,
    acquired DOUBLE PRECISION NOT NULL, expires DOUBLE PRECISION NOT NULL)
"""
_SCHEMA_LOCK = 0x7E7E_0001          # an advisory lock: one process creates the tables
# What an upgrade removes. runs_by_eval_pattern (eval_id text_pattern_ops, created, run_id) answers
# `eval_id = ?` in the order of the listings as runs_by_eval_created did (text_pattern_ops has the
# text `=`): one index fewer for every run written, and for a new connection's first plan to load.
UPGRADE = ("DROP INDEX IF EXISTS runs_by_eval_created",)


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        from ..errors import UsageError

        raise UsageError("a postgresql:// store needs psycopg 3: pip install 'tether[postgres]'") from None
    return psycopg


def _key(text: str) -> int:
    """A 63-bit advisory-lock key for a name (stable across processes and hosts)."""
    return zlib.crc32(text.encode("utf-8")) | (zlib.adler32(text.encode("utf-8")) << 32) & 0x7FFF_FFFF_FFFF_FFFF


class PostgresStore:
    """A store in a PostgreSQL database. One connection per store object, a lock:
    thread-safe enough for one process running many runs; many processes on many
    hosts share the database."""

    backend = "postgresql"

    def __init__(self, url: str, *, read_only: bool = False):
        psycopg = _psycopg()
        self.url = url
        self.path = self.where
        self.read_only = read_only
        self.skipped: list[str] = []
        self._lock = threading.RLock()
        self._chains: dict[str, Any] = {}
        self._errors = psycopg.errors
        self._ready = False           # the schema was checked (on the first statement: see _reads)
        self._pipelines = psycopg.Pipeline.is_supported()
        self._snap: Any = None        # the connection of an open snapshot(): dump() reads through it
        try:
            named = "application_name" in psycopg.conninfo.conninfo_to_dict(url)   # the URL's own name wins
            self._db = psycopg.connect(url, autocommit=True, connect_timeout=10,
                                       **({} if named else {"application_name": "tether"}))
        except psycopg.Error as exc:
            raise StoreError(f"store {self.where} cannot be reached: {' '.join(str(exc).split())[:300]}") from None

    @property
    def where(self) -> str:
        return redact(self.url)

    # -- plumbing ------------------------------------------------------------------
    @contextmanager
    def _checked(self) -> Iterator[None]:
        psycopg = _psycopg()
        try:
            yield
        except psycopg.errors.UniqueViolation:
            raise
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise StoreError(f"store {self.where} cannot be used: {' '.join(str(exc).split())[:300]}") from None

    def _schema_checked(self) -> None:
        """Before a connection's first write (or a dump): the schema checked, the tables made. A write
        never rides behind the check in one round trip: it must not run against a newer schema."""
        if not self._ready:
            self._migrate()
            self._ready = True

    def _migrate(self, version: int | None | object = ...) -> None:
        """Make the tables, upgrade an older store (a store that may write), or refuse: a newer store,
        no store for a read. ``version``: the store's, when the caller read it already."""
        psycopg = _psycopg()
        if version is ...:
            try:
                version = _newest(self._db.execute(_VERSION).fetchall())
            except psycopg.errors.UndefinedTable:
                version = None
        if version == SCHEMA_VERSION:
            return
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(f"store {self.where} has schema version {version}, newer than this tether "
                             f"({SCHEMA_VERSION}); upgrade tether or use another --store")
        if self.read_only:
            if version is not None:        # an older store reads as it is (it lacks indexes, not tables or columns)
                return
            raise StoreError(f"store {self.where} holds no tether store yet (run something into it first)")
        with self._db.transaction():       # make the tables, or add what an older store lacks: idempotent
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in (*SCHEMA.split(";"), *UPGRADE):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute("DELETE FROM tether_schema")
            self._db.execute("INSERT INTO tether_schema (version) VALUES (%s)", (SCHEMA_VERSION,))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __del__(self) -> None:             # a store dropped without close(): close its connection quietly
        db = getattr(self, "_db", None)
        if db is not None and not db.closed:
            try:
                db.close()
            except Exception:              # noqa: BLE001 - the interpreter may be shutting down
                pass

    def _reads(self, *queries: tuple[str, tuple | list]) -> list[tuple[list[str], list[tuple]]]:
        """(column names, rows) of each read query (``?`` placeholders), all in one round trip (a
        pipeline). On the connection's first statement the schema check goes in front of them, in
        the same round trip: a store that is not there yet, older or newer is then handled by
        :meth:`_migrate` (made, or refused naming why) and the reads are sent again."""
        with self._lock, self._checked():
            if self._ready:
                return self._send(queries)
            try:
                found = self._send(((_VERSION, ()), *queries))
                version = _newest(found.pop(0)[1])
            except self._errors.UndefinedTable:       # no tether_schema (or a read's table is missing: see below)
                found = None
            if found is None:
                self._migrate()                      # refuses an absent store, or makes the tables
                found = self._send(queries)          # (a table still missing now raises: a damaged store)
            elif version != SCHEMA_VERSION:
                self._migrate(version)               # refuses a newer store; upgrades an older one that may write
                if not self.read_only:               # (a read-only command reads an older store as it is: the
                    found = self._send(queries)      # answers already here stand, no second round trip)
            self._ready = True
            return found

    def _send(self, queries: tuple[tuple[str, Any], ...]) -> list[tuple[list[str], list[tuple]]]:
        db = self._db
        if len(queries) == 1 or not self._pipelines:
            cursors = [db.execute(pg(sql), tuple(params)) for sql, params in queries]
        else:
            with db.pipeline():                      # one round trip: every statement, then (leaving) a sync
                cursors = [db.execute(pg(sql), tuple(params)) for sql, params in queries]
        return [([c.name for c in cur.description], cur.fetchall()) if cur.description else ([], [])
                for cur in cursors]

    def _q(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        return self._reads((sql, params))[0][1]

    def _d(self, sql: str, params: tuple | list = ()) -> list[dict]:
        names, rows = self._reads((sql, params))[0]
        return [dict(zip(names, row)) for row in rows]

    def _change(self, sql: str, params: tuple) -> int:
        with self._lock, self._checked():
            self._schema_checked()
            return self._db.execute(pg(sql), params).rowcount

    @contextmanager
    def _tx(self, *locks: str) -> Iterator[Any]:
        """A transaction holding advisory locks on ``locks`` (names) until it ends."""
        with self._lock, self._checked():
            self._schema_checked()
        with self._lock, self._checked(), self._db.transaction():
            for name in locks:
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_key(name),))
            yield self._db

    # -- runs ------------------------------------------------------------------------
    def create_run(self, run_id: str, *, model: str = "", case_id: str | None = None, meta: dict | None = None,
                   kind: str = "run", eval_id: str | None = None, trial: int = 0, guards: str = "off") -> None:
        try:
            self._change(_INSERT_RUN, _new_run(run_id, {"model": model, "case_id": case_id, "meta": meta,
                                                        "kind": kind, "eval_id": eval_id, "trial": trial,
                                                        "guards": guards}))
        except self._errors.UniqueViolation:
            raise _taken(run_id, self.where) from None

    def finish_run(self, run_id: str, status: str, reply: str, reason: str, *, digest: str | None = None,
                   error_kind: str | None = None) -> None:
        from .facts import row_values, run_facts

        self._chains.pop(run_id, None)
        facts = row_values(run_facts({"status": status}, self.events(run_id)))
        self._change(_finish_run_sql(),
                     (status, reply, reason, time.time(), digest, error_kind, *facts, run_id))

    def mark_running(self, run_id: str) -> None:
        self._change("UPDATE runs SET status='running', updated=? WHERE run_id=?", (time.time(), run_id))

    def add_whole_run(self, run_id: str, run: dict, events: list[tuple[int, dict]], end: dict | None) -> None:
        """As :meth:`SQLiteStore.add_whole_run`: the row, the events and the end in one transaction."""
        chunk = _chunk(run_id, events) if events else None
        try:
            with self._tx("events:" + run_id) as db:
                db.execute(pg(_INSERT_RUN), _new_run(run_id, run))
                if chunk:
                    db.execute(_INSERT_CHUNK, (*chunk, run_id, chunk[1]))
                if end is not None:
                    db.execute(pg(_finish_run_sql()), _ended_run(run_id, end, chunk))
        except self._errors.UniqueViolation:
            raise _taken(run_id, self.where) from None

    def get_run(self, run_id: str) -> dict | None:
        rows = self._d(_SELECT_RUNS + " WHERE run_id=?", (run_id,))
        if not rows:
            return None
        try:
            return _run(rows[0])
        except ValueError as exc:
            raise StoreError(f"run {run_id!r} in store {self.where} is damaged: {exc}") from None

    def list_runs(self, limit: int = 50, *, eval_id: str | None = None, model: str | None = None,
                  case_id: str | None = None, status: str | None = None, kind: str | None = None,
                  since: float | None = None, before: tuple[float, str] | None = None,
                  q: str | None = None) -> list[dict]:
        from .queries import read_page

        rows, _ = read_page(self._fetch, "postgresql", limit, before=before, counts=False, eval_id=eval_id,
                            model=model, case_id=case_id, status=status, kind=kind, since=since, q=q)
        return self._page(rows)

    def count_runs(self, *, eval_id: str | None = None, model: str | None = None, case_id: str | None = None,
                   status: str | None = None, kind: str | None = None, since: float | None = None,
                   q: str | None = None, upto: int | None = None) -> int:
        where, params = run_where("postgresql", eval_id=eval_id, model=model, case_id=case_id, status=status,
                                  kind=kind, since=since, q=q)
        sql, args = capped_count(where, params, upto)
        return int(self._q(sql, args)[0][0])

    def run_page(self, limit: int = 50, *, before: tuple[float, str] | None = None, upto: int | None = None,
                 **filters: Any) -> tuple[list[dict], int]:
        from .queries import read_page

        rows, total = read_page(self._fetch, "postgresql", limit, before=before, count=True, upto=upto, **filters)
        return self._page(rows), int(total or 0)          # (the page and its count: one round trip)

    def _fetch(self, *queries: tuple[str, tuple]) -> list[list[dict]]:
        return [[dict(zip(names, row)) for row in rows] for names, rows in self._reads(*queries)]

    def _page(self, rows: list[dict]) -> list[dict]:
        runs = []
        for r in rows:
            try:
                runs.append(_run(r))
            except ValueError as exc:
                self.skipped.append(f"run {r['run_id']!r}: {exc}; left out")
        return runs

    def run_cursor(self, run_id: str) -> tuple[float, str] | None:
        rows = self._q("SELECT created, run_id FROM runs WHERE run_id=?", (run_id,))
        return (rows[0][0], rows[0][1]) if rows else None

    def run_metrics(self, **filters: Any) -> dict:
        from .queries import run_metrics

        return run_metrics(self._q, "postgresql", **filters)

    # -- evals -------------------------------------------------------------------------
    def create_eval(self, eval_id: str, suite: str, config: dict) -> None:
        now = time.time()
        try:
            self._change("INSERT INTO evals (eval_id, created, updated, suite, status, config) VALUES (?,?,?,?,?,?)",
                         (eval_id, now, now, suite, "running", _json(config)))
        except self._errors.UniqueViolation:
            from ..errors import UsageError

            raise UsageError(f"eval id {eval_id!r} is already in {self.where}") from None

    def finish_eval(self, eval_id: str, results: dict, status: str = "finished") -> None:
        self._change("UPDATE evals SET status=?, results=?, updated=? WHERE eval_id=?",
                     (status, _json(results), time.time(), eval_id))

    def get_eval(self, eval_id: str) -> dict | None:
        rows = self._d("SELECT * FROM evals WHERE eval_id=?", (eval_id,))
        if not rows:
            return None
        d = rows[0]
        d["config"] = json.loads(d["config"])
        d["results"] = json.loads(d["results"]) if d["results"] else None
        return d

    def list_evals(self, limit: int = 50, before: str | None = None) -> list[dict]:
        from .queries import evals_page_sql

        return [r | {"config": json.loads(r["config"])}
                for r in self._d(evals_page_sql(before), (*([before] if before is not None else []), limit))]

    def eval_overview(self, eval_ids: list[str], results: list[str] | None = None) -> dict[str, dict]:
        from .queries import eval_overview

        return eval_overview(self._q, eval_ids, results)

    # -- events --------------------------------------------------------------------------
    def append_events(self, run_id: str, events: list[tuple[int, dict]]) -> None:
        if not events:
            return
        chunk = _chunk(run_id, events)
        try:
            with self._tx("events:" + run_id) as db:
                if db.execute(_INSERT_CHUNK, (*chunk, run_id, chunk[1])).rowcount != 1:
                    raise _duplicate(run_id, events)
        except self._errors.UniqueViolation:
            raise _duplicate(run_id, events) from None

    def events(self, run_id: str) -> list[dict]:
        loads = orjson.loads
        return [loads(line) for (blob,) in self._q("SELECT events FROM events WHERE run_id=? ORDER BY seq", (run_id,))
                for line in bytes(blob).split(b"\n") if line]

    def truncate_events(self, run_id: str, count: int) -> None:
        with self._tx("events:" + run_id) as db:
            straddling = db.execute("SELECT seq, events FROM events WHERE run_id=%s AND seq<%s AND last>=%s",
                                    (run_id, count, count)).fetchall()
            db.execute("DELETE FROM events WHERE run_id=%s AND last>=%s", (run_id, count))
            for seq, blob in straddling:
                kept = [line for line in bytes(blob).split(b"\n") if line][:count - seq]
                db.execute("INSERT INTO events (run_id, seq, last, events) VALUES (%s,%s,%s,%s)",
                           (run_id, seq, count - 1, b"".join(line + b"\n" for line in kept)))

    # -- checkpoints ---------------------------------------------------------------------
    def save_checkpoint(self, run_id: str, step: int, phase: str, event_count: int, state: dict,
                        events: list[tuple[int, dict]] = ()) -> int:
        chunk = _chunk(run_id, events) if events else None
        with self._lock:
            try:
                return self._checkpoint(run_id, step, phase, event_count, state, chunk, events)
            except self._errors.UniqueViolation:     # another writer numbered this run on: count again, once
                self._chains.pop(run_id, None)
                return self._checkpoint(run_id, step, phase, event_count, state, chunk, events)

    def _checkpoint(self, run_id: str, step: int, phase: str, event_count: int, state: dict, chunk: tuple | None,
                    events: Any) -> int:
        chain = self._chains.get(run_id)
        if chain is None:
            n0 = self._q("SELECT COALESCE(MAX(n), -1) + 1 FROM checkpoints WHERE run_id=?", (run_id,))[0][0]
            chain = self._chains[run_id] = _Chain(int(n0))
        n = chain.next
        delta = _delta.encode(state, chain.lists) if chain.base is not None and chain.length < _delta.MAX_CHAIN \
            else None
        body = orjson.dumps(state if delta is None else delta, default=str)
        row = (run_id, n, step, phase, event_count, body, time.time(), None if delta is None else chain.base)
        with self._tx("events:" + run_id) as db:
            if chunk is not None and db.execute(_INSERT_CHUNK, (*chunk, run_id, chunk[1])).rowcount != 1:
                raise _duplicate(run_id, events)
            db.execute(_INSERT_CHECKPOINT, row)
        chain.next = n + 1
        if delta is not None:
            chain.length += 1
            chain.lists = _delta.lists_of(state)
        elif chain.base is not None or _delta.size(state) >= _delta.MIN_ITEMS:
            chain.base, chain.length, chain.lists = n, 1, _delta.lists_of(state)
        return n

    def latest_checkpoint(self, run_id: str) -> dict | None:
        rows = self._d("SELECT * FROM checkpoints WHERE run_id=? ORDER BY n DESC LIMIT 1", (run_id,))
        if not rows:
            return None
        r = rows[0]
        if r["base"] is None:
            state = orjson.loads(bytes(r["state"]))
        else:
            chain = self._q("SELECT state FROM checkpoints WHERE run_id=? AND n BETWEEN ? AND ? ORDER BY n",
                            (run_id, r["base"], r["n"]))
            state = orjson.loads(bytes(chain[0][0]))
            for (link,) in chain[1:]:
                state = _delta.decode(orjson.loads(bytes(link)), state)
        return {"n": r["n"], "step": r["step"], "phase": r["phase"], "event_count": r["event_count"], "state": state}

    def checkpoint_count(self, run_id: str) -> int:
        return int(self._q("SELECT COUNT(*) FROM checkpoints WHERE run_id=?", (run_id,))[0][0])

    # -- the side-effect ledger -------------------------------------------------------------
    def effect(self, key: str) -> dict | None:
        rows = self._d("SELECT * FROM effects WHERE key=?", (key,))
        return _effect(rows[0]) if rows else None

    def record_intent(self, key: str, run_id: str, signature: str, tool: str, arguments: dict, step: int) -> None:
        now = time.time()
        self._change("INSERT INTO effects (key, run_id, signature, tool, arguments, step, status, created, updated) "
                     "VALUES (?,?,?,?,?,?, 'intent', ?, ?) ON CONFLICT (key) DO NOTHING",
                     (key, run_id, signature, tool, _json(arguments), step, now, now))

    def record_outcome(self, key: str, status: str, result: dict | None) -> None:
        self._change("UPDATE effects SET status=?, result=?, updated=? WHERE key=?",
                     (status, _json(result) if result is not None else None, time.time(), key))

    def effects(self, run_id: str) -> list[dict]:
        return [_effect(r) for r in self._d("SELECT * FROM effects WHERE run_id=? ORDER BY created", (run_id,))]

    # -- approvals ------------------------------------------------------------------------
    def create_approval(self, approval_id: str, run_id: str, tool: str, arguments: dict, digest: str, reason: str,
                        expires: float | None = None) -> None:
        self._change("INSERT INTO approvals (id, run_id, tool, arguments, digest, reason, status, created, expires) "
                     "VALUES (?,?,?,?,?,?, 'pending', ?, ?)",
                     (approval_id, run_id, tool, _json(arguments), digest, reason, time.time(), expires))

    def decide_approval(self, approval_id: str, status: str, decided_by: str, note: str = "",
                        new_arguments: dict | None = None) -> bool:
        if not decided_by:
            raise ValueError("an approval decision needs who decided")
        now = time.time()
        return self._change(
            "UPDATE approvals SET status=?, decided_by=?, note=?, new_arguments=?, decided=? "
            "WHERE id=? AND status='pending' AND (expires IS NULL OR expires > ?)",
            (status, decided_by, note, _json(new_arguments) if new_arguments is not None else None, now,
             approval_id, now)) == 1

    def expire_approvals(self, run_id: str | None = None) -> int:
        now = time.time()
        sql = "UPDATE approvals SET status='expired', decided_by='expiry', decided=? " \
              "WHERE status='pending' AND expires IS NOT NULL AND expires <= ?"
        return self._change(sql + (" AND run_id=?" if run_id else ""), (now, now, run_id) if run_id else (now, now))

    def consume_approval(self, approval_id: str) -> bool:
        return self._change("UPDATE approvals SET used=1, status=CASE WHEN status IN ('approved','modified') "
                            "THEN 'consumed' ELSE status END WHERE id=? AND used=0 AND status!='pending'",
                            (approval_id,)) == 1

    def approvals(self, run_id: str | None, status: str | None = None, limit: int | None = None) -> list[dict]:
        """A run's approvals (``run_id`` None: every run's, newest first), optionally of one status."""
        from .queries import approvals_sql
        sql, params = approvals_sql(run_id, status, limit)
        return [_approval(r) for r in self._d(sql, params)]

    def get_approval(self, approval_id: str) -> dict | None:
        rows = self._d("SELECT * FROM approvals WHERE id=?", (approval_id,))
        return _approval(rows[0]) if rows else None

    # -- leases ------------------------------------------------------------------------------
    def acquire_lease(self, run_id: str, holder: str, ttl: float = 120.0,
                      stale: Callable[[dict], bool] | None = None) -> None:
        now = time.time()
        with self._tx("lease:" + run_id) as db:
            cur = db.execute("SELECT * FROM leases WHERE run_id=%s FOR UPDATE", (run_id,))
            names = [c.name for c in cur.description]
            found = cur.fetchone()
            row = dict(zip(names, found)) if found else None
            if (row is not None and row["holder"] != holder and row["expires"] > now
                    and not (stale is not None and stale(row))):
                from ..errors import RunBusy

                raise RunBusy(run_id, row["pid"], row["host"], row["acquired"])
            db.execute("INSERT INTO leases (run_id, holder, pid, host, acquired, expires) VALUES (%s,%s,%s,%s,%s,%s) "
                       "ON CONFLICT (run_id) DO UPDATE SET holder=EXCLUDED.holder, pid=EXCLUDED.pid, "
                       "host=EXCLUDED.host, acquired=EXCLUDED.acquired, expires=EXCLUDED.expires",
                       (run_id, holder, os.getpid(), _host(), now, now + ttl))

    def renew_lease(self, run_id: str, holder: str, ttl: float = 120.0) -> bool:
        return self._change("UPDATE leases SET expires=? WHERE run_id=? AND holder=?",
                            (time.time() + ttl, run_id, holder)) == 1

    def release_lease(self, run_id: str, holder: str) -> None:
        self._change("DELETE FROM leases WHERE run_id=? AND holder=?", (run_id, holder))

    def lease(self, run_id: str) -> dict | None:
        rows = self._d("SELECT * FROM leases WHERE run_id=?", (run_id,))
        return rows[0] if rows else None

    # -- upkeep (tether store ...) ----------------------------------------------------------------
    def info(self) -> dict:
        (_, [(size,)]), (_, [(runs, oldest, newest)]), (_, [(evals,)]), (_, versions) = self._reads(
            ("SELECT " + " + ".join(f"pg_total_relation_size('{t}')" for t in TABLES), ()),
            ("SELECT COUNT(*), MIN(created), MAX(created) FROM runs", ()), ("SELECT COUNT(*) FROM evals", ()),
            (_VERSION, ()))
        return {"backend": self.backend, "where": self.where, "size": int(size), "runs": int(runs),
                "evals": int(evals), "oldest": oldest, "newest": newest, "schema": _newest(versions)}   # the store's

    def prune(self, older_than: float, keep_evals: tuple[str, ...] = (), *,
              progress: Callable[[int, int], None] | None = None) -> dict:
        """As :meth:`SQLiteStore.prune`, in one transaction: PostgreSQL's row locks let other processes
        go on writing their runs meanwhile (SQLite's single writer is why it deletes in batches)."""
        keep, params = keep_clause("postgresql", keep_evals)
        with self._tx("prune") as db:
            db.execute("CREATE TEMP TABLE pruned (run_id TEXT PRIMARY KEY) ON COMMIT DROP")
            db.execute(pg("INSERT INTO pruned SELECT run_id FROM runs WHERE created < ? AND status != 'running' "
                          f"AND NOT {keep}"), (older_than, *params))
            for table in RUN_TABLES:
                db.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM pruned)")
            runs = db.execute("DELETE FROM runs WHERE run_id IN (SELECT run_id FROM pruned)").rowcount
            evals = db.execute(pg(f"DELETE FROM evals WHERE created < ? AND status != 'running' AND NOT {keep} AND "
                                  "NOT EXISTS (SELECT 1 FROM runs WHERE runs.eval_id = evals.eval_id)"),
                               (older_than, *params)).rowcount
        self._chains.clear()
        if progress:
            progress(runs, runs)
        return {"runs": runs, "evals": evals}

    def vacuum(self) -> None:
        with self._lock, self._checked():
            self._schema_checked()
            for table in TABLES:
                self._db.execute(f"VACUUM (FULL, ANALYZE) {table}")

    def check(self) -> list[str]:
        """Every row of every table read (the large columns detoasted), and the schema."""
        problems = []
        # md5 reads every byte (LENGTH of a compressed value would not even decompress it)
        reads = {"events": "COUNT(md5(events))", "checkpoints": "COUNT(md5(state))", "runs": "COUNT(md5(meta))",
                 "evals": "COUNT(md5(COALESCE(results, '')))"}
        for table in TABLES:
            try:
                self._q(f"SELECT COUNT(*), {reads.get(table, '0')} FROM {table}")
            except self._errors.Error as exc:       # type: ignore[attr-defined]
                problems.append(f"table {table}: {' '.join(str(exc).split())[:200]}")
        return problems

    @contextmanager
    def snapshot(self) -> Iterator["PostgresStore"]:
        """Reads by :meth:`dump` inside see the store as it was at one moment (one REPEATABLE READ,
        read-only transaction on a connection of its own), whatever other processes write meanwhile:
        a copy's source, read table after table."""
        psycopg = _psycopg()
        with self._lock, self._checked():
            self._schema_checked()
        with self._checked():
            con = psycopg.connect(self.url, connect_timeout=10)
        try:
            con.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            con.read_only = True
            con.execute("SELECT 1 FROM tether_schema").fetchall()     # the moment is the first statement
            self._snap = con
            yield self
        finally:
            self._snap = None
            con.rollback()
            con.close()

    def dump(self, table: str, batch: int = 1000) -> Iterator[list[tuple]]:
        psycopg = _psycopg()
        with self._lock, self._checked():
            self._schema_checked()               # (a read-only store that is not there is refused here)
        sql = f"SELECT {', '.join(TABLES[table])} FROM {table} ORDER BY {KEYS[table]}"

        def rows_of(con: Any) -> Iterator[list[tuple]]:
            with con.cursor(name=f"tether_dump_{table}_{os.urandom(4).hex()}") as cur:   # server-side, batched
                cur.execute(sql)
                while rows := cur.fetchmany(batch):
                    yield [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows]

        if self._snap is not None:               # inside snapshot(): its transaction, its moment
            yield from rows_of(self._snap)
            return
        con = psycopg.connect(self.url)          # a connection of its own: a server-side cursor needs a transaction
        try:
            with con.transaction():
                yield from rows_of(con)
        finally:
            con.close()

    def load(self, table: str, rows: list[tuple]) -> None:
        with self._lock, self._checked():
            self._schema_checked()
        with self._lock, self._checked(), self._db.transaction():
            with self._db.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(TABLES[table])}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)


_SELECT_RUNS = runs_select("postgresql")
_VERSION = "SELECT version FROM tether_schema"     # one row (no aggregate: a new connection plans it for less)


def _newest(rows: list[tuple]) -> int | None:
    return max((int(v) for (v,) in rows), default=None)
_INSERT_CHUNK = ("INSERT INTO events (run_id, seq, last, events) SELECT %s, %s, %s, %s WHERE "
                 "COALESCE((SELECT last FROM events WHERE run_id=%s ORDER BY seq DESC LIMIT 1), -1) < %s")
_INSERT_CHECKPOINT = ("INSERT INTO checkpoints (run_id, n, step, phase, event_count, state, created, base) "
                      "VALUES (%s,%s,%s,%s,%s,%s,%s,%s)")
