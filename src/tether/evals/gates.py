"""What ``tether eval`` does after the trials ran, as a library: the judge, the
error budget and the pass-rate floor (:func:`tether.evals.run_suite` takes
``judge=``, ``max_errors=`` and ``fail_under=``; the CLI only parses options).

* :func:`judge_results` decides the rubric criteria of every trial from its
  stored run, and stores the judged document with the eval.
* :func:`check_gates` raises :class:`TooManyErrors` when more trials ended in
  error than ``max_errors`` allows (checked first: an errored trial says
  nothing about the agent), then :class:`FailUnder` when a subject's automatic
  pass rate (cases whose automatic criteria all pass / cases with automatic
  criteria) is below ``fail_under``. Both carry the whole results document.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import TetherError
from .case import Case
from .results import Results


class EvalGateFailed(TetherError):
    """An eval's results did not meet ``max_errors`` or ``fail_under``; ``results`` is the
    whole document, ``lines`` say why, ``exit_code`` is what ``tether eval`` exits with."""

    exit_code = 1

    def __init__(self, results: Results, lines: list[str]):
        self.results = results
        self.lines = lines
        super().__init__("; ".join(lines))


class FailUnder(EvalGateFailed):
    """A subject's automatic pass rate is below ``fail_under`` (tether eval exits 1)."""

    exit_code = 1


class TooManyErrors(EvalGateFailed):
    """More trials ended in error than ``max_errors`` allows (tether eval exits 4)."""

    exit_code = 4


def make_judge(judge: Any, samples: int = 1):
    """A :class:`~tether.evals.judge.Judge` from a Judge, a Model or a model spec."""
    from ..models import resolve_model
    from .judge import Judge

    if judge is None or isinstance(judge, Judge):
        return judge
    return Judge(resolve_model(judge) if isinstance(judge, str) else judge, samples=samples)


async def judge_results(results: Results, cases: Sequence[Case], judge: Any, store: Any) -> Results:
    """Every trial's rubric criteria decided by ``judge`` from its run in ``store``; the
    judged document is stored with the eval."""
    from .rescore import rescore_results
    from .stored import StoreSource

    judged = await rescore_results(results, cases, judge, runs=StoreSource(store))
    if results.eval_id:
        store.finish_eval(results.eval_id, judged.model_dump(mode="json"))
    return judged


def automatic_pass_rate(run: Any) -> float:
    scored = [c for c in run.cases if c.verdict != "error" and any(cr.kind == "auto" for t in c.trials
                                                                    for cr in t.criteria)]
    return sum(1 for c in scored if c.auto_verdict == "pass") / len(scored) if scored else 0.0


def check_gates(results: Results, *, fail_under: float | None = None, max_errors: int | None = None) -> None:
    """Raise :class:`TooManyErrors`, then :class:`FailUnder`, when the results miss them."""
    if max_errors is not None:
        errors = sum(run.errors for run in results.runs)
        if errors > max_errors:
            raise TooManyErrors(results, [f"{errors} trial(s) ended in error (allowed: {max_errors}); their "
                                          f"verdicts and rates are left out: exit {TooManyErrors.exit_code}"])
    if fail_under is not None:
        failing = []
        for run in results.runs:
            rate = automatic_pass_rate(run)
            if rate < fail_under:
                failing.append(f"fail-under: {run.model} (guards {run.guards}): automatic pass rate {rate:.0%} "
                               f"< {fail_under:.0%}")
        if failing:
            raise FailUnder(results, failing)
