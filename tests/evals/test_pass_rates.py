"""pass@k / pass^k per case (unbiased, over the decided trials), Wilson intervals,
and unjudged trials that are never counted as failures."""

from tether.evals import load_suite
from tether.evals.metrics import case_result, dimension_metrics
from tether.evals.results import TrialResult
from tether.evals.scoring import Verdict
from tether.evals.stats import pass_at_k, pass_hat_k

CASES = {c.id: c for c in load_suite("c4")}


def trial(k, verdict, auto=None):
    return TrialResult(trial=k, verdict=verdict, auto_verdict=auto or verdict, status="completed")


def test_pass_at_k_and_pass_hat_k_for_every_k():
    case = case_result(CASES["C4-LD-01"], [trial(i, v) for i, v in enumerate("pass pass fail pass fail".split())])
    assert (case.decided, case.passed, case.pass_at_1) == (5, 3, 0.6)
    assert set(case.pass_at_k) == set(case.pass_hat) == {1, 2, 3, 4, 5}
    assert case.pass_at_k[2] == round(pass_at_k(5, 3, 2), 4) == 0.9
    assert case.pass_hat[2] == round(pass_hat_k(5, 3, 2), 4) == 0.3
    assert case.pass_at_k[5] == 1.0 and case.pass_hat[5] == 0.0 == case.pass_hat_k
    low, high = case.interval
    assert 0.2 < low < 0.6 < high < 0.95       # Wilson 95 %


def test_an_unjudged_case_has_no_rate_and_its_automatic_rate():
    case = case_result(CASES["C4-AR-01"], [trial(i, Verdict.UNJUDGED, Verdict.PASS) for i in range(3)])
    assert case.verdict == Verdict.UNJUDGED and case.pass_at_1 is None and case.pass_hat_k is None
    assert case.pass_at_k is None and case.interval is None and case.auto_pass_at_1 == 1.0
    mixed = case_result(CASES["C4-AR-01"], [trial(0, Verdict.UNJUDGED, Verdict.PASS), trial(1, Verdict.PASS)])
    assert (mixed.decided, mixed.pass_at_1) == (1, 1.0)         # the unjudged trial is not a failure


def test_dimension_rates_carry_wilson_intervals():
    pairs = [(CASES[cid], case_result(CASES[cid], [trial(0, v)])) for cid, v in
             (("C4-LD-01", Verdict.PASS), ("C4-LD-02", Verdict.PASS), ("C4-LD-03", Verdict.FAIL))]
    ld = dimension_metrics(pairs)["LD"]
    assert ld.rate == 0.6667 and ld.interval[0] < 0.6667 < ld.interval[1]
    unjudged = [(CASES["C4-DR-01"], case_result(CASES["C4-DR-01"], [trial(0, Verdict.UNJUDGED, Verdict.PASS)]))]
    dr = dimension_metrics(unjudged)["DR"]
    assert dr.rate is None and dr.interval is None and dr.auto_rate == 1.0 and dr.auto_interval[1] == 1.0
