"""Opening a store: what is refused (naming the file and what to do), read-only
stores for the read commands, a damaged row left out of a listing."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import subprocess
import time

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.store import SQLiteStore
from tether.store.opening import StoreError



def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def store_with_runs(tmp_path):
    db = tmp_path / "runs.db"
    for rid in ("r1", "r2"):
        res = _invoke("run", "C4-LD-01", "--run-id", rid, "--store", str(db))
        assert res.exit_code == 0, res.output
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return db


def test_a_store_truncated_to_half_is_refused_naming_the_file(store_with_runs, tmp_path):
    half = tmp_path / "half.db"
    data = store_with_runs.read_bytes()
    half.write_bytes(data[: len(data) // 2])
    res = _invoke("runs", "list", "--store", str(half))
    assert res.exit_code == 2
    assert str(half) in res.output and "mv " in res.output and ".recover" in res.output
    assert "Traceback" not in res.output


@contextlib.contextmanager
def read_only(folder):
    """``folder`` read-only: by its mode, or (root ignores modes) immutable (chattr +i)."""
    if os.geteuid() != 0:
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
        try:
            yield
        finally:
            folder.chmod(stat.S_IRWXU)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("running as root without chattr +i: a read-only folder cannot be made")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_store_in_a_read_only_folder_lists_and_shows(store_with_runs, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "runs.db"
    shutil.copy2(store_with_runs, db)
    db.chmod(stat.S_IRUSR)
    with read_only(folder):
        listed = _invoke("runs", "list", "--store", str(db))
        assert listed.exit_code == 0, listed.output
        assert "r1" in listed.output and "r2" in listed.output
        shown = _invoke("runs", "show", "r1", "--store", str(db))
        assert shown.exit_code == 0, shown.output
        wrote = _invoke("run", "C4-LD-01", "--store", str(db))
        assert wrote.exit_code == 2 and "read-only" in wrote.output and str(db) in wrote.output
        assert sorted(p.name for p in folder.iterdir()) == ["runs.db"]      # no WAL files written


def test_a_read_only_store_file_opens_read_only_for_reading(store_with_runs):
    """Root ignores folder permissions, so the file's own mode is what this test can count on."""
    store_with_runs.chmod(stat.S_IRUSR)
    try:
        store = SQLiteStore(store_with_runs, read_only=True)
        if os.access(store_with_runs, os.W_OK):      # root: writable whatever the mode
            pytest.skip("running as root: the file stays writable")
        assert store.read_only and {r["run_id"] for r in store.list_runs()} == {"r1", "r2"}
        with pytest.raises(StoreError, match="read-only"):
            SQLiteStore(store_with_runs)
    finally:
        store_with_runs.chmod(stat.S_IRUSR | stat.S_IWUSR)


@pytest.mark.parametrize("kind", ["directory", "devnull", "text", "future"])
def test_what_is_not_a_store_is_refused_naming_it(kind, tmp_path, store_with_runs):
    if kind == "directory":
        path = tmp_path / "a-dir"
        path.mkdir()
    elif kind == "devnull":
        path = "/dev/null"
    elif kind == "text":
        path = tmp_path / "notes.db"
        path.write_text("not a database\n", encoding="utf-8")
    else:
        path = tmp_path / "future.db"
        shutil.copy2(store_with_runs, path)
        con = sqlite3.connect(path)
        con.execute("PRAGMA user_version = 99")
        con.close()
    with pytest.raises(StoreError, match=str(path)):
        SQLiteStore(path)
    res = _invoke("runs", "list", "--store", str(path))
    assert res.exit_code == 2 and str(path) in res.output and "Traceback" not in res.output


def test_one_damaged_row_is_reported_and_left_out_of_the_listing(store_with_runs):
    con = sqlite3.connect(store_with_runs)
    con.execute("UPDATE runs SET meta = 'not json {' WHERE run_id = 'r1'")
    con.commit()
    con.close()
    res = _invoke("runs", "list", "--store", str(store_with_runs))
    assert res.exit_code == 0, res.output
    assert "r2" in res.output
    assert "run 'r1': its meta column is not JSON; left out" in res.output
    shown = _invoke("runs", "show", "r1", "--store", str(store_with_runs))
    assert shown.exit_code == 2 and "r1" in shown.output and "damaged" in shown.output


@pytest.mark.parametrize("command", [("runs", "list"), ("runs", "show", "r1"), ("runs", "evals"), ("stats",),
                                     ("store", "info"), ("store", "check")])
def test_a_read_leaves_an_empty_file_alone(command, tmp_path):
    """A command that only reads does not turn an empty file into a store: one line naming it, exit 2,
    the file still empty; a command that records a run makes the store there."""
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    os.utime(empty, (time.time() - 60, time.time() - 60))   # not one a writer is making now (it waits for those)
    res = _invoke(*command, "--store", str(empty))
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert f"store {empty} is an empty file, not a tether store" in " ".join(res.output.split())
    assert len(res.output.strip().splitlines()) <= 3           # one message (wrapped at most)
    assert empty.read_bytes() == b"" and not (tmp_path / "empty.db-wal").exists()
    assert _invoke("run", "C4-LD-01", "--run-id", "w1", "--store", str(empty)).exit_code == 0
    assert [r["run_id"] for r in SQLiteStore(empty, read_only=True).list_runs()] == ["w1"]


@pytest.mark.parametrize("command", [("store", "info"), ("store", "check")])
def test_inspecting_a_missing_store_makes_none(command, tmp_path):
    """`tether store info|check PATH` on a path with no store: one line, exit 2, and nothing is made there."""
    missing = tmp_path / "elsewhere" / "none.db"
    missing.parent.mkdir()
    res = _invoke(*command, str(missing))
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert f"no store at {missing}" in " ".join(res.output.split())
    assert list(missing.parent.iterdir()) == []


def test_a_listing_of_a_missing_default_store_makes_none(tmp_path, monkeypatch):
    """`tether runs list` (and the other listings, `tether stats` and `tether view`) where no store was made
    yet: they say so and exit 0 (stats: the metrics of no runs); a read that needs a run exits 2; none of
    them makes .tether/ or a store."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TETHER_STORE", raising=False)
    said = "no store at .tether/tether.db yet"
    for command in (("runs", "list"), ("runs", "list", "--format", "table"), ("runs", "evals"),
                    ("runs", "approvals"), ("stats",), ("view", "--port", "0")):
        res = _invoke(*command)
        assert res.exit_code == 0 and said in " ".join(res.output.split()), (command, res.output)
    doc = _invoke("runs", "list", "--format", "json")
    assert doc.exit_code == 0 and '"rows": []' in doc.stdout and '"total": 0' in doc.stdout
    none = _invoke("stats", "--json")
    assert none.exit_code == 0 and '"runs": 0' in none.stdout and '"completion_rate": null' in none.stdout
    for command in (("runs", "show", "r1"), ("runs", "export", "r1")):
        res = _invoke(*command)
        assert res.exit_code == 2 and said in " ".join(res.output.split()) and "Traceback" not in res.output
    monkeypatch.setenv("TETHER_STORE", str(tmp_path / "sub" / "t.db"))
    assert "no store at" in _invoke("runs", "list").output
    assert list(tmp_path.iterdir()) == []
    assert _invoke("run", "C4-LD-01", "--run-id", "w1").exit_code == 0      # a command that records makes it
    assert "w1" in _invoke("runs", "list").output


def _open_and_write(path: str) -> str:
    import uuid

    try:
        SQLiteStore(path).create_run(uuid.uuid4().hex)
        return "ok"
    except Exception as exc:                      # the test reports what each process saw
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("reopen", [False, True], ids=["new store", "store in use"])
def test_processes_opening_one_store_at_once_all_get_in(tmp_path, reopen):
    """Eight processes open one store at the same moment, forty times over: none is told the store
    is busy (a new store's switch to WAL takes a lock SQLite does not wait for) or damaged (another
    process's checkpoint writes the header's new page count before the pages it counts)."""
    import multiprocessing
    from collections import Counter

    seen: Counter = Counter()
    with multiprocessing.get_context("fork").Pool(8) as pool:
        for trial in range(40):
            db = str(tmp_path / f"s{trial if not reopen else 0}.db")
            seen.update(pool.map(_open_and_write, [db] * 8))
    assert seen == Counter({"ok": 320}), seen


def test_opening_a_store_again_in_one_process_keeps_the_first_ones_locks(tmp_path, still_holds):
    """A process (a gateway, a test session, a user's own loop) opens a store it already holds
    open: it must not read the file with a descriptor of its own, since closing that descriptor
    drops every lock the process holds on the file. Without the shared lock, another process
    takes the store for unused and switches it out of WAL under the first connection."""
    db = tmp_path / "s.db"
    first = SQLiteStore(db)
    first.create_run("r1")
    second = SQLiteStore(db)
    try:
        still_holds(db)
        first.create_run("r2")
        assert {r["run_id"] for r in second._rows("SELECT run_id FROM runs")} == {"r1", "r2"}
    finally:
        second.close()
        first.close()
