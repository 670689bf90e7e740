"""tether stats: the seven numbers on a small store whose values are worked out by hand."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.report.metrics import p95
from tether.store import SQLiteStore

runner = CliRunner()


def _run(db, run_id, status, steps, cost, *, trips=(), approval=False, model="m:a", case="C-1"):
    db.create_run(run_id, model=model, case_id=case)
    events = [{"type": "run_started", "run_id": run_id, "model": model}]
    for guard, rule in trips:
        events.append({"type": "guard_tripped", "step": 1, "guard": guard, "rule": rule, "verdict": "stop",
                       "message": "x"})
    if approval:
        events.append({"type": "approval", "step": 1, "call_id": "c", "tool": "pay", "approval_id": "a1",
                       "action": "requested"})
    if status != "running":
        events.append({"type": "run_finished", "status": status, "steps": steps,
                       "usage": {"input_tokens": 10, "output_tokens": 5, "cost": cost}})
        db.append_events(run_id, list(enumerate(events)))
        db.finish_run(run_id, status, "", "")
    else:
        db.append_events(run_id, list(enumerate(events)))


def small_store(path):
    db = SQLiteStore(path)
    _run(db, "r1", "completed", 2, 0.01)
    _run(db, "r2", "loop_aborted", 4, 0.03, trips=[("loop", "identical")])
    _run(db, "r3", "completed", 3, 0.02, approval=True)                       # asked a human, then completed
    _run(db, "r4", "invented_completion", 1, 0.0, trips=[("result", "result.invented_completion")], model="m:b")
    _run(db, "r5", "error", 7, 0.5, case="C-2")                               # left out of every rate
    _run(db, "r6", "running", 0, 0.0)                                         # still running: left out
    return db


def test_stats_json_by_hand(tmp_path):
    small_store(tmp_path / "s.db")
    res = runner.invoke(app, ["stats", "--json", "--store", str(tmp_path / "s.db")])
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)
    # four finished non-error runs: r1 r2 r3 r4
    assert m["runs"] == 4 and m["errors"] == 1 and m["running"] == 1
    assert m["completion_rate"] == 0.5             # r1, r3 completed
    assert m["steps_mean"] == 2.5                   # (2 + 4 + 3 + 1) / 4
    assert m["steps_p95"] == 4                      # nearest rank: ceil(0.95 * 4) = 4th of 1 2 3 4
    assert m["loop_trigger_rate"] == 0.25           # r2
    assert m["invented_completion_rate"] == 0.25    # r4
    assert m["hitl_rate"] == 0.25                   # r3 (an approval was requested)
    assert m["cost_mean"] == 0.015                  # (0.01 + 0.03 + 0.02 + 0) / 4


def test_stats_filters_and_table(tmp_path):
    small_store(tmp_path / "s.db")
    res = runner.invoke(app, ["stats", "--json", "--model", "m:b", "--store", str(tmp_path / "s.db")])
    m = json.loads(res.output)
    assert m["runs"] == 1 and m["invented_completion_rate"] == 1.0 and m["completion_rate"] == 0.0
    res = runner.invoke(app, ["stats", "--json", "--case", "C-2", "--store", str(tmp_path / "s.db")])
    m = json.loads(res.output)
    assert m["runs"] == 0 and m["errors"] == 1 and m["completion_rate"] is None
    res = runner.invoke(app, ["stats", "--json", "--since", "2999-01-01", "--store", str(tmp_path / "s.db")])
    assert json.loads(res.output)["runs"] == 0
    res = runner.invoke(app, ["stats", "--store", str(tmp_path / "s.db")])
    assert res.exit_code == 0 and "50.0%" in res.output and "1 error run(s)" in res.output
    res = runner.invoke(app, ["stats", "--since", "last week", "--store", str(tmp_path / "s.db")])
    assert res.exit_code == 2 and "--since 'last week'" in res.output


def test_p95_nearest_rank():
    assert p95([]) is None
    assert p95([5]) == 5
    assert p95(list(range(1, 21))) == 19            # ceil(0.95 * 20) = 19th
    assert p95(list(range(1, 101))) == 95


def test_stats_after_an_eval(tmp_path):
    db = tmp_path / "e.db"
    res = runner.invoke(app, ["eval", "c4", "--model", "policy:stubborn", "--guards", "on", "--case", "C4-LD-01", "--trials", "2",
                              "--quiet", "--store", str(db)])
    assert res.exit_code == 0, res.output
    m = json.loads(runner.invoke(app, ["stats", "--json", "--store", str(db)]).output)
    keys = ["completion_rate", "steps_mean", "steps_p95", "loop_trigger_rate", "invented_completion_rate",
            "hitl_rate", "cost_mean"]
    assert all(k in m for k in keys) and m["runs"] == 2
    assert m["loop_trigger_rate"] == 1.0             # the stubborn agent repeats; the loop guard trips every time


def test_an_age_or_a_date_before_1970_means_every_run_not_an_error(tmp_path):
    """`--since` / `--older-than` with an age or a date past what a clock holds (99999999d, 0001-01-01) is
    1970, before every run: `tether store prune --older-than 99999999d` used to prune, then fail on its own
    closing line ("internal error: year -271764 is out of range")."""
    from tether.errors import UsageError
    from tether.report.metrics import parse_since

    assert parse_since("99999999d") == parse_since("0001-01-01") == parse_since("9" * 400 + "d") == 0.0
    assert parse_since("1d", now=86400 * 3) == 86400 * 2
    with pytest.raises(UsageError):
        parse_since("yesterday")
    db = str(tmp_path / "s.db")
    assert CliRunner().invoke(app, ["run", "C4-LD-01", "--model", "policy:steady", "--store", db]).exit_code in (0, 1)
    for age in ("99999999d", "0001-01-01"):
        res = CliRunner().invoke(app, ["store", "prune", "--older-than", age, "--store", db])
        assert res.exit_code == 0 and "pruned 0 run(s) and 0 eval(s) created before 1970-01-01" in res.output, \
            res.output
    res = CliRunner().invoke(app, ["stats", "--since", "99999999d", "--store", db])
    assert res.exit_code == 0 and "1 run(s)" in res.output, res.output
