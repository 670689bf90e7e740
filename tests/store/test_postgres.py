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
