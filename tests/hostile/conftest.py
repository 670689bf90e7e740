"""The valid inputs the hostile corpus combines with (built once per session)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .corpus import Fixture
from .harness import invoke


def build_fixture(root: Path) -> Fixture:
    root.mkdir(parents=True, exist_ok=True)
    db = "good.db"
    res = invoke(["eval", "c4", "--model", "policy:steady", "--case", "C4-LD-01", "--store", db,
                  "--json", "good.json", "-q"], root)
    assert res.code == 0, res.output
    res = invoke(["run", "C4-PA-02", "--approve", "zhihu_get_answers", "--run-id", "p1", "--store", db], root)
    assert res.code == 3, res.output
    from tether.store import SQLiteStore
    from tether.store.export import export_run

    store = SQLiteStore(root / db)
    (root / "good.jsonl").write_text(export_run(store, "p1"), encoding="utf-8")
    store.close()
    res = invoke(["case", "show", "C4-LD-01"], root)
    (root / "good.yaml").write_text(res.output, encoding="utf-8")
    invoke(["review", "export", "good.json", "--out", "review.yaml"], root)
    import sqlite3

    con = sqlite3.connect(root / db)          # fold the WAL in: copies of good.db hold every run
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    doc = json.loads((root / "good.json").read_text(encoding="utf-8"))
    assert doc["store"]
    return Fixture(root)


@pytest.fixture(scope="session")
def hostile_fixture(tmp_path_factory) -> Fixture:
    return build_fixture(tmp_path_factory.mktemp("hostile-fixture"))


@pytest.fixture
def sandbox(tmp_path):
    """(sentinel parent, working folder): nothing may appear or change in the parent but under work."""
    parent = tmp_path / "parent"
    work = parent / "a" / "b" / "work"
    work.mkdir(parents=True)
    (parent / "sentinel.txt").write_text("keep", encoding="utf-8")
    return parent, work
