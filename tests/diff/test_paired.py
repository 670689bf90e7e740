"""The paired comparison of two evals over the same cases: flips both ways, the
exact test, a verdict in plain words, and unjudged cases left out (never 0 %)."""

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.diff.results import paired_comparison
from tether.evals import load_suite
from tether.evals.metrics import case_result
from tether.evals.results import TrialResult

runner = CliRunner()
CASES = load_suite("c4")


def case(i, verdicts, auto=None):
    trials = [TrialResult(trial=k, verdict=v, auto_verdict=(auto or verdicts)[k], status="completed")
              for k, v in enumerate(verdicts)]
    return case_result(CASES[i], trials)


def test_mcnemar_on_single_trials_lists_flips_both_ways_and_left_out_cases():
    pairs = [(case(i, ["fail"]), case(i, ["pass"])) for i in range(8)]
    pairs += [(case(8, ["pass"]), case(8, ["fail"])), (case(9, ["pass"]), case(9, ["pass"]))]
    pairs += [(case(10, ["unjudged"], ["pass"]), case(10, ["pass"]))]
    p = paired_comparison(pairs, basis="verdict")
    assert p.method == "exact McNemar" and p.cases == 10 and len(p.better) == 8 and p.worse == [CASES[8].id]
    assert p.left_out == [CASES[10].id]
    assert p.p_value == pytest.approx(0.039062, abs=1e-5) and p.verdict == "better" and p.needed is None
    auto = paired_comparison(pairs, basis="automatic verdict")
    assert auto.cases == 11 and auto.left_out == []


def test_too_few_cases_say_so_and_how_many_would_do():
    pairs = [(case(0, ["fail"]), case(0, ["pass"])), (case(1, ["pass"]), case(1, ["pass"]))]
    p = paired_comparison(pairs, basis="verdict")
    assert p.verdict == "no detectable change at this n" and p.p_value == 1.0 and p.needed > 2


def test_several_trials_use_the_bootstrap_and_the_sign_test():
    pairs = [(case(i, ["fail", "fail", "pass"]), case(i, ["pass", "pass", "pass"])) for i in range(7)]
    p = paired_comparison(pairs, basis="verdict")
    assert p.method == "paired bootstrap" and p.verdict == "better" and p.interval[0] > 0
    few = paired_comparison(pairs[:2], basis="verdict")     # the bootstrap alone would say better
    assert few.interval[0] > 0 and few.verdict == "no detectable change at this n" and few.needed


@pytest.mark.slow      # four evals of every case; the default run checks the printed test in test_diff_cli.py
def test_diff_prints_the_paired_test(tmp_path):
    for model, name in (("policy:stubborn", "a.json"), ("policy:steady", "b.json")):
        res = runner.invoke(app, ["eval", "c4", "--model", model, "--trials", "2", "--json", str(tmp_path / name),
                                  "--store", str(tmp_path / "t.db"), "-q"], catch_exceptions=False)
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-q"],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "paired test (automatic verdicts, 15 cases): better" in out and "exact sign test over cases p =" in out
    assert "better in new (14): C4-AR-01, C4-AR-02" in out and "worse in new (0): none" in out
    assert "paired test (verdicts, 2 cases): no detectable change at this n" in out
    assert "left out, unjudged or error on a side (14)" in out and "would need about" in out
    assert "-> unjudged" in out and "-> n/a" not in out
