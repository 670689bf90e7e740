"""`tether guard-check --json`: every trip, machine-readable."""

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from tether.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "data" / "loop_corpus"))
from corpus import items  # noqa: E402


def test_json_lists_every_trip_with_call_index(tmp_path):
    item = next(i for i in items() if i.id == "L01-read-same-offset")
    path = item.trajectory.save(tmp_path / "t.jsonl")
    res = CliRunner().invoke(app, ["guard-check", str(path), "--json"], catch_exceptions=False)
    assert res.exit_code == 3            # the stack would have stopped this run
    doc = json.loads(res.output)
    first = doc["trips"][0]
    assert (first["call"], first["guard"], first["rule"], first["verdict"]) == (3, "loop", "identical", "hint")
    assert first["numbers"] == {"count": 3, "limit": 2, "tool": "read_file"}
    assert doc["trips"][1]["verdict"] == "stop" and not doc["trips"][1]["after_stop"]
    assert doc["trips"][-1]["after_stop"]


def test_json_for_a_clean_trace(tmp_path):
    item = next(i for i in items() if i.id == "K06-move-files")
    path = item.trajectory.save(tmp_path / "t.jsonl")
    res = CliRunner().invoke(app, ["guard-check", str(path), "--json"], catch_exceptions=False)
    assert res.exit_code == 0 and json.loads(res.output)["trips"] == []


def _store_of_corpus_runs(path):
    """A store holding the 85 runs of the authors' loop corpus, imported as exports."""
    from tether.store.export import import_run
    from tether.store.sqlite import SQLiteStore

    store = SQLiteStore(path)
    for n, item in enumerate(items()):
        started = item.trajectory.events[0]
        started.run_id = f"corpus-{n:03d}"
        started.case_id = item.id
        import_run(store, item.trajectory.to_jsonl())
    store.close()


def test_guard_check_over_a_store_of_many_runs_table_and_json_agree(tmp_path):
    """`tether guard-check --store S --guards on`: the per-rule trip table over every
    run of a store, and --json the same data."""
    db = tmp_path / "t.db"
    _store_of_corpus_runs(db)
    runner = CliRunner()
    res = runner.invoke(app, ["guard-check", "--store", str(db), "--guards", "on", "--json"], catch_exceptions=False)
    assert res.exit_code == 0
    doc = json.loads(res.output)
    assert doc["runs"] == 85 and doc["unreadable"] == [] and doc["guards"] == "on"
    rules = {(r["guard"], r["rule"]): r for r in doc["rules"]}
    assert {"identical", "cycle", "outage", "question_repeat"} <= {rule for _, rule in rules}
    for r in rules.values():
        assert r["trips"] == r["hint"] + r["block"] + r["stop"] + r["escalate"] and r["runs"] <= doc["runs_tripped"]
    # a stop only on the very call a hint was about (2026-12-01, sixth pass): 25 of the authors' loops are stopped,
    # the rest end with hints (31 before, when a look-alike call tripping the same rule could stop)
    assert doc["runs_stopped"] == len(doc["stopped"]) > 20
    assert all(s["run"].startswith("corpus-") for s in doc["stopped"])
    # the table says the same
    res = runner.invoke(app, ["guard-check", "--store", str(db), "--guards", "on"], catch_exceptions=False)
    assert res.exit_code == 0
    assert f"85 run(s), guards on: {doc['runs_tripped']} with a trip, {doc['runs_stopped']} would have been stopped" \
        in " ".join(res.output.split())
    for (guard, rule), r in rules.items():
        row = next(line.split() for line in res.output.splitlines() if line.split()[:2] == [guard, rule])
        assert row[2:] == [str(r["runs"]), str(r["hint"]), str(r["block"]), str(r["stop"]), str(r["escalate"])]
    # another guard setting, checked against the same history
    res = runner.invoke(app, ["guard-check", "--store", str(db), "--guards", "loop,budget", "--json"],
                        catch_exceptions=False)
    assert json.loads(res.output)["guards"] == "loop,budget"


def test_guard_check_over_a_folder_reports_unreadable_traces_and_goes_on(tmp_path):
    good = next(i for i in items() if i.id == "L01-read-same-offset")
    good.trajectory.save(tmp_path / "a" / "t1.jsonl")
    (tmp_path / "a" / "broken.jsonl").write_text("not a trace\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["guard-check", str(tmp_path), "--json"], catch_exceptions=False)
    assert res.exit_code == 0
    doc = json.loads(res.output)
    assert doc["runs"] == 1 and doc["runs_stopped"] == 1
    assert doc["unreadable"][0]["run"].endswith("broken.jsonl") and "not a trace" in doc["unreadable"][0]["error"]
    res = CliRunner().invoke(app, ["guard-check", str(tmp_path / "nothing-here")])
    assert res.exit_code == 2
