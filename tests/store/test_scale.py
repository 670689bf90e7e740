"""A store that holds a year of runs, on both backends: per-run metrics kept in
the run's row (stats as aggregate queries, equal to reading every run's
events), keyset pages, info, prune, vacuum, check, copy between backends with
every digest kept; SQLite: migration fills the metrics, damage is found."""

from __future__ import annotations

import os
import sqlite3
import time

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.report import metrics
from tether.store import open_store

RUNS = [("C4-LD-01", "policy:stubborn", "on", "ld-on"), ("C4-LD-01", "policy:stubborn", "off", "ld-off"),
        ("C4-PA-02", "policy:steady", "on", "pa-1"), ("C4-PA-02", "policy:quitter", "on", "pa-2"),
        ("C4-PA-02", "policy:steady", "off", "pa-3")]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def fill(url: str) -> None:
    for case, model, guards, rid in RUNS:
        res = invoke("run", case, "--model", model, "--guards", guards, "--max-steps", "8", "--run-id", rid,
                     "--store", url)
        assert res.exit_code in (0, 1, 3) and "Traceback" not in res.output, res.output


@pytest.fixture(scope="module")
def sqlite_template(tmp_path_factory) -> str:
    """The five runs, filled once: each SQLite test gets its own copy (a backup, WAL included)."""
    path = str(tmp_path_factory.mktemp("filled") / "template.db")
    fill(path)
    return path


def copy_of(template: str, path: str) -> str:
    src, dst = sqlite3.connect(template), sqlite3.connect(path)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    return path


@pytest.fixture
def filled(store_url, backend, sqlite_template):
    if backend == "sqlite":
        return copy_of(sqlite_template, store_url)
    fill(store_url)
    return store_url


def test_stats_from_the_rows_equal_stats_from_every_event(filled):
    db = open_store(filled)
    runs = db.list_runs(100)
    assert len(runs) == len(RUNS) and all(r["steps"] is not None for r in runs)
    from_events = metrics.compute(db, runs)
    from_rows = metrics.compute(db)
    assert from_rows == from_events
    assert from_rows["loop_trigger_rate"] > 0 and from_rows["steps_p95"] >= from_rows["steps_mean"]
    assert metrics.compute(db, model="policy:st*") == metrics.compute(
        db, [r for r in runs if r["model"].startswith("policy:st")])
    out = invoke("stats", "--json", "--store", filled).output
    assert '"runs": 5' in out


def test_runs_list_pages_with_a_keyset_cursor(filled):
    db = open_store(filled)
    seen, cursor = [], None
    while True:
        page = db.list_runs(2, before=cursor)
        if not page:
            break
        seen += [r["run_id"] for r in page]
        cursor = db.run_cursor(page[-1]["run_id"])
    assert seen == [r["run_id"] for r in db.list_runs(100)] and len(set(seen)) == len(RUNS)
    first = invoke("runs", "list", "--limit", "2", "--store", filled).output
    last_line = first.strip().splitlines()[-1]
    assert "2 of 5 run(s)" in last_line and "--before " in last_line
    after = last_line.split("--before ")[1].split()[0]
    second = invoke("runs", "list", "--limit", "2", "--before", after, "--store", filled).output
    assert seen[2] in second and seen[0] not in second and seen[1] not in second


def test_the_viewer_index_is_one_page_with_metrics_over_every_match(filled):
    from tether.report.html.server import Viewer

    viewer = Viewer(open_store(filled, read_only=True))
    viewer.PAGE = 2
    html = viewer.index({})
    assert html.count('name="run" value=') == 2 and "older runs" in html and "2 of 5 run(s)" in html
    filtered = viewer.index({"q": "pa-"})
    assert filtered.count('name="run" value=') == 2 and "2 of 3 run(s)" in filtered


def test_info_prune_and_vacuum(filled):
    db = open_store(filled)
    db.create_eval("e-keep", "c4", {})
    db.create_run("kept-trial", model="m", kind="eval", eval_id="e-keep")
    db.finish_run("kept-trial", "completed", "", "")
    info = db.info()
    assert info["runs"] == len(RUNS) + 1 and info["evals"] == 1 and info["oldest"] <= info["newest"]
    out = invoke("store", "info", "--store", filled).output
    assert f"\nruns\t{len(RUNS) + 1}\n" in out and "\nevals\t1\n" in out
    out = invoke("store", "prune", "--older-than", "0d", "--keep-evals", "e-k*", "--store", filled).output
    assert f"pruned {len(RUNS)} run(s) and 0 eval(s)" in out, out
    assert [r["run_id"] for r in db.list_runs(10)] == ["kept-trial"]
    assert db.events("pa-1") == [] and db.checkpoint_count("pa-1") == 0
    res = invoke("store", "vacuum", "--store", filled)
    assert res.exit_code == 0 and "vacuumed" in res.output
    assert invoke("store", "check", "--store", filled).exit_code == 0


def test_copy_both_ways_keeps_every_digest(filled, new_store_url, backend):
    other = "postgresql" if backend == "sqlite" else "sqlite"
    there, back = new_store_url(other), new_store_url(backend)
    res = invoke("store", "copy", filled, there)
    assert res.exit_code == 0 and f"{len(RUNS)} digest(s) recomputed, all equal" in res.output, res.output
    res = invoke("store", "copy", there, back)
    assert res.exit_code == 0, res.output
    a, b = open_store(filled), open_store(back)
    for run in a.list_runs(100):
        got = b.get_run(run["run_id"])
        assert got["digest"] == run["digest"] and got["steps"] == run["steps"]
        assert b.events(run["run_id"]) == a.events(run["run_id"])
        assert b.latest_checkpoint(run["run_id"]) == a.latest_checkpoint(run["run_id"])
    again = invoke("store", "copy", filled, back)
    assert again.exit_code == 2 and "already holds" in again.output


# -- SQLite: migration, damage --------------------------------------------------------------
@pytest.fixture
def sqlite_filled(tmp_path, sqlite_template):
    path = copy_of(sqlite_template, str(tmp_path / "runs.db"))
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return path


def test_an_older_store_gets_its_metrics_on_migration(sqlite_filled):
    want = metrics.compute(open_store(sqlite_filled))
    con = sqlite3.connect(sqlite_filled)
    con.execute("UPDATE runs SET steps=NULL, tool_calls=NULL, tokens=NULL, cost=NULL, trips=NULL, looped=NULL, "
                "invented=NULL, hitl=NULL")
    con.execute("PRAGMA user_version=4")
    con.commit()
    con.close()
    db = open_store(sqlite_filled)
    assert all(r["steps"] is not None for r in db.list_runs(100))
    assert metrics.compute(db) == want


def test_a_bad_header_is_found_at_open(sqlite_filled):
    with open(sqlite_filled, "r+b") as fh:
        fh.seek(16)
        fh.write(b"\x00\x03")                    # page size 3: no SQLite file has that
    res = invoke("runs", "list", "--store", sqlite_filled)
    assert res.exit_code == 2 and "damaged" in res.output and "page size" in res.output and ".recover" in res.output


def test_a_damaged_page_is_found_by_store_check(sqlite_filled):
    con = sqlite3.connect(sqlite_filled)
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name='runs_by_created'").fetchone()[0]
    con.close()
    with open(sqlite_filled, "r+b") as fh:                  # scribble over an index page
        fh.seek((root - 1) * page_size)
        fh.write(b"\x0d" + b"\xff" * 200)
    assert invoke("runs", "show", "pa-1", "--store", sqlite_filled).exit_code in (0, 2)   # opening stays cheap
    res = invoke("store", "check", "--store", sqlite_filled)
    assert res.exit_code == 2 and "damaged" in res.output and sqlite_filled in res.output, res.output
    assert "Traceback" not in res.output


def test_tether_store_names_the_store_and_no_password_is_shown(filled, monkeypatch):
    monkeypatch.setenv("TETHER_STORE", filled)
    out = invoke("runs", "list", "--limit", "1").output
    assert "1 of 5 run(s)" in out and filled.split("?")[0] in out
    from tether.store.connect import redact, store_spec

    assert store_spec("postgresql://u@h:5432/db") == "postgresql://u@h:5432/db"      # not folded like a path
    assert redact("postgresql://tether:s3cret@db.internal/tether") == "postgresql://tether@db.internal/tether"


def test_a_store_url_that_cannot_be_reached_is_one_clear_line():
    pytest.importorskip("psycopg")
    res = invoke("runs", "list", "--store", "postgresql://nobody:s3cret@127.0.0.1:1/none")
    assert res.exit_code == 2 and "cannot be reached" in res.output and "s3cret" not in res.output
    assert "Traceback" not in res.output


def test_copy_never_makes_a_store_of_its_source(tmp_path):
    """`store copy` reads its source: an empty or missing file is refused, and stays as it was."""
    empty = tmp_path / "empty.yaml"
    empty.write_bytes(b"")
    os.utime(empty, (time.time() - 60, time.time() - 60))   # not a store another process is making now
    for src, why in ((empty, "an empty file"), (tmp_path / "nosuch.db", "no such file")):
        res = invoke("store", "copy", str(src), str(tmp_path / "out.db"))
        assert res.exit_code == 2 and why in res.output, res.output
    assert empty.read_bytes() == b"" and not (tmp_path / "out.db").exists()


def test_a_listing_counts_its_matches_only_up_to_a_cap(filled, monkeypatch):
    """`runs list` prints "N of M": M is counted up to a cap, so the listing costs the same at any store size
    (on PostgreSQL an exact COUNT(*) reads every row); the exact total is `stats`' and `store info`'s job."""
    db = open_store(filled)
    assert db.count_runs() == 5 and db.count_runs(upto=10) == 5
    assert db.count_runs(upto=3) == 4 and db.count_runs(upto=0) == 1
    assert db.count_runs(model="policy:st*", upto=2) == 3
    import tether.cli.runs as runs_cli

    monkeypatch.setattr(runs_cli, "_COUNT_UPTO", 3)
    out = invoke("runs", "list", "--limit", "2", "--store", filled).output
    assert "2 of more than 3 run(s)" in out.strip().splitlines()[-1]


def test_guard_check_reads_every_run_of_either_backend(filled):
    """`tether guard-check --store S` (no run named): the per-rule trip table over the store's runs, on SQLite
    and on PostgreSQL alike, and `--json` gives the same counts."""
    import json

    table = invoke("guard-check", "--store", filled, "--guards", "on")
    assert table.exit_code == 0 and "Traceback" not in table.output, table.output
    data = json.loads(invoke("guard-check", "--store", filled, "--guards", "on", "--json").output)
    assert data["runs"] == len(RUNS)
    loop = [row for row in data["rules"] if row["guard"] == "loop"]
    assert loop and all(row["runs"] >= 1 for row in loop)
    for row in loop:
        assert row["rule"] in table.output


def test_a_listing_page_is_the_runs_with_their_counts_and_the_capped_total(filled):
    """`run_page` (what `runs list` reads: one round trip on PostgreSQL) equals list_runs + count_runs,
    with each run's checkpoints and approvals waiting, on both backends."""
    db = open_store(filled)
    db.create_approval("ap-page", "pa-2", "pay", {"n": 1}, "d", "why")
    runs, total = db.run_page(3, upto=4)
    assert [r["run_id"] for r in runs] == [r["run_id"] for r in db.list_runs(3)] and total == 5
    for r in runs:
        assert r["checkpoints"] == db.checkpoint_count(r["run_id"])
        assert r["approvals_waiting"] == (1 if r["run_id"] == "pa-2" else 0)
    assert any(r["checkpoints"] for r in db.run_page(10)[0])        # the runs took checkpoints
    cursor = db.run_cursor(runs[-1]["run_id"])
    older, total = db.run_page(10, before=cursor, model="policy:st*", upto=10)
    assert [r["run_id"] for r in older] == [r["run_id"] for r in db.list_runs(10, before=cursor, model="policy:st*")]
    assert total == db.count_runs(model="policy:st*") == 4
    assert db.run_page(10, eval_id="nosuch") == ([], 0)


def _set_version(url: str, backend: str, version: int) -> None:
    if backend == "sqlite":
        con = sqlite3.connect(url)
        con.execute(f"PRAGMA user_version={version}")
        con.close()
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute("UPDATE tether_schema SET version = %s", (version,))


def test_a_store_from_a_newer_tether_is_refused_before_any_read_or_write(filled, backend):
    """PostgreSQL checks the schema version on a connection's first statement (a read rides in the same
    round trip; a write waits for it): a newer store is refused on a read, and a write never reaches it."""
    from tether.errors import UsageError

    _set_version(filled, backend, 99)
    for read in (lambda db: db.run_page(10), lambda db: db.get_run("pa-1"), lambda db: db.info()):
        with pytest.raises(UsageError, match="newer than this tether"):
            read(open_store(filled, read_only=True))
    with pytest.raises(UsageError, match="newer than this tether"):
        open_store(filled).create_run("late", model="m")
    res = invoke("runs", "list", "--store", filled)
    assert res.exit_code == 2 and "newer than this tether" in res.output and "Traceback" not in res.output
    from tether.store import postgres, sqlite

    _set_version(filled, backend, (postgres if backend == "postgresql" else sqlite).SCHEMA_VERSION)
    db = open_store(filled)
    assert db.get_run("late") is None and db.count_runs() == len(RUNS)


def test_an_empty_postgresql_schema_is_refused_by_a_read_and_made_by_a_write(new_store_url):
    from tether.errors import UsageError

    url = new_store_url("postgresql")
    with pytest.raises(UsageError, match="holds no tether store yet"):
        open_store(url, read_only=True).run_page(10)
    res = invoke("runs", "list", "--store", url)
    assert res.exit_code == 2 and "holds no tether store yet" in res.output
    assert open_store(url).run_page(10) == ([], 0)          # a store that may write makes its tables on a read
    db = open_store(url)
    db.create_run("first", model="m")
    assert [r["run_id"] for r in open_store(url, read_only=True).run_page(10)[0]] == ["first"]


def test_store_commands_take_the_store_as_an_argument_too(filled, tmp_path):
    """`tether store check my.db` as well as `--store my.db` (info, check, prune, vacuum), on both backends;
    the store named twice differently is an error; upkeep never makes a store of an empty or missing file."""
    info = invoke("store", "info", filled, "--format", "json")
    assert info.exit_code == 0 and '"runs": 5' in info.output, info.output
    assert invoke("store", "info", "--store", filled, "--format", "json").output == info.output
    assert invoke("store", "check", filled).exit_code == 0
    pruned = invoke("store", "prune", filled, "--older-than", "2000-01-01")
    assert pruned.exit_code == 0 and "pruned 0 run(s)" in pruned.output, pruned.output
    assert invoke("store", "vacuum", filled).exit_code == 0
    twice = invoke("store", "check", filled, "--store", str(tmp_path / "other.db"))
    assert twice.exit_code == 2 and "named twice" in twice.output
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    os.utime(empty, (time.time() - 60, time.time() - 60))   # not a store another process is making now
    for args in (("vacuum", str(empty)), ("prune", str(empty), "--older-than", "1d"),
                 ("vacuum", str(tmp_path / "missing.db"))):
        res = invoke("store", *args)
        assert res.exit_code == 2 and ("nothing to" in res.output or "no such file" in res.output), res.output
    assert empty.read_bytes() == b"" and not (tmp_path / "missing.db").exists()


def test_a_postgresql_store_of_schema_1_is_read_as_it_is_and_upgraded_by_a_writer(new_store_url):
    """Schema 2 added an index (an eval-id glob's prefix): a read-only command reads a schema-1 store as it
    is; the next command that may write adds the index and the version."""
    import psycopg

    url = new_store_url("postgresql")
    fill(url)
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("DROP INDEX runs_by_eval_pattern")
        con.execute("UPDATE tether_schema SET version = 1")
    assert len(open_store(url, read_only=True).run_page(10)[0]) == len(RUNS)

    def state():
        with psycopg.connect(url, autocommit=True) as con:
            return (con.execute("SELECT version FROM tether_schema").fetchall(),
                    con.execute("SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'runs_by_eval_pattern' "
                                "AND schemaname = current_schema()").fetchone()[0])
    assert state() == ([(1,)], 0)
    assert len(open_store(url).list_runs(10)) == len(RUNS)
    from tether.store.postgres import SCHEMA_VERSION

    assert state() == ([(SCHEMA_VERSION,)], 1)


def test_a_postgresql_store_of_schema_2_loses_the_index_schema_3_does_without(new_store_url, monkeypatch):
    """Schema 3 dropped runs_by_eval_created (runs_by_eval_pattern answers an eval id in the same order): a
    read-only command reads a schema-2 store as it is, in one round trip (the answers that came with the
    version stand); a command that may write drops the index and sets the version. Listings by eval id
    give the same pages before and after, through the pattern index."""
    import psycopg

    from tether.store.postgres import PostgresStore

    url = new_store_url("postgresql")
    db = open_store(url)
    for i in range(7):
        db.create_run(f"trial-{i}", model="m", kind="eval", eval_id=f"e-{i % 2}", trial=i)
        db.finish_run(f"trial-{i}", "completed", "done", "")
    db.close()
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("CREATE INDEX runs_by_eval_created ON runs (eval_id, created, run_id)")
        con.execute("UPDATE tether_schema SET version = 2")

    def state():
        with psycopg.connect(url, autocommit=True) as con:
            return (con.execute("SELECT version FROM tether_schema").fetchall(),
                    sorted(r[0] for r in con.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'runs' "
                                                     "AND schemaname = current_schema()")))

    sends = []
    real = PostgresStore._send
    monkeypatch.setattr(PostgresStore, "_send", lambda self, queries: sends.append(len(queries)) or real(self, queries))
    evals = ["e-0", "e-1", "e-*", "nosuch"]
    before = [open_store(url, read_only=True).run_page(10, eval_id=e) for e in evals]
    assert sends[:2] == [3, 3]                      # the version, the page and its count: one pipeline each
    assert [len(page) for page, _ in before] == [4, 3, 7, 0] and [n for _, n in before] == [4, 3, 7, 0]
    assert state()[0] == [(2,)] and "runs_by_eval_created" in state()[1]
    open_store(url).create_run("upgrader", model="m")
    version, indexes = state()
    assert version == [(3,)] and "runs_by_eval_created" not in indexes and "runs_by_eval_pattern" in indexes
    assert [open_store(url, read_only=True).run_page(10, eval_id=e) for e in evals] == before
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("SET enable_seqscan = off")
        plan = " ".join(r[0] for r in con.execute(
            "EXPLAIN SELECT run_id FROM runs WHERE eval_id = 'x' ORDER BY created DESC, run_id DESC LIMIT 5"))
    assert "runs_by_eval_pattern" in plan, plan


@pytest.mark.parametrize("recent", [2, 2000])
def test_a_glob_listing_is_the_newest_matches_wherever_they_are(filled, monkeypatch, recent):
    """A glob's page is looked for among the newest runs, then among every match: the same page as
    filtering every run by hand, on both backends, for a common and a rare match, with a cursor."""
    import fnmatch

    from tether.store import queries

    monkeypatch.setattr(queries, "RECENT", recent)
    db = open_store(filled, read_only=True)
    every = db.list_runs(100)
    for model in ("policy:st*", "policy:q*", "policy:s?eady", "*:stubborn", "nosuch*"):
        want = [r["run_id"] for r in every if fnmatch.fnmatchcase(r["model"], model)]
        for limit in (1, 2, 10):
            page, total = db.run_page(limit, model=model, upto=100)
            assert [r["run_id"] for r in page] == want[:limit] and total == len(want), (model, limit)
            assert [r["run_id"] for r in db.list_runs(limit, model=model)] == want[:limit]
        if want:
            cursor = db.run_cursor(want[0])
            assert [r["run_id"] for r in db.run_page(10, model=model, before=cursor)[0]] == want[1:]
    out = invoke("runs", "list", "--model", "policy:q*", "--store", filled).output
    assert "pa-2" in out and "1 run(s)" in out


def test_store_info_reports_the_stores_own_schema_version(filled, backend):
    """`store info` names the schema version of the store, not this tether's: an older PostgreSQL store is
    read as it is (version 1 here) until a writer upgrades it."""
    import json

    from tether.store import postgres, sqlite

    mine = (postgres if backend == "postgresql" else sqlite).SCHEMA_VERSION
    assert json.loads(invoke("store", "info", filled, "--format", "json").stdout)["schema"] == mine
    if backend == "postgresql":
        _set_version(filled, backend, 1)
        info = invoke("store", "info", filled, "--format", "json")
        assert info.exit_code == 0 and json.loads(info.stdout)["schema"] == 1, info.output
        open_store(filled).create_run("upgrader", model="m")                  # a writer upgrades it
        assert json.loads(invoke("store", "info", filled, "--format", "json").stdout)["schema"] == mine


def test_a_sqlite_prune_lets_other_writers_in_between_its_batches(sqlite_filled, monkeypatch):
    """`tether store prune` deletes in transactions of PRUNE_BATCH runs: between two, another process
    writes without waiting (a gateway recording a conversation used to wait out the whole prune), and a
    run that became running meanwhile (a paused run resumed) is kept."""
    from tether.store import sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store, "PRUNE_BATCH", 2)
    other = sqlite3.connect(sqlite_filled, timeout=0, isolation_level=None)
    order = [r[0] for r in other.execute("SELECT run_id FROM runs ORDER BY created, run_id")]
    seen = []

    def progress(done: int, total: int) -> None:
        if not seen:       # after the first batch: the lock is free, and the last run starts running
            other.execute("BEGIN IMMEDIATE")
            other.execute("UPDATE runs SET status = 'running' WHERE run_id = ?", (order[-1],))
            other.execute("COMMIT")
        seen.append((done, total))

    db = open_store(sqlite_filled)
    done = db.prune(time.time() + 60, progress=progress)
    assert seen == [(2, 5), (4, 5), (5, 5)]
    assert done == {"runs": 4, "evals": 0}
    assert [r["run_id"] for r in db.list_runs(10)] == [order[-1]]
    other.close()
    db.close()
