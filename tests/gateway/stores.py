"""Stores for the gateways' record tests: a SQLite file or a fresh PostgreSQL schema
(``store_url``), a second process holding the store's write lock (``lock`` /
``release``), and dropping one gateway's own PostgreSQL connections (``named`` /
``drop_connections``)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from tether.store import open_store

from .test_mcp_gateway import env

SQLITE_LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
"""

PG_LOCKER = """
import sys, psycopg
db = psycopg.connect(sys.argv[1])
db.execute("LOCK TABLE events, runs IN EXCLUSIVE MODE")
print("locked", flush=True)
sys.stdin.readline()
db.commit()
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        yield str(tmp_path / "runs.db")
        return
    server = os.environ.get("TETHER_TEST_POSTGRES", "")
    if not server:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true but no PostgreSQL for the tests: set TETHER_TEST_POSTGRES")
        pytest.skip("no PostgreSQL for the tests: set TETHER_TEST_POSTGRES (eval \"$(scripts/start-postgres.sh)\")")
    import psycopg

    name = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(server, autocommit=True) as con:
        con.execute(f"CREATE SCHEMA {name}")
    url = f"{server}{'&' if '?' in server else '?'}options=-csearch_path%3D{name}"
    open_store(url).close()              # the tables exist before anyone locks them
    yield url
    with psycopg.connect(server, autocommit=True) as con:
        con.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def lock(store: str) -> subprocess.Popen:
    script = PG_LOCKER if store.startswith("postgresql://") else SQLITE_LOCKER
    locker = subprocess.Popen([sys.executable, "-c", script, store], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env())
    assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
    return locker


def release(locker: subprocess.Popen) -> None:
    assert locker.stdin is not None
    locker.stdin.write("go\n")
    locker.stdin.close()
    assert locker.wait(timeout=60) == 0
    assert locker.stdout is not None
    locker.stdout.close()


def named(url: str) -> tuple[str, str]:
    """``url`` with an application_name of its own (tether passes it on to the server): the
    connections of the process given it, and no one else's, are the ones with that name."""
    name = "tether-test-" + uuid.uuid4().hex[:12]
    return f"{url}{'&' if '?' in url else '?'}application_name={name}", name


def drop_connections(name: str) -> int:
    """The server ends every connection named ``name`` (as a restart would); how many it ended."""
    import psycopg

    with psycopg.connect(os.environ["TETHER_TEST_POSTGRES"], autocommit=True) as con:
        gone = con.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE application_name = %s AND pid <> pg_backend_pid()", (name,)).fetchall()
    assert all(ok for (ok,) in gone)
    return len(gone)
