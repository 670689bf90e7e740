"""Re-score saved results: judge rubric criteria, apply human verdicts, rebuild metrics.

Nothing re-runs an agent. :func:`rescore_results` loads each trial's trace
(relative to the results' ``out_dir``), asks the judge about the rubric
criteria, re-scores with ``score_trajectory(..., judged=...)`` and rebuilds the
case, dimension and failure-mode metrics. :func:`apply_human_verdicts` does
the same with verdicts from a review file, from the stored criterion results
(no trace needed).

Precedence per criterion: a human verdict, then a fresh LLM verdict, then a
verdict already stored (LLM or human), then ``unjudged``. Human verdicts are
sticky: a later LLM re-scoring keeps them.

The results gain a few fields (all with defaults, so older documents load):

* per trial: ``conflicts`` (a judge passed a criterion while an automatic
  check failed) and ``judge_samples`` (criterion id -> each sample's verdict);
* per run: ``judged`` (criterion results decided by counters, the LLM, a
  human, or nobody yet), ``judge``, ``judge_samples``, ``judge_agreement``
  (mean agreement of the LLM-judged criteria) and ``conflicts``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable, Iterable, Mapping

from pydantic import BaseModel, Field

from ..errors import UsageError
from ..events import RunFinished, Trajectory
from ..models import Model
from ..status import TerminalStatus
from .case import Case
from .judge import DEFAULT_CACHE_DIR, Conflict, Judge, JudgeRecord, as_judge, find_conflicts
from .metrics import attribute, case_result, counters, dimension_metrics, failure_modes
from .results import CaseResult, ModelRunResult, Results, TrialResult
from .scoring import CriterionResult, TrialScore, Verdict, combine, score_criterion, score_trajectory

__all__ = [
    "HumanVerdict",
    "JudgedCounts",
    "ScoredCaseResult",
    "ScoredResults",
    "ScoredRunResult",
    "ScoredTrialResult",
    "apply_human_verdicts",
    "rescore_results",
    "trace_dir",
]


# -- the results document, with judging fields --------------------------------------
class ScoredTrialResult(TrialResult):
    conflicts: list[Conflict] = Field(default_factory=list)
    judge_samples: dict[str, list[str]] = Field(default_factory=dict)


class ScoredCaseResult(CaseResult):
    trials: list[ScoredTrialResult]


class JudgedCounts(BaseModel):
    """Criterion results of a run (over every trial), by who decided them."""

    auto: int = 0        # automatic checks
    llm: int = 0         # the LLM judge
    human: int = 0       # a human reviewer
    unjudged: int = 0    # rubric criteria nobody decided yet


class ScoredRunResult(ModelRunResult):
    cases: list[ScoredCaseResult]
    judged: JudgedCounts = Field(default_factory=JudgedCounts)
    judge: str | None = None              # "llm:<model>" of the last LLM scoring
    judge_samples: int | None = None
    judge_agreement: float | None = None  # mean agreement of the LLM-judged criteria
    conflicts: int = 0


class ScoredResults(Results):
    runs: list[ScoredRunResult]


class HumanVerdict(BaseModel):
    verdict: Verdict
    reason: str = ""


# Keyed (model, guards, case_id, trial) -> criterion id -> verdict
HumanVerdicts = Mapping[tuple[str, str, str, int], Mapping[str, HumanVerdict]]
ProgressFn = Callable[[str, str, int], None]


# -- helpers ------------------------------------------------------------------------
def trace_dir(results: Results, results_path: str | Path | None = None) -> Path | None:
    """Where the trial traces are: ``out_dir`` as written, else relative to the results file."""
    if not results.out_dir:
        return None
    base = Path(results.out_dir)
    if base.is_absolute() or base.exists() or results_path is None:
        return base
    beside = Path(results_path).resolve().parent / base
    return beside if beside.exists() else base


def _case_index(results: Results, cases: Iterable[Case] | Mapping[str, Case]) -> dict[str, Case]:
    index = dict(cases) if isinstance(cases, Mapping) else {c.id: c for c in cases}
    missing = sorted({c.case_id for run in results.runs for c in run.cases} - set(index))
    if missing:
        raise UsageError(f"no case definition for {', '.join(missing)}: the results were made with other cases; "
                         "point at them (tether: --cases DIR)")
    return index


def _stub_trajectory(trial: TrialResult) -> Trajectory:
    """Enough of a trajectory for attribution when the trace is not needed."""
    try:
        status = TerminalStatus(trial.status)
    except ValueError:
        status = TerminalStatus.UNKNOWN
    return Trajectory([RunFinished(status=status, reply=trial.reply, steps=trial.counters.steps, error=trial.error)])


def _human_result(criterion_id: str, spec, hv: HumanVerdict, prior: CriterionResult | None) -> CriterionResult:
    kind = "judge" if spec.kind == "judge" else "auto"
    evidence = f"human: {hv.reason.strip() or '(no reason given)'}"
    if prior is not None and prior.judged_by != "human" and prior.verdict != Verdict.UNJUDGED:
        evidence += f" (was {prior.verdict}{' by ' + prior.judged_by if prior.judged_by else ''}: {prior.evidence[:120]})"
    return CriterionResult(id=criterion_id, kind=kind, check=spec.check, verdict=hv.verdict,
                           value=prior.value if prior is not None and kind == "auto" else None,
                           expected=prior.expected if prior is not None else getattr(spec, "pass_when", ""),
                           evidence=evidence, judged_by="human")


def _rescore_trial(case: Case, trial: TrialResult, trajectory: Trajectory | None,
                   llm: Mapping[str, JudgeRecord] | None, human: Mapping[str, HumanVerdict] | None) -> ScoredTrialResult:
    prior = {c.id: c for c in trial.criteria}
    specs = {c.id: c for c in case.criteria}
    humans = {cid: cr for cid, cr in prior.items() if cr.judged_by == "human" and cid in specs}
    for cid, hv in (human or {}).items():
        humans[cid] = _human_result(cid, specs[cid], hv, prior.get(cid))
    prior_samples = getattr(trial, "judge_samples", {}) or {}
    samples: dict[str, list[str]] = {}
    judged: dict[str, CriterionResult] = {}
    for spec in case.judge_criteria:
        if spec.id in humans:
            judged[spec.id] = humans[spec.id]
        elif llm and spec.id in llm:
            judged[spec.id] = llm[spec.id].to_result(spec)
            samples[spec.id] = llm[spec.id].sample_verdicts
        elif spec.id in prior and (prior[spec.id].judged_by or "").startswith("llm:"):
            judged[spec.id] = prior[spec.id]
            if spec.id in prior_samples:
                samples[spec.id] = prior_samples[spec.id]

    t = trajectory if trajectory is not None else _stub_trajectory(trial)
    if trajectory is not None:
        score = score_trajectory(case, trajectory, judged=judged)
        results = list(score.criteria)
        auto_verdict = score.auto_verdict
        cnt = counters(trajectory)
    else:
        results = []
        for spec in case.criteria:
            if spec.id in judged:
                results.append(judged[spec.id])
            elif spec.id in prior and prior[spec.id].judged_by != "human":
                results.append(prior[spec.id])
            else:
                results.append(score_criterion(spec, t))
        # the counters' own view: human decisions never change auto_verdict
        auto_verdict = trial.auto_verdict
        cnt = trial.counters
    # Human verdicts on automatic criteria (an unclear count a reviewer decided)
    # replace the counter's verdict in the trial verdict; auto_verdict keeps the
    # counters' own view.
    results = [humans[r.id] if r.kind == "auto" and r.id in humans else r for r in results]
    verdict = combine(r.verdict for r in results)
    score = TrialScore(verdict=verdict, auto_verdict=auto_verdict, criteria=results)
    base = trial.model_dump(exclude={"conflicts", "judge_samples"})
    base.update(verdict=verdict, auto_verdict=auto_verdict, criteria=results, counters=cnt,
                attribution=None if trial.simulator_fault else attribute(case, trial.trial, score, t, cnt))
    return ScoredTrialResult.model_validate({**base, "conflicts": find_conflicts(case, results),
                                             "judge_samples": samples})


def _rebuild(results: Results, index: Mapping[str, Case],
             trials: Mapping[tuple[int, str, int], ScoredTrialResult], *,
             judge: Judge | None = None) -> ScoredResults:
    runs = []
    for ri, run in enumerate(results.runs):
        pairs = []
        for c in run.cases:
            case = index[c.case_id]
            scored = [trials[(ri, c.case_id, t.trial)] for t in c.trials]
            base = case_result(case, scored)
            pairs.append((case, ScoredCaseResult(**{k: getattr(base, k) for k in CaseResult.model_fields
                                                    if k != "trials"}, trials=scored)))
        case_results = [r for _, r in pairs]
        prior = run if isinstance(run, ScoredRunResult) else None
        runs.append(_summarize(ScoredRunResult(
            model=run.model, guards=run.guards, trials=run.trials, dimensions=dimension_metrics(pairs),
            failure_modes=failure_modes(case_results), cases=case_results,
            judge=judge.label if judge else (prior.judge if prior else None),
            judge_samples=judge.samples if judge else (prior.judge_samples if prior else None),
        )))
    return ScoredResults(suite=results.suite, created=results.created, out_dir=results.out_dir, runs=runs)


def _summarize(run: ScoredRunResult) -> ScoredRunResult:
    counts = JudgedCounts()
    agreements: list[float] = []
    conflicts = 0
    for c in run.cases:
        for t in c.trials:
            conflicts += len(t.conflicts)
            for cr in t.criteria:
                if cr.judged_by == "human":
                    counts.human += 1
                elif (cr.judged_by or "").startswith("llm:"):
                    counts.llm += 1
                    if isinstance(cr.value, (int, float)):
                        agreements.append(float(cr.value))
                elif cr.verdict == Verdict.UNJUDGED:
                    counts.unjudged += 1
                else:
                    counts.auto += 1
    run.judged = counts
    run.conflicts = conflicts
    run.judge_agreement = round(sum(agreements) / len(agreements), 4) if agreements else None
    return run


# -- the two entry points -----------------------------------------------------------
async def rescore_results(results: Results, cases: Iterable[Case] | Mapping[str, Case],
                          judge: Model | Judge | None = None, samples: int = 1, out_dir: str | Path | None = None,
                          *, cache_dir: str | Path | None = DEFAULT_CACHE_DIR, concurrency: int = 4,
                          progress: ProgressFn | None = None) -> ScoredResults:
    """Re-score every trial of ``results`` from its saved trace.

    ``judge``: a model (or a configured :class:`Judge`) for the rubric criteria;
    ``None`` re-scores the automatic criteria only and keeps stored verdicts.
    ``out_dir``: where the traces are (default: ``results.out_dir``).
    ``cache_dir``: the judge cache (``None``: no cache). Returns new results;
    the input is not modified.
    """
    index = _case_index(results, cases)
    j = as_judge(judge, samples, cache_dir) if judge is not None else None
    if j is not None and judge is not None and not isinstance(judge, Judge):
        j.concurrency = concurrency
    base = Path(out_dir) if out_dir is not None else (Path(results.out_dir) if results.out_dir else None)
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(ri: int, run: ModelRunResult, c: CaseResult, trial: TrialResult):
        case = index[c.case_id]
        if trial.trace is None or base is None:
            raise UsageError(f"{run.model} {c.case_id} trial {trial.trial}: no saved trace to re-score "
                             "(run the evaluation with an output directory)")
        path = base / trial.trace
        if not path.exists():
            raise UsageError(f"trace not found: {path} (traces are looked up under {base}; "
                             "pass the directory the evaluation wrote them to)")
        async with sem:
            t = Trajectory.load(path)
            records = await j.judge_trial(case, t) if j is not None and case.judge_criteria else None
        scored = _rescore_trial(case, trial, t, records, None)
        if progress:
            progress(run.model, c.case_id, trial.trial)
        return (ri, c.case_id, trial.trial), scored

    jobs = [one(ri, run, c, t) for ri, run in enumerate(results.runs) for c in run.cases for t in c.trials]
    done = dict(await asyncio.gather(*jobs))
    return _rebuild(results, index, done, judge=j)


def apply_human_verdicts(results: Results, cases: Iterable[Case] | Mapping[str, Case],
                         verdicts: HumanVerdicts) -> ScoredResults:
    """Record human verdicts (``judged_by: human``) and rebuild the metrics.

    ``verdicts``: (model, guards, case id, trial) -> criterion id -> :class:`HumanVerdict`.
    Works from the stored criterion results; no trace is needed.
    """
    index = _case_index(results, cases)
    done: dict[tuple[int, str, int], ScoredTrialResult] = {}
    for ri, run in enumerate(results.runs):
        for c in run.cases:
            case = index[c.case_id]
            for trial in c.trials:
                human = verdicts.get((run.model, run.guards, c.case_id, trial.trial))
                unknown = sorted(set(human or ()) - {cr.id for cr in case.criteria})
                if unknown:
                    raise UsageError(f"{c.case_id} has no criterion {', '.join(unknown)}")
                done[(ri, c.case_id, trial.trial)] = _rescore_trial(case, trial, None, None, human)
    return _rebuild(results, index, done)
