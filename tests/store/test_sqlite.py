"""The embedded store: schema versions and migrations, delta checkpoints that
read back whole, run listing with filters, append-only events."""

from __future__ import annotations

import copy
import sqlite3
import time

import pytest

from tether.errors import RunFailure, UsageError
from tether.store import SQLiteStore
from tether.store import _delta
from tether.store.sqlite import SCHEMA_VERSION


def msg(i: int, role: str = "user") -> dict:
    return {"role": role, "content": f"消息 {i} " * 20}


def test_a_version_1_store_is_migrated_in_place(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE runs (run_id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL, status TEXT NOT NULL,
            model TEXT NOT NULL DEFAULT '', case_id TEXT, reply TEXT NOT NULL DEFAULT '',
            reason TEXT NOT NULL DEFAULT '', meta TEXT NOT NULL DEFAULT '{}');
        CREATE TABLE checkpoints (run_id TEXT NOT NULL, n INTEGER NOT NULL, step INTEGER NOT NULL,
            phase TEXT NOT NULL, event_count INTEGER NOT NULL, state BLOB NOT NULL, created REAL NOT NULL,
            PRIMARY KEY (run_id, n));
        INSERT INTO runs VALUES ('old-1', 1.0, 2.0, 'completed', 'm', 'C4-LD-01', 'done', 'final answer', '{}');
        INSERT INTO checkpoints VALUES ('old-1', 0, 1, 'before_model', 3, '{"messages": [], "step": 1}', 1.5);
    """)
    db.commit()
    db.close()
    store = SQLiteStore(path)
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    run = store.get_run("old-1")
    assert run["kind"] == "run" and run["eval_id"] is None and run["guards"] == "off" and run["digest"] is None
    assert store.latest_checkpoint("old-1")["state"] == {"messages": [], "step": 1}     # a whole state, as before
    assert store.list_runs() and store.list_evals() == []                               # the new tables exist
    store.save_checkpoint("old-1", 2, "before_model", 4, {"messages": [msg(1)], "step": 2})
    assert store.latest_checkpoint("old-1")["n"] == 1


def test_a_newer_store_is_refused(tmp_path):
    path = tmp_path / "new.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(UsageError, match="newer than this tether"):
        SQLiteStore(path)


def growing_states(steps: int):
    """A run's states: messages appended, the last request per role (with a hint that
    comes and goes), a role that appears later, counters, a list that shrinks."""
    messages: list[dict] = [msg(0, "system")]
    for step in range(1, steps + 1):
        messages = messages + [msg(step, "assistant"), msg(step, "tool")]
        sent = {"agent": messages + ([msg(-step, "system")] if step % 3 == 0 else [])}
        if step > 10:
            sent["user"] = [msg(1000 + k) for k in range(step - 10)]
        yield {"messages": messages, "step": step, "usage": {"input_tokens": step * 100},
               "pending_calls": [{"id": f"c{step}"}] if step % 2 else [], "sent": sent,
               "guards": [{"calls": list(range(step % 7))}], "user": None}


def test_checkpoints_read_back_whole_as_deltas_or_not(tmp_path):
    store = SQLiteStore(tmp_path / "t.db")
    store.create_run("r1")
    kinds = []
    for step, state in enumerate(growing_states(120), start=1):
        expected = copy.deepcopy(state)
        n = store.save_checkpoint("r1", step, "before_model", step * 3, state)
        state["messages"].append(msg(-1))          # the caller changing its own list afterwards changes nothing
        got = store.latest_checkpoint("r1")
        assert got["n"] == n == step - 1 and got["state"] == expected, step
        kinds.append(store._db.execute("SELECT base FROM checkpoints WHERE run_id='r1' AND n=?", (n,)).fetchone()[0])
    deltas = [k for k in kinds if k is not None]
    assert len(deltas) > 80                        # most checkpoints are deltas ...
    assert all(kinds[b] is None for b in deltas)   # ... each against a whole checkpoint
    whole = SQLiteStore(tmp_path / "t.db")         # another process: reads the same, numbers on, starts whole
    assert whole.latest_checkpoint("r1")["state"] == expected
    state = next(growing_states(1))
    assert whole.save_checkpoint("r1", 999, "calls_pending", 1, state) == 120
    assert whole.latest_checkpoint("r1")["state"] == state and store.checkpoint_count("r1") == 121


def test_delta_encoding_round_trips_odd_shapes():
    base = {"a": [1, 2, 3], "d": {"x": [1], "y": [2, 3]}, "z": "keep"}
    lists = _delta.lists_of(base)
    for state in ({"a": [1, 2, 3, 4], "d": {"x": [1, 5], "y": []}, "z": "keep"},
                  {"a": [9], "d": {"x": [1], "w": [7]}, "new": [1]},
                  {"a": [], "d": {}, "z": None}):
        delta = _delta.encode(state, lists)
        assert delta is not None and _delta.decode(delta, base) == state
    assert _delta.encode({"a": list(range(200))}, {("a",): []}) is None      # too much added: write whole


def test_checkpoints_and_events_in_one_transaction_and_events_are_append_only(tmp_path):
    store = SQLiteStore(tmp_path / "t.db")
    store.create_run("r1")
    store.append_events("r1", [(0, {"type": "run_started"}), (1, {"type": "user_message", "content": "你好"})])
    store.save_checkpoint("r1", 1, "before_model", 3, {"messages": []}, events=[(2, {"type": "model_request"})])
    assert [e["type"] for e in store.events("r1")] == ["run_started", "user_message", "model_request"]
    with pytest.raises(RunFailure, match="append-only"):
        store.save_checkpoint("r1", 2, "before_model", 4, {"messages": []}, events=[(2, {"type": "again"})])
    assert store.checkpoint_count("r1") == 1 and len(store.events("r1")) == 3      # the failed one left nothing
    with pytest.raises(RunFailure, match="append-only"):
        store.append_events("r1", [(1, {"type": "again"})])
    assert store.save_checkpoint("r1", 2, "before_model", 4, {"messages": []}) == 1


def test_list_count_and_filter_runs(tmp_path):
    store = SQLiteStore(tmp_path / "t.db")
    for i, (kind, eval_id, model, case) in enumerate([("eval", "e-1", "policy:steady", "C4-LD-01"),
                                                      ("eval", "e-1", "policy:stubborn", "C4-PA-01"),
                                                      ("eval", "e-2", "policy:steady", "C4-LD-02"),
                                                      ("run", None, "openai:gpt", "C4-LD-01")]):
        store.create_run(f"r{i}", model=model, case_id=case, kind=kind, eval_id=eval_id, trial=i)
    assert [r["run_id"] for r in store.list_runs()] == ["r3", "r2", "r1", "r0"]
    assert store.count_runs() == 4 and store.count_runs(eval_id="e-*") == 3 and store.count_runs(kind="run") == 1
    assert {r["run_id"] for r in store.list_runs(model="policy:*", case_id="C4-LD-*")} == {"r0", "r2"}
    assert store.list_runs(1, eval_id="e-1")[0]["run_id"] == "r1"
    store.finish_run("r0", "completed", "ok", "final answer")
    assert store.count_runs(status="completed") == 1 and store.count_runs(status="running") == 3
    before = store.get_run("r2")["updated"]
    time.sleep(0.01)
    store.save_checkpoint("r2", 1, "before_model", 0, {})
    assert store.get_run("r2")["updated"] > before                  # a checkpoint is activity
    store.create_approval("ap-1", "r2", "pay", {}, "d", "why")
    runs, total = store.run_page(2, upto=2, eval_id=None)
    assert total == 3 and [(r["run_id"], r["checkpoints"], r["approvals_waiting"]) for r in runs] == \
        [("r3", 0, 0), ("r2", 1, 1)]


def test_events_are_chunks_that_truncate_and_migrate(tmp_path):
    store = SQLiteStore(tmp_path / "t.db")
    store.create_run("r1")
    store.append_events("r1", [(i, {"type": "x", "i": i, "text": "第\n行"}) for i in range(5)])
    store.append_events("r1", [(5, {"type": "y"}), (6, {"type": "z"})])
    assert [e.get("i", e["type"]) for e in store.events("r1")] == [0, 1, 2, 3, 4, "y", "z"]
    assert store.events("r1")[0]["text"] == "第\n行"
    with pytest.raises(RunFailure, match="not consecutive"):
        store.append_events("r1", [(7, {}), (9, {})])
    store.truncate_events("r1", 3)                      # inside the first chunk
    assert [e["i"] for e in store.events("r1")] == [0, 1, 2]
    store.append_events("r1", [(3, {"type": "again"})])
    assert [e["type"] for e in store.events("r1")] == ["x", "x", "x", "again"]


def test_a_version_2_store_keeps_its_events_and_checkpoints(tmp_path):
    path = tmp_path / "v2.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE runs (run_id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL, status TEXT NOT NULL,
            model TEXT NOT NULL DEFAULT '', case_id TEXT, reply TEXT NOT NULL DEFAULT '',
            reason TEXT NOT NULL DEFAULT '', meta TEXT NOT NULL DEFAULT '{}', kind TEXT NOT NULL DEFAULT 'run',
            eval_id TEXT, trial INTEGER NOT NULL DEFAULT 0, guards TEXT NOT NULL DEFAULT 'off', digest TEXT,
            error_kind TEXT);
        CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, event BLOB NOT NULL, PRIMARY KEY (run_id, seq));
        CREATE TABLE checkpoints (run_id TEXT NOT NULL, n INTEGER NOT NULL, step INTEGER NOT NULL,
            phase TEXT NOT NULL, event_count INTEGER NOT NULL, state BLOB NOT NULL, created REAL NOT NULL,
            PRIMARY KEY (run_id, n));
        INSERT INTO runs (run_id, created, updated, status) VALUES ('r', 1, 1, 'running');
        INSERT INTO events VALUES ('r', 0, CAST('{"type": "run_started", "ü": "你好"}' AS BLOB));
        INSERT INTO events VALUES ('r', 1, CAST('{"type": "user_message"}' AS BLOB));
        INSERT INTO checkpoints VALUES ('r', 0, 0, 'before_model', 2, '{"messages": []}', 1.0);
        PRAGMA user_version=2;
    """)
    db.close()
    store = SQLiteStore(path)
    assert store.events("r") == [{"type": "run_started", "ü": "你好"}, {"type": "user_message"}]
    assert store.latest_checkpoint("r")["state"] == {"messages": []}
    store.append_events("r", [(2, {"type": "model_request"})])
    with pytest.raises(RunFailure):
        store.append_events("r", [(1, {"type": "again"})])
    assert len(store.events("r")) == 3
