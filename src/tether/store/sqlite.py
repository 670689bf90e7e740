"""The embedded store: one SQLite file (WAL) holding runs, their events,
checkpoints, the side-effect ledger and approvals.

Every write is one short transaction, so a process killed at any instant
(SIGKILL included) leaves the file consistent: a checkpoint, an event, an
effect's intent or outcome is either fully there or not at all.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import orjson

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
    meta TEXT NOT NULL DEFAULT '{}'  -- JSON: how to rebuild the run (model spec, case, guards, ...)
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event BLOB NOT NULL,             -- UTF-8 JSON
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL,
    n INTEGER NOT NULL,              -- checkpoint number within the run
    step INTEGER NOT NULL,
    phase TEXT NOT NULL,
    event_count INTEGER NOT NULL,    -- events persisted when it was taken
    state BLOB NOT NULL,             -- UTF-8 JSON
    created REAL NOT NULL,
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
    decided REAL
);
"""


def default_store_path() -> Path:
    return Path(os.environ.get("TETHER_STORE", ".tether/tether.db"))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _state_json(value: Any) -> bytes:
    """Checkpoint state and events, written every step: UTF-8 JSON bytes (orjson
    keeps non-ASCII as is), compact, stored as a BLOB to skip a decode and
    re-encode; still readable: ``SELECT CAST(state AS TEXT) FROM checkpoints``."""
    return orjson.dumps(value, default=str)


class SQLiteStore:
    """Thread-safe enough for one process running many runs (one connection, a lock)."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_store_path()
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _tx(self, sql: str, params: tuple = ()) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(sql, params)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _rows(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._db.execute(sql, params))

    # -- runs --------------------------------------------------------------------
    def create_run(self, run_id: str, *, model: str = "", case_id: str | None = None, meta: dict | None = None) -> None:
        now = time.time()
        self._tx("INSERT INTO runs (run_id, created, updated, status, model, case_id, meta) VALUES (?,?,?,?,?,?,?)",
                 (run_id, now, now, "running", model, case_id, _json(meta or {})))

    def finish_run(self, run_id: str, status: str, reply: str, reason: str) -> None:
        self._tx("UPDATE runs SET status=?, reply=?, reason=?, updated=? WHERE run_id=?",
                 (status, reply, reason, time.time(), run_id))

    def mark_running(self, run_id: str) -> None:
        self._tx("UPDATE runs SET status='running', updated=? WHERE run_id=?", (time.time(), run_id))

    def get_run(self, run_id: str) -> dict | None:
        rows = self._rows("SELECT * FROM runs WHERE run_id=?", (run_id,))
        return _run(rows[0]) if rows else None

    def list_runs(self, limit: int = 50) -> list[dict]:
        return [_run(r) for r in self._rows("SELECT * FROM runs ORDER BY created DESC LIMIT ?", (limit,))]

    # -- events ------------------------------------------------------------------
    def append_event(self, run_id: str, seq: int, event: dict) -> None:
        self._tx("INSERT OR REPLACE INTO events (run_id, seq, event) VALUES (?,?,?)", (run_id, seq, _state_json(event)))

    def events(self, run_id: str) -> list[dict]:
        return [orjson.loads(r["event"]) for r in self._rows("SELECT event FROM events WHERE run_id=? ORDER BY seq", (run_id,))]

    def truncate_events(self, run_id: str, count: int) -> None:
        self._tx("DELETE FROM events WHERE run_id=? AND seq>=?", (run_id, count))

    # -- checkpoints -------------------------------------------------------------
    def save_checkpoint(self, run_id: str, step: int, phase: str, event_count: int, state: dict) -> int:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                n = self._db.execute("SELECT COALESCE(MAX(n), -1) + 1 FROM checkpoints WHERE run_id=?",
                                     (run_id,)).fetchone()[0]
                self._db.execute("INSERT INTO checkpoints (run_id, n, step, phase, event_count, state, created) "
                                 "VALUES (?,?,?,?,?,?,?)", (run_id, n, step, phase, event_count, _state_json(state), time.time()))
                self._db.execute("UPDATE runs SET updated=? WHERE run_id=?", (time.time(), run_id))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return n

    def latest_checkpoint(self, run_id: str) -> dict | None:
        rows = self._rows("SELECT * FROM checkpoints WHERE run_id=? ORDER BY n DESC LIMIT 1", (run_id,))
        if not rows:
            return None
        r = rows[0]
        return {"n": r["n"], "step": r["step"], "phase": r["phase"], "event_count": r["event_count"],
                "state": orjson.loads(r["state"])}

    def checkpoint_count(self, run_id: str) -> int:
        return self._rows("SELECT COUNT(*) AS c FROM checkpoints WHERE run_id=?", (run_id,))[0]["c"]

    # -- side-effect ledger --------------------------------------------------------
    def effect_by_signature(self, run_id: str, signature: str) -> dict | None:
        rows = self._rows("SELECT * FROM effects WHERE run_id=? AND signature=? ORDER BY created DESC LIMIT 1",
                          (run_id, signature))
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
    def create_approval(self, approval_id: str, run_id: str, tool: str, arguments: dict, digest: str, reason: str) -> None:
        self._tx("INSERT INTO approvals (id, run_id, tool, arguments, digest, reason, status, created) "
                 "VALUES (?,?,?,?,?,?, 'pending', ?)", (approval_id, run_id, tool, _json(arguments), digest, reason, time.time()))

    def decide_approval(self, approval_id: str, status: str, decided_by: str, note: str = "",
                        new_arguments: dict | None = None) -> None:
        self._tx("UPDATE approvals SET status=?, decided_by=?, note=?, new_arguments=?, decided=? WHERE id=? AND status='pending'",
                 (status, decided_by, note, _json(new_arguments) if new_arguments is not None else None, time.time(), approval_id))

    def consume_approval(self, approval_id: str) -> bool:
        """Mark a decided approval used; False when it was already consumed (it is good once)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                cur = self._db.execute("UPDATE approvals SET status='consumed' WHERE id=? AND status IN ('approved','modified')",
                                       (approval_id,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return cur.rowcount == 1

    def approvals(self, run_id: str, status: str | None = None) -> list[dict]:
        sql = "SELECT * FROM approvals WHERE run_id=?" + (" AND status=?" if status else "") + " ORDER BY created"
        return [_approval(r) for r in self._rows(sql, (run_id, status) if status else (run_id,))]

    def get_approval(self, approval_id: str) -> dict | None:
        rows = self._rows("SELECT * FROM approvals WHERE id=?", (approval_id,))
        return _approval(rows[0]) if rows else None


def _run(r: sqlite3.Row) -> dict:
    d = dict(r)
    d["meta"] = json.loads(d["meta"])
    return d


def _effect(r: sqlite3.Row) -> dict:
    d = dict(r)
    d["arguments"] = json.loads(d["arguments"])
    d["result"] = json.loads(d["result"]) if d["result"] else None
    return d


def _approval(r: sqlite3.Row) -> dict:
    d = dict(r)
    d["arguments"] = json.loads(d["arguments"])
    d["new_arguments"] = json.loads(d["new_arguments"]) if d["new_arguments"] else None
    return d


