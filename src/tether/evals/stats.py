"""Statistics for eval results: is a change real or noise?

* :func:`pass_at_k` / :func:`pass_hat_k`: the unbiased estimators over ``n``
  trials of which ``c`` passed (Chen et al. 2021 for pass@k: the chance that
  at least one of k trials drawn without replacement passes; pass^k, the
  chance that all k pass, as tau-bench defines it: C(c, k) / C(n, k)).
* :func:`wilson`: the Wilson score interval of a rate (good at small n and
  at 0 % / 100 %, where the normal interval collapses).
* :func:`mcnemar_exact`: the exact (binomial) McNemar test on paired
  outcomes: only the cases that flipped carry information.
* :func:`paired_bootstrap`: a seeded bootstrap of the difference in pass
  rate over cases, for when trials per case differ or rates are not 0/1.
* :func:`trials_needed`: how many paired cases a difference of a given size
  would need to be detected (McNemar, normal approximation), for the "no
  detectable change at this n" verdict.

Pure functions of plain numbers, no dependencies beyond the standard library.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` trials with ``c`` passes (1 - C(n-c, k) / C(n, k))."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: the chance that k trials drawn from the n all pass (C(c, k) / C(n, k))."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n) or not (1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")


@dataclass(frozen=True)
class Interval:
    rate: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{self.rate:.0%} [{self.low:.0%}, {self.high:.0%}] (n={self.n})"


def wilson(successes: int, n: int, *, z: float = 1.959964) -> Interval | None:
    """The Wilson score interval (95 % by default); None when n is 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside 0..{n}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half), n)


@dataclass(frozen=True)
class PairedTest:
    """Paired comparison of two evals over the same cases."""

    n: int                   # paired cases
    better: int              # failed in base, passed in new
    worse: int               # passed in base, failed in new
    p_value: float           # two-sided exact McNemar
    verdict: str             # "better" | "worse" | "no detectable change at this n"
    needed: int | None = None  # paired cases needed to detect the observed difference (when not significant)

    def __str__(self) -> str:
        text = (f"{self.verdict}: {self.better} case(s) got better, {self.worse} got worse, "
                f"{self.n} paired; exact McNemar p = {self.p_value:.3g}")
        if self.needed:
            text += f"; a difference this size would need about {self.needed} paired cases"
        return text


def mcnemar_exact(better: int, worse: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of ``better`` vs ``worse`` flips at p = 0.5."""
    flips = better + worse
    if flips == 0:
        return 1.0
    k = min(better, worse)
    tail = sum(math.comb(flips, i) for i in range(k + 1)) / 2 ** flips
    return min(1.0, 2 * tail)


def paired_test(pairs: Sequence[tuple[bool, bool]], *, alpha: float = 0.05) -> PairedTest:
    """(base passed, new passed) per case -> the paired verdict in plain words."""
    better = sum(1 for b, n in pairs if not b and n)
    worse = sum(1 for b, n in pairs if b and not n)
    p = mcnemar_exact(better, worse)
    if p < alpha:
        verdict = "better" if better > worse else "worse"
        needed = None
    else:
        verdict = "no detectable change at this n"
        needed = trials_needed(len(pairs), better, worse, alpha=alpha) if better != worse else None
    return PairedTest(len(pairs), better, worse, p, verdict, needed)


def trials_needed(n: int, better: int, worse: int, *, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Paired cases needed to detect the observed flip rates with the exact McNemar
    test at ``alpha`` with ``power``; None when there is no difference to detect.
    The normal approximation (Connor 1987) sizes it; up to a few hundred cases the
    exact test's power is computed (the approximation is far too low when every
    flip goes one way: 2 of 2 better asks for 4 cases, the exact test needs 6)."""
    if n <= 0 or better == worse:
        return None
    p10, p01 = better / n, worse / n
    pd, diff = p10 + p01, abs(p10 - p01)
    za = _z(1 - alpha / 2)
    zb = _z(power)
    approx = math.ceil((za * math.sqrt(pd) + zb * math.sqrt(max(pd - diff * diff, 1e-12))) ** 2 / (diff * diff))
    if approx > 300:
        return approx
    lo, hi = 1, max(4 * approx, 64)
    if _mcnemar_power(hi, p10, p01, alpha) < power:
        return approx
    while lo < hi:
        mid = (lo + hi) // 2
        if _mcnemar_power(mid, p10, p01, alpha) >= power:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _mcnemar_power(m: int, p10: float, p01: float, alpha: float) -> float:
    """The exact McNemar test's power over ``m`` paired cases whose outcomes flip
    one way with chance p10 and the other with p01."""
    pd = p10 + p01
    q = p10 / pd
    total = 0.0
    for d in range(1, m + 1):
        # rejection region: the smaller count at most k, with 2 * P(Bin(d, .5) <= k) < alpha
        k, tail = -1, 0.0
        while True:
            step = math.comb(d, k + 1) / 2 ** d
            if 2 * (tail + step) >= alpha or k + 1 > d // 2:
                break
            k, tail = k + 1, tail + step
        if k < 0:
            continue
        p_d = math.comb(m, d) * pd ** d * (1 - pd) ** (m - d)
        reject = sum(math.comb(d, b) * (q ** b * (1 - q) ** (d - b) + (1 - q) ** b * q ** (d - b))
                     for b in range(k + 1))
        total += p_d * reject
    return total


def _z(q: float) -> float:
    """The standard normal quantile, by bisection on erf (exact enough, no scipy)."""
    lo, hi = -10.0, 10.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def paired_bootstrap(base: Sequence[float], new: Sequence[float], *, samples: int = 2000,
                     seed: int = 0) -> Interval:
    """A 95 % bootstrap interval of mean(new - base) over paired cases (per-case pass rates)."""
    if len(base) != len(new) or not base:
        raise ValueError("need two non-empty sequences of the same length")
    diffs = [n - b for b, n in zip(base, new)]
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(samples))
    return Interval(sum(diffs) / len(diffs), means[int(0.025 * samples)], means[int(0.975 * samples) - 1], len(diffs))
