"""The PostgreSQL store's connection: it is named ``tether`` on the server
(``pg_stat_activity.application_name``) unless its URL names it; a URL's name
is kept, so one process's connections can be told from another's."""

from __future__ import annotations

from tether.store import open_store

from .conftest import drop_postgres, fresh_postgres


def test_a_url_names_its_connection_and_tether_is_the_default():
    url, schema = fresh_postgres()
    try:
        for where, name in ((url, "tether"), (f"{url}&application_name=nightly-eval-7", "nightly-eval-7")):
            store = open_store(where)
            try:
                assert store._db.execute("SELECT current_setting('application_name')").fetchone()[0] == name
            finally:
                store.close()
    finally:
        drop_postgres(schema)


def test_a_postgresql_command_imports_no_sqlite_store(tmp_path):
    """A PostgreSQL store's reads and writes go through its own module and the shared row helpers
    (store/_rows.py): `tether.store.sqlite` is never imported, in a new process (what a command pays
    for), and a SQLite command never imports psycopg."""
    import subprocess
    import sys

    url, schema = fresh_postgres()
    probe = ("import sys\nfrom tether.store import open_store\n"
             "db = open_store(sys.argv[1])\ndb.create_run('r1', model='m')\n"
             "db.append_events('r1', [(0, {'type': 'run_started'})])\ndb.finish_run('r1', 'completed', 'ok', '')\n"
             "assert [r['run_id'] for r in db.run_page(5)[0]] == ['r1'] and db.events('r1')\n"
             "db.close()\nprint(sorted(m for m in ('tether.store.sqlite', 'psycopg') if m in sys.modules))\n")
    try:
        for where, imported in ((url, "['psycopg']"), (str(tmp_path / "s.db"), "['tether.store.sqlite']")):
            done = subprocess.run([sys.executable, "-c", probe, where], capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr[-2000:]
            assert done.stdout.strip() == imported, (where, done.stdout)
    finally:
        drop_postgres(schema)
