"""`tether baseline accept / list` and `tether diff --baseline`: a round trip in tmp_path."""

import json
import sqlite3
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.diff import accept_baseline, find_baseline, list_baselines
from tether.errors import UsageError
from tether.events import Trajectory

runner = CliRunner()


def copy_store(src, dest):
    """A consistent copy of a live WAL store (the file alone may lack recent commits)."""
    with sqlite3.connect(src) as a, sqlite3.connect(dest) as b:
        a.backup(b)


def run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    out = tmp_path_factory.mktemp("evaluated")
    for model, name in (("policy:stubborn", "s.json"), ("policy:steady", "t.json")):
        res = run("eval", "c4", "-m", model, "-c", "C4-LD-0[1-3]", "--json", out / name, "--store", out / "t.db", "-q")
        assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def work(evaluated, tmp_path):
    """A fresh copy per test: its own store, the documents pointing at it."""
    copy_store(evaluated / "t.db", tmp_path / "t.db")
    for name in ("s.json", "t.json"):
        doc = json.loads((evaluated / name).read_text(encoding="utf-8"))
        doc["store"] = str(tmp_path / "t.db")
        (tmp_path / name).write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return tmp_path


def test_accept_list_and_diff_against_the_baseline(work):
    bdir = work / "baselines"
    res = run("baseline", "accept", work / "t.json", "--reason", "steady agent reviewed (PR 7)", "--dir", bdir)
    assert res.exit_code == 0, res.output
    assert "accepted baseline c4" in res.output and "3 run(s) copied" in res.output
    (entry,) = [json.loads(line) for line in (bdir / "history.jsonl").read_text(encoding="utf-8").splitlines()]
    assert entry["name"] == "c4" and entry["suite"] == "c4" and entry["models"] == ["policy:steady (guards off)"]
    assert entry["reason"] == "steady agent reviewed (PR 7)" and entry["source"] == str(work / "t.json")
    assert entry["accepted_at"] and "git_commit" in entry and entry["missing_runs"] == [] and entry["runs"] == 3
    assert (bdir / entry["path"]).is_file()
    saved = json.loads((bdir / entry["path"]).read_text(encoding="utf-8"))
    assert saved["store"] is None                                    # self-contained: never a path to a store
    for case in saved["runs"][0]["cases"]:
        export = (bdir / entry["path"]).parent / "runs" / f"{case['trials'][0]['run_id']}.jsonl"
        assert Trajectory.load(export).digest() == case["trials"][0]["digest"]

    (work / "t.db").unlink()    # the baseline keeps its own copy of the runs
    listed = run("baseline", "list", "--dir", bdir)
    assert listed.exit_code == 0 and "c4" in listed.output and "steady agent" in listed.output

    same = run("diff", "--baseline", "c4", "--baseline-dir", bdir, bdir / entry["path"], "-t", "prompt")
    assert same.exit_code == 0, same.output
    assert "baseline c4: accepted" in same.output and "no forbidden differences" in same.output
    assert "compared without" not in same.output and "0 with differences" in same.output


def test_diff_against_a_baseline_applies_the_policy(work):
    bdir = work / "b"
    accept_baseline(work / "t.json", reason="good run", directory=bdir)
    res = run("diff", "--baseline", "c4", "--baseline-dir", bdir, work / "s.json", "-t", "model", "-q")
    assert res.exit_code == 1
    assert "C4-LD-01: verdict_regression: verdict pass -> fail" in res.output


def test_the_latest_entry_of_a_name_wins_and_history_is_kept(work):
    bdir = work / "b"
    now = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
    first = accept_baseline(work / "s.json", reason="first", directory=bdir, now=now)
    second = accept_baseline(work / "t.json", reason="better agent", name="c4", directory=bdir, now=now)
    other = accept_baseline(work / "s.json", reason="for comparison", name="stubborn", directory=bdir, now=now)
    assert first.path != second.path    # same second: a suffix keeps both
    assert [e.name for e in list_baselines(bdir)] == ["c4", "c4", "stubborn"]
    entry, doc = find_baseline("c4", bdir)
    assert entry.reason == "better agent" and doc.results.runs[0].model == "policy:steady"
    assert doc.results.store is None and doc.runs is not None and "runs" in doc.runs.where
    assert other.models == ["policy:stubborn (guards off)"]


def test_refusals(work):
    bdir = work / "b"
    for reason in ("", "   "):
        res = run("baseline", "accept", work / "t.json", "--reason", reason, "--dir", bdir)
        assert res.exit_code == 2 and "needs a reason" in res.output
    assert run("baseline", "accept", work / "t.json", "--dir", bdir).exit_code == 2     # --reason is required
    res = run("baseline", "accept", work / "t.json", "--reason", "x", "--name", "../up", "--dir", bdir)
    assert res.exit_code == 2 and "baseline name" in res.output
    assert not (bdir / "history.jsonl").exists()
    res = run("diff", "--baseline", "c4", "--baseline-dir", bdir, work / "t.json")
    assert res.exit_code == 2 and "no baseline named 'c4'" in res.output
    accept_baseline(work / "t.json", reason="ok", directory=bdir)
    assert run("diff", "--baseline", "c4", "--baseline-dir", bdir, work / "t.json", work / "s.json").exit_code == 2
    with pytest.raises(UsageError):
        find_baseline("nightly", bdir)


def test_list_without_baselines(tmp_path):
    res = run("baseline", "list", "--dir", tmp_path / "none")
    assert res.exit_code == 0 and "no baselines" in res.output


def test_a_missing_run_is_named_not_fatal(work):
    doc = json.loads((work / "t.json").read_text(encoding="utf-8"))
    ld02 = next(c for c in doc["runs"][0]["cases"] if c["case_id"] == "C4-LD-02")["trials"][0]
    ld02["run_id"] = "not-in-the-store"
    (work / "t.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    res = run("baseline", "accept", work / "t.json", "-r", "partial", "--dir", work / "b")
    assert res.exit_code == 0 and "1 run(s) referenced by" in res.output
    assert "run not-in-the-store is not in the store" in " ".join(res.output.split())
    [entry] = list_baselines(work / "b")
    assert entry.runs == 2 and len(entry.missing_runs) == 1
    res = run("diff", "--baseline", "c4", "--baseline-dir", work / "b", work / "t.json", "-c", "C4-LD-02")
    assert res.exit_code == 0 and "run not-in-the-store is not in the folder" in " ".join(res.output.split())


def test_accepting_results_whose_store_is_gone_is_refused(work):
    (work / "t.db").unlink()
    res = run("baseline", "accept", work / "t.json", "-r", "x", "--dir", work / "b")
    assert res.exit_code == 2 and "cannot accept" in res.output and "--store PATH" in " ".join(res.output.split())
