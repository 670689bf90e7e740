"""The gateway's store thread against a store another connection holds locked: writes are tried
again until the lock frees (and land, in order), and a store that stays locked is waited out
once, not once per queued write."""

from __future__ import annotations

import sqlite3
import threading

from tether.gateway._writer import StoreWriter
from tether.store import SQLiteStore


def locked_store(tmp_path, busy_ms: int) -> tuple[SQLiteStore, sqlite3.Connection]:
    store = SQLiteStore(tmp_path / "runs.db")
    store._db.execute(f"PRAGMA busy_timeout={busy_ms}")      # SQLite's own wait, shorter than the default 10 s
    store.create_run("r")
    other = sqlite3.connect(tmp_path / "runs.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")
    return store, other


def event(seq: int) -> tuple[int, dict]:
    return seq, {"type": "note", "seq": seq, "text": f"n{seq}"}


def test_writes_queued_behind_a_lock_land_in_order_once_it_frees(tmp_path):
    store, other = locked_store(tmp_path, 100)
    writer = StoreWriter(store, retry_locked_s=60)
    for seq in range(6):
        writer.put(store.append_events, "r", [event(seq)])
    released = threading.Event()

    def release() -> None:          # once the writer has met the lock at least twice
        other.execute("COMMIT")
        released.set()

    waiting = threading.Thread(target=lambda: (_wait_for(lambda: writer.retried >= 2), release()))
    waiting.start()
    writer.close(timeout=None)
    waiting.join()
    assert released.is_set() and writer.failures == 0 and writer.retried >= 2
    assert [e["text"] for e in store.events("r")] == [f"n{s}" for s in range(6)]


def test_a_store_that_stays_locked_is_given_up_once_and_reported(tmp_path, capsys):
    store, other = locked_store(tmp_path, 50)
    writer = StoreWriter(store, retry_locked_s=0.5)
    for seq in range(4):
        writer.put(store.append_events, "r", [event(seq)])
        writer.put(store.mark_running, "r")
    writer.close(timeout=None)
    other.execute("COMMIT")
    # the first write waited out the 0.5 s; each one after it was tried once (not 0.5 s more each)
    assert writer.failures == 8
    assert writer.retried <= 8       # the pauses (0.05 s, doubling) pass 0.5 s after 4 tries: per write it would be ~30
    err = capsys.readouterr().err
    assert err.count("writing the record failed") == 2          # once per kind of failure
    assert "database is locked" in err


def _wait_for(condition, limit: int = 100_000) -> None:
    import time

    for _ in range(limit):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("the writer never met the lock")
