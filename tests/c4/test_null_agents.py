"""Doing nothing never passes: the three null agents over the whole C4 suite,
guards off and on. Every C4 case's seed Pass line needs an action or specific
content (the table in src/tether/c4/cases/README.md), so none of them may pass
a case's automatic criteria; a case nobody judged reads unjudged, never a rate."""

import json

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.evals import load_suite

NULL_AGENTS = ["policy:mute", "policy:echo", "policy:inventor"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("null")
    args = ["eval", "c4", "--guards", "off", "--guards", "on", "--store", str(tmp / "t.db"),
            "--json", str(tmp / "r.json"), "-q"]
    for m in NULL_AGENTS:
        args += ["--model", m]
    res = CliRunner().invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads((tmp / "r.json").read_text(encoding="utf-8"))


def test_no_null_agent_passes_any_case_automatically(results):
    assert {(r["model"], r["guards"]) for r in results["runs"]} == {(m, g) for m in NULL_AGENTS for g in ("off", "on")}
    passed = [(r["model"], r["guards"], c["case_id"]) for r in results["runs"] for c in r["cases"]
              if c["auto_verdict"] == "pass"]
    assert passed == []
    assert all(len(r["cases"]) == 16 for r in results["runs"])


def test_no_null_agent_gets_a_rate(results):
    """No dimension looks good on automatic criteria (a pass rate above 0, or, for a
    dimension where lower is better such as LD's loop rate, a rate below 1); a
    judge-only case (no automatic criterion) is unjudged, with no rate at all."""
    judge_only = {c.id for c in load_suite("c4") if not any(getattr(cr, "kind", "") == "auto" for cr in c.criteria)}
    assert judge_only == {"C4-PA-03"}
    for run in results["runs"]:
        for dim in run["dimensions"].values():
            best = 1.0 if dim["better"] == "lower" else 0.0
            assert dim["auto_rate"] in (None, best), (run["model"], run["guards"], dim)
        for case in run["cases"]:
            if case["case_id"] in judge_only:
                assert case["verdict"] == "unjudged" and case["pass_at_1"] is None


def test_the_inventor_really_invents_and_never_asks(results):
    runs = [r for r in results["runs"] if r["model"] == "policy:inventor"]
    calls = sum(t["counters"]["tool_calls"] for r in runs for c in r["cases"] for t in c["trials"])
    asked = sum(t["counters"]["questions"] for r in runs for c in r["cases"] for t in c["trials"])
    assert calls > 16 and asked == 0
    for r in results["runs"]:
        if r["model"] != "policy:inventor":
            assert all(t["counters"]["tool_calls"] == 0 for c in r["cases"] for t in c["trials"])
