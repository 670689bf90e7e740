"""`tether diff` end to end: two calibration agents on the C4 suite, offline."""

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.diff import CHANGE_TYPES, diff_results, load_results

runner = CliRunner()


def copy_store(src, dest):
    """A consistent copy of a live WAL store (the file alone may lack recent commits)."""
    with sqlite3.connect(src) as a, sqlite3.connect(dest) as b:
        a.backup(b)


def run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    out = tmp_path_factory.mktemp("diff")
    for model, name in (("policy:stubborn", "s.json"), ("policy:steady", "t.json")):
        res = run("eval", "c4", "--model", model, "--json", out / name, "--store", out / "t.db", "--out", out / "runs",
                  "-q")
        assert res.exit_code == 0, res.output
    return out


def load_diff(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert (doc["format"], doc["version"]) == ("tether.diff", 1)
    return doc


def case(doc, case_id):
    return next(c for c in doc["diff"]["cases"] if c["case_id"] == case_id)


def test_stubborn_to_steady_reports_all_parts_per_case(docs):
    res = run("diff", docs / "s.json", docs / "t.json", "--json", docs / "d.json")
    assert res.exit_code == 0, res.output
    out = res.output
    # C4-LD-01: fewer search_flights calls, the changed date, retries down, step_limit -> completed.
    for expected in ("C4-LD-01", "search_flights 30 -> 3", '#3 search_flights.date: "下周五" -> "2026-04-17"',
                     "retries 29 -> 1 (better)", "step_limit -> completed (improved)", "summary 16 cases · ", "0 regressed)"):
        assert expected in out, expected
    # the paired test closes the summary (one trial each: McNemar; tests/diff/test_paired.py has several, under -m slow)
    flat = " ".join(out.split())
    assert "paired test (automatic verdicts, 15 cases): better" in flat and "exact McNemar p =" in flat
    assert "better in new (14): C4-AR-01, C4-AR-02" in flat and "worse in new (0): none" in flat
    ld01 = case(load_diff(docs / "d.json"), "C4-LD-01")
    assert ld01["verdict"] == {"base": "fail", "new": "pass", "kind": "improved"} and ld01["flipped"]
    traj = ld01["trials"][0]["trajectory"]
    assert traj["changed_parts"] == ["step", "args", "recovery", "terminal", "text"]
    counts = {c["tool"]: (c["base"], c["new"]) for c in traj["step"]["counts"]}
    assert counts["search_flights"][1] < counts["search_flights"][0] and counts["web_search"] == (0, 1)
    assert {"kind": "removed", "tools": ["search_flights"] * 27, "base_pos": 4, "new_pos": None} in traj["step"]["changes"]
    recovery = {c["metric"]: c for c in traj["recovery"]["changes"]}
    assert recovery["retries"]["new"] < recovery["retries"]["base"] and recovery["retries"]["assessment"] == "better"
    assert traj["terminal"] == {"base": "step_limit", "new": "completed", "kind": "improved"}
    # A tool-chain loop (LD-02): the A->B->C cycle cut short, no argument changes.
    ld02 = case(load_diff(docs / "d.json"), "C4-LD-02")["trials"][0]["trajectory"]
    assert ld02["args"]["changes"] == [] and ld02["step"]["changes"][0]["kind"] == "removed"


def test_summary_lists_flips_first_with_statistics(docs):
    d = diff_results(load_results(docs / "s.json"), load_results(docs / "t.json"))
    assert d.cases[0].flipped and not d.cases[-1].flipped
    assert (d.stats.cases, d.stats.regressed) == (16, 0)
    assert d.stats.improved == d.stats.flipped > 0
    ld = next(x for x in d.dimensions if x.dimension == "LD")
    assert (ld.base, ld.new, ld.assessment) == (0.0, 1.0, "better")


def test_prompt_change_type_fails_listing_violations(docs):
    res = run("diff", docs / "s.json", docs / "t.json", "--change-type", "prompt", "-q", "--json", docs / "p.json")
    assert res.exit_code == 1
    assert "change type prompt (文案 Prompt):" in res.output and "forbidden difference(s)" in res.output
    assert 'C4-LD-01 trial 0: args: call #3 search_flights.date: "下周五" -> "2026-04-17"' in res.output
    assert "C4-LD-01 trial 0: terminal: status step_limit -> completed" in res.output
    rules = {v["rule"] for v in load_diff(docs / "p.json")["violations"]}
    assert rules == {"args", "terminal"}


def test_the_reverse_change_is_a_regression_for_a_model_upgrade(docs):
    res = run("diff", docs / "t.json", docs / "s.json", "-t", "model", "-q", "--case", "C4-LD-01")
    assert res.exit_code == 1
    assert "C4-LD-01: verdict_regression: verdict pass -> fail" in res.output
    assert "C4-LD-01 trial 0: terminal_regression: status completed -> step_limit" in res.output
    assert "1 regressed" in res.output


def test_a_run_against_itself_has_no_differences_under_every_change_type(docs):
    for change_type in CHANGE_TYPES:
        res = run("diff", docs / "t.json", docs / "t.json", "-t", change_type, "--json", docs / "self.json")
        assert res.exit_code == 0, res.output
        assert "no forbidden differences" in res.output and "0 flipped" in res.output
        assert "0 with differences" in res.output
        doc = load_diff(docs / "self.json")
        assert doc["violations"] == [] and not any(c["changed"] for c in doc["diff"]["cases"])


def exported(docs, name, case_id="C4-LD-01"):
    trial = load_results(docs / name).results.runs[0].case(case_id).trials[0]
    return docs / "runs" / f"{trial.run_id}.jsonl"


def test_two_run_exports(docs):
    s, t = exported(docs, "s.json"), exported(docs, "t.json")
    res = run("diff", s, t, "-t", "performance", "--json", docs / "tr.json")
    assert res.exit_code == 1 and "search_flights 30 -> 3" in res.output
    doc = load_diff(docs / "tr.json")
    assert doc["kind"] == "trajectory" and {v["rule"] for v in doc["violations"]} == {"args", "terminal"}
    assert run("diff", t, t, "-t", "performance").exit_code == 0


def test_missing_runs_fall_back_to_counters_and_say_how_to_fix(docs, tmp_path):
    doc = json.loads((docs / "s.json").read_text(encoding="utf-8"))
    doc["store"] = str(tmp_path / "gone.db")
    (tmp_path / "s.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    res = run("diff", tmp_path / "s.json", docs / "t.json", "--case", "C4-LD-01", "-t", "orchestration")
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert "base: cannot find the runs of" in flat and "tether runs import" in flat
    assert "retries 29 -> 1 (better)" in res.output and "step_limit -> completed (improved)" in res.output
    assert "1 trial(s) compared without their runs" in flat


def test_a_run_that_is_not_the_one_pinned_is_not_diffed(docs, tmp_path):
    doc = json.loads((docs / "s.json").read_text(encoding="utf-8"))
    ld01 = next(c for c in doc["runs"][0]["cases"] if c["case_id"] == "C4-LD-01")
    ld01["trials"][0]["digest"] = "0" * 64
    (tmp_path / "s.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    res = run("diff", tmp_path / "s.json", docs / "t.json", "--case", "C4-LD-01")
    flat = " ".join(res.output.split())
    assert res.exit_code == 0 and "is not the run these results were made from" in flat
    assert "1 trial(s) compared without their runs" in flat


def test_several_runs_in_one_document_need_a_model(docs, tmp_path):
    both = load_results(docs / "s.json").results
    both.runs += load_results(docs / "t.json").results.runs
    both.save(tmp_path / "both.json")
    res = run("diff", tmp_path / "both.json", tmp_path / "both.json")
    assert res.exit_code == 2 and "choose one with --base-model" in res.output
    res = run("diff", tmp_path / "both.json", tmp_path / "both.json", "--base-model", "policy:stubborn",
              "--new-model", "policy:steady", "-c", "C4-LD-01")
    assert res.exit_code == 0 and "search_flights 30 -> 3" in res.output


def test_usage_errors_exit_2(docs, tmp_path):
    trace = exported(docs, "t.json")
    assert run("diff", docs / "s.json").exit_code == 2
    assert run("diff", docs / "s.json", trace).exit_code == 2
    assert run("diff", docs / "s.json", tmp_path / "nope.json").exit_code == 2
    assert run("diff", docs / "s.json", docs / "t.json", "-c", "NOPE-*").exit_code == 2
    assert run("diff", docs / "s.json", docs / "t.json", "-t", "vibes").exit_code == 2
    (tmp_path / "bad.json").write_text('{"format": "tether.results", "version": 2, "runs": 3}', encoding="utf-8")
    res = run("diff", tmp_path / "bad.json", docs / "t.json")
    assert res.exit_code == 2 and "not a tether results document" in res.output


def test_trials_report_pass_at_1(tmp_path):
    for model, name in (("policy:quitter", "q.json"), ("policy:steady", "t.json")):
        res = run("eval", "c4", "-m", model, "--trials", "2", "-c", "C4-PA-01", "--json", tmp_path / name,
                  "--store", tmp_path / "t.db", "-q")
        assert res.exit_code == 0, res.output
    res = run("diff", tmp_path / "q.json", tmp_path / "t.json")
    assert res.exit_code == 0
    assert "pass@1 (mean over cases, trials 2 vs 2): 0% -> 100%" in res.output
    assert "trial 0" in res.output


def test_help_has_examples():
    for args in (["diff", "--help"], ["baseline", "--help"], ["baseline", "accept", "--help"],
                 ["baseline", "list", "--help"]):
        res = run(*args)
        assert res.exit_code == 0 and "Example" in res.output, args


def test_results_moved_with_their_store_still_find_their_runs(docs, tmp_path):
    copy_store(docs / "t.db", tmp_path / "moved.db")
    doc = json.loads((docs / "t.json").read_text(encoding="utf-8"))
    doc["store"] = "moved.db"          # relative: looked up as given, then beside the results file
    (tmp_path / "t.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    d = diff_results(load_results(tmp_path / "t.json"), load_results(docs / "t.json"))
    assert all(t.trajectory is not None for c in d.cases for t in c.trials)
    assert d.stats.with_differences == 0


def test_the_same_model_twice_shows_its_own_runs(docs, tmp_path):
    """Two evals of one model: each document reads its own runs (no shared trace files)."""
    store = tmp_path / "x.db"
    for name in ("a.json", "b.json"):
        assert run("eval", "c4", "-m", "policy:steady", "-c", "C4-LD-01", "--store", store, "--json",
                   tmp_path / name, "-q").exit_code == 0
    a, b = load_results(tmp_path / "a.json"), load_results(tmp_path / "b.json")
    assert a.results.runs[0].cases[0].trials[0].run_id != b.results.runs[0].cases[0].trials[0].run_id
    d = diff_results(a, b)
    assert d.cases[0].trials[0].trajectory is not None and not d.cases[0].changed
