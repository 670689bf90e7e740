"""Statistics: estimators and tests checked against values computed by hand or by scipy's definitions."""

import math

import pytest

from tether.evals.stats import (mcnemar_exact, paired_bootstrap, paired_test, pass_at_k, pass_hat_k, trials_needed,
                                wilson)


def test_pass_at_k_matches_the_definition():
    # 5 trials, 2 passed: pass@1 = 0.4; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 4, 2) == 1.0          # fewer than k failures: some draw of k always passes
    assert pass_at_k(5, 0, 3) == 0.0


def test_pass_hat_k_is_all_k_pass():
    assert pass_hat_k(5, 5, 5) == 1.0
    assert pass_hat_k(5, 4, 5) == 0.0
    assert pass_hat_k(5, 4, 2) == pytest.approx(math.comb(4, 2) / math.comb(5, 2))   # 0.6
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)


def test_wilson_interval():
    iv = wilson(8, 10)
    assert iv.rate == 0.8
    assert iv.low == pytest.approx(0.4902, abs=1e-3) and iv.high == pytest.approx(0.9433, abs=1e-3)
    zero = wilson(0, 10)
    assert zero.low == 0.0 and zero.high == pytest.approx(0.2775, abs=1e-3)   # not [0, 0] like the normal interval
    assert wilson(0, 0) is None


def test_mcnemar_exact():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(6, 0) == pytest.approx(2 / 64)            # 0.03125
    assert mcnemar_exact(5, 1) == pytest.approx(2 * 7 / 64)        # 0.21875
    assert mcnemar_exact(3, 3) == 1.0


def test_paired_verdicts_in_plain_words():
    flips_up = [(False, True)] * 6 + [(True, True)] * 6
    assert paired_test(flips_up).verdict == "better"
    assert paired_test([(b, n) for n, b in flips_up]).verdict == "worse"
    small = paired_test([(False, True)] * 2 + [(True, True)] * 10)
    assert small.verdict == "no detectable change at this n" and small.needed and small.needed > 12
    assert "paired" in str(small)


def test_trials_needed_shrinks_as_the_effect_grows():
    assert trials_needed(20, 2, 0) > trials_needed(20, 8, 0)
    assert trials_needed(20, 3, 3) is None


def test_bootstrap_is_seeded_and_brackets_the_mean():
    a = paired_bootstrap([0, 0, 1, 0, 1], [1, 1, 1, 0, 1], seed=1)
    b = paired_bootstrap([0, 0, 1, 0, 1], [1, 1, 1, 0, 1], seed=1)
    assert a == b and a.low <= a.rate <= a.high and a.rate == pytest.approx(0.4)
