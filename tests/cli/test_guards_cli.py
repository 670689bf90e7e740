"""Guards from the CLI: side-by-side eval, tether run's exit codes, guard-check on saved traces."""

import json

import pytest
from typer.testing import CliRunner

from tether.cli import app

runner = CliRunner()
LOOP_CASES = ("C4-LD-01", "C4-LD-02", "C4-LD-03", "C4-DR-02")


def invoke(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory):
    out = tmp_path_factory.mktemp("guards")
    res = invoke("eval", "c4", "--model", "policy:stubborn", "--model", "policy:steady", "--guards", "off",
                 "--guards", "on", "--out", str(out / "runs"), "--store", str(out / "t.db"), "--json", str(out / "r.json"))
    assert res.exit_code == 0, res.output
    return res.output, json.loads((out / "r.json").read_text(encoding="utf-8")), out


def auto(doc, model, guards):
    run = next(r for r in doc["runs"] if r["model"] == model and r["guards"] == guards)
    return {c["case_id"]: c["auto_verdict"] for c in run["cases"]}


RANK = {"pass": 3, "unjudged": 2, "unclear": 1, "fail": 0}


def test_guards_turn_stubborn_loops_into_passes(side_by_side):
    _, doc, _ = side_by_side
    off, on = auto(doc, "policy:stubborn", "off"), auto(doc, "policy:stubborn", "on")
    assert [off[c] for c in LOOP_CASES] == ["fail"] * 4
    assert [on[c] for c in LOOP_CASES] == ["pass"] * 4


def test_steady_does_not_get_worse(side_by_side):
    _, doc, _ = side_by_side
    off, on = auto(doc, "policy:steady", "off"), auto(doc, "policy:steady", "on")
    assert all(RANK[on[c]] >= RANK[off[c]] for c in off), (off, on)


def test_comparison_table_printed(side_by_side):
    output, _, _ = side_by_side
    assert "what the guards changed" in output and "changed" in output


def test_guard_check_on_a_saved_stubborn_trace(side_by_side):
    _, doc, out = side_by_side
    run = next(r for r in doc["runs"] if r["model"] == "policy:stubborn" and r["guards"] == "off")
    trace = out / "runs" / f'{next(c for c in run["cases"] if c["case_id"] == "C4-LD-01")["trials"][0]["run_id"]}.jsonl'
    res = invoke("guard-check", str(trace))
    assert res.exit_code == 3
    assert "would have stopped this run at step 4" in res.output
    assert "4th identical call to search_flights" in res.output    # the stop, on the summary line


def test_guard_check_clean_trace_exits_zero(side_by_side):
    _, doc, out = side_by_side
    run = next(r for r in doc["runs"] if r["model"] == "policy:steady" and r["guards"] == "off")
    trace = out / "runs" / f'{next(c for c in run["cases"] if c["case_id"] == "C4-PA-02")["trials"][0]["run_id"]}.jsonl'
    res = invoke("guard-check", str(trace))
    assert res.exit_code == 0 and "no trip" in res.output


def test_run_budget_exhausted_exits_non_zero_with_done_not_done(tmp_path):
    trace = tmp_path / "t.jsonl"
    res = invoke("run", "C4-PA-01", "--model", "policy:steady", "--budget", "tool_calls=2", "--trace", str(trace))
    assert res.exit_code == 3
    assert "status budget_exceeded" in res.output
    assert "已完成：" in res.output and "未完成：" in res.output and "原因：" in res.output
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert events[0]["type"] == "run_started" and events[-1]["status"] == "budget_exceeded"
    assert sum(1 for e in events if e["type"] == "tool_call") == 3     # the whole history is kept


def test_run_clean_and_loop_exit_codes():
    assert invoke("run", "C4-PA-02", "--model", "policy:steady").exit_code == 0
    res = invoke("run", "C4-LD-01", "--model", "policy:stubborn", "--guards", "on")
    assert res.exit_code == 3 and "loop_aborted" in res.output
    assert invoke("run", "C4-LD-01", "--model", "policy:stubborn", "--guards", "off", "--max-steps", "5").exit_code == 1


def test_bad_guard_and_budget_specs_are_clean_errors():
    res = invoke("run", "C4-LD-01", "--guards", "loop,teleport")
    assert res.exit_code == 2 and "unknown guard(s) teleport" in res.output
    res = invoke("run", "C4-LD-01", "--budget", "apples=3")
    assert res.exit_code == 2 and "expected key=value pairs" in res.output


def test_guard_check_a_stored_run_by_id(tmp_path):
    db = str(tmp_path / "t.db")
    assert invoke("run", "C4-LD-01", "--model", "policy:stubborn", "--guards", "off", "--max-steps", "8",
                  "--run-id", "loopy", "--store", db).exit_code == 1
    res = invoke("guard-check", "loopy", "--store", db)
    assert res.exit_code == 3 and res.output.startswith("run loopy: policy:stubborn · case C4-LD-01")
    assert "would have stopped this run at step 4" in res.output
    missing = invoke("guard-check", "nope", "--store", db)
    assert missing.exit_code == 2 and "'nope' is neither a file nor a run in" in missing.output


def test_guard_check_says_plainly_what_is_not_a_trace(tmp_path, side_by_side):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    res = invoke("guard-check", str(empty))
    assert res.exit_code == 2 and "empty: not a trace" in res.output
    _, _, out = side_by_side
    res = invoke("guard-check", str(out / "r.json"))             # a results document given by mistake
    assert res.exit_code == 2 and "a results document (tether.results), not a trace" in res.output
    assert len(res.output.strip().splitlines()) <= 3              # one error, not one per line of the file
    assert invoke("guard-check", str(tmp_path / "gone.jsonl")).exit_code == 2
