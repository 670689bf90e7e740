"""--format table|plain|json on every listing (cli/_listing.py): json is one document with
the rows, plain is a header line and one tab-separated line per row with every id whole,
whatever the width (CliRunner's stdout is not a terminal: plain is the default there)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tether.cli import _common, app  # noqa: F401  (the CLI's consoles exist before a test sets COLUMNS:
#                                        Rich reads COLUMNS once, when a console is made)
from tether.evals import load_suite

runner = CliRunner()


def run(*args: str, columns: int = 40):
    res = runner.invoke(app, list(args), env={"COLUMNS": str(columns)}, catch_exceptions=False)
    return res


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store with a looping run (guards off) and a small eval, and a baseline of it."""
    out = tmp_path_factory.mktemp("listing")
    db = str(out / "t.db")
    assert run("run", "C4-LD-01", "--model", "policy:stubborn", "--run-id", "loop-run-with-a-long-id-0001",
               "--store", db).exit_code in (0, 1, 3)
    res = run("eval", "c4", "--model", "policy:steady", "--case", "C4-PA-02", "--case", "C4-LD-01", "--quiet",
              "--store", db, "--json", str(out / "r.json"))
    assert res.exit_code == 0, res.output
    res = run("baseline", "accept", str(out / "r.json"), "--reason", "第一个基线 (first)", "--dir", str(out / "bl"))
    assert res.exit_code == 0, res.output
    return out, db


def _plain(res, first: str) -> list[list[str]]:
    assert res.exit_code in (0, 3), res.output
    lines = res.stdout.splitlines()
    assert lines[0].split("\t")[0] == first, lines[0]
    rows = [line.split("\t") for line in lines]
    assert len({len(r) for r in rows}) == 1, "every line has every column"
    return rows[1:]


def test_case_list():
    ids = {c.id for c in load_suite("c4")}
    doc = json.loads(run("case", "list", "--format", "json").stdout)
    assert doc["kind"] == "cases" and {r["id"] for r in doc["rows"]} == ids
    assert all(isinstance(r["tools"], list) and r["tools"] for r in doc["rows"])
    assert any("\\u" not in line and any(ord(ch) > 127 for ch in line)            # titles as UTF-8, not escaped
               for line in run("case", "list", "--format", "json").stdout.splitlines())
    assert {r[0] for r in _plain(run("case", "list"), "id")} == ids


def test_stats(store):
    _, db = store
    doc = json.loads(run("stats", "--store", db, "--format", "json").stdout)
    assert doc["runs"] == 3 and "completion_rate" in doc
    assert doc == json.loads(run("stats", "--store", db, "--json").stdout)        # --json is the same document
    rows = _plain(run("stats", "--store", db), "metric")
    assert len(rows) == 7 and rows[0][0].startswith("completion rate")


def test_store_info(store):
    _, db = store
    doc = json.loads(run("store", "info", "--store", db, "--format", "json").stdout)
    assert doc["kind"] == "store" and doc["runs"] == 3 and doc["evals"] == 1 and doc["backend"] == "sqlite"
    rows = dict(_plain(run("store", "info", "--store", db), "field"))
    assert rows["runs"] == "3" and rows["where"] == doc["where"]


def test_baseline_list(store):
    out, _ = store
    doc = json.loads(run("baseline", "list", "--dir", str(out / "bl"), "--format", "json").stdout)
    (row,) = doc["rows"]
    assert row["name"] == "c4" and row["reason"] == "第一个基线 (first)" and row["runs"] == 2
    (line,) = _plain(run("baseline", "list", "--dir", str(out / "bl")), "name")
    assert line[0] == "c4" and line[-1] == "第一个基线 (first)"


def test_guard_check_one_run_and_many(store):
    _, db = store
    one = run("guard-check", "loop-run-with-a-long-id-0001", "--store", db, "--format", "json")
    assert one.exit_code == 3
    doc = json.loads(one.stdout)
    assert doc["trips"] and doc["trips"][0]["guard"] == "loop"
    rows = _plain(run("guard-check", "loop-run-with-a-long-id-0001", "--store", db), "event")
    assert [r[2] for r in rows[:1]] == ["loop"] and len(rows) == len([t for t in doc["trips"] if not t["after_stop"]])
    many = json.loads(run("guard-check", "--store", db, "--format", "json").stdout)
    assert many["runs"] == 3 and many["runs_stopped"] >= 1
    rules = _plain(run("guard-check", "--store", db), "guard")
    assert {(r[0], r[1]) for r in rules} == {(r["guard"], r["rule"]) for r in many["rules"]}


def test_runs_list_keeps_a_long_id_whole_in_a_narrow_table(store):
    """--format table at 40 columns: the id is on one line (the other columns give way)."""
    _, db = store
    out = run("runs", "list", "--store", db, "--kind", "run", "--format", "table").stdout
    assert "loop-run-with-a-long-id-0001" in out, out
