"""The store's tests run against both backends: ``store_url`` is a fresh SQLite
file, or a fresh schema in the PostgreSQL server named by $TETHER_TEST_POSTGRES
(scripts/start-postgres.sh starts one; .ci/run does). Without it the PostgreSQL
half skips, saying so; in CI (CI=true) it fails instead."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

BACKENDS = ("sqlite", "postgresql")


def postgres_server() -> str:
    """The test server's URL, or skip (fail in CI) saying why there is none."""
    url = os.environ.get("TETHER_TEST_POSTGRES", "")
    in_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    why = None
    if not url:
        why = "no PostgreSQL for the tests: set TETHER_TEST_POSTGRES (eval \"$(scripts/start-postgres.sh)\")"
    else:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            why = "psycopg is not installed: pip install -e '.[test]'"
    if why:
        if in_ci:
            pytest.fail(f"CI=true but {why}")
        pytest.skip(why)
    return url


def fresh_postgres() -> tuple[str, str]:
    """(a URL whose tables live in a new, empty schema, the schema's name)."""
    import psycopg

    url = postgres_server()
    name = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"CREATE SCHEMA {name}")
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{name}", name


def drop_postgres(name: str) -> None:
    import psycopg

    with psycopg.connect(postgres_server(), autocommit=True) as con:
        con.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.fixture
def new_store_url(tmp_path):
    """A function making a fresh, empty store of the test's backend (see ``store_url``)."""
    made: list[str] = []

    def make(backend: str) -> str:
        if backend == "sqlite":
            return str(tmp_path / f"store-{uuid.uuid4().hex[:8]}.db")
        url, name = fresh_postgres()
        made.append(name)
        return url

    yield make
    for name in made:
        drop_postgres(name)


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def store_url(backend, new_store_url) -> str:
    """A fresh, empty store: a SQLite file, or a PostgreSQL schema."""
    return new_store_url(backend)


@pytest.fixture
def store(store_url):
    from tether.store import open_store

    s = open_store(store_url)
    yield s
    s.close()


@pytest.fixture
def still_holds():
    """``still_holds(db)``: another process tries to switch the store at ``db`` out of WAL, which needs
    every other process to have let go of the file: it must fail while this process holds the store."""
    def check(db) -> None:
        other = subprocess.run(
            [sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=0); "
             "print(c.execute('PRAGMA journal_mode=DELETE').fetchone()[0])", str(db)],
            capture_output=True, text=True, timeout=60, check=False)
        assert "locked" in other.stderr or other.stdout.strip() == "wal", (other.stdout, other.stderr)
    return check
