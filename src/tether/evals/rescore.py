"""Score trials from their runs; re-score saved results; record human verdicts.

Nothing re-runs an agent. :func:`trial_result` scores one run;
:func:`rescore_results` reads each trial's run from the store (checked against
the digest the results pinned, see :mod:`tether.evals.stored`), asks the judge
about the rubric criteria, re-scores and rebuilds the case, dimension and
failure-mode metrics. The judge's requests are appended to the judged run as
events with role ``judge`` (after its ``run_finished``, so the run's digest
does not change and the judge's cost stays apart from the agent's).
:func:`apply_human_verdicts` does the same with verdicts from a review file,
from the stored criterion results (no run needed).

Precedence per criterion: a human verdict, then a fresh LLM verdict, then a
verdict already stored (LLM or human), then ``unjudged``. Human verdicts are
sticky: a later LLM re-scoring keeps them. Every change of a decided verdict
is kept in the criterion's ``history`` (who changed it, when, what it was).

A trial whose run ended ``error``, or whose judge could not answer, has
verdict ``error`` and counts in no verdict or rate.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from pydantic import BaseModel

from ..errors import UsageError
from ..events import ModelDecisionEvent, ModelRequestEvent, RunFinished, Trajectory, message_delta
from ..models import Model
from ..status import TerminalStatus
from .case import Case
from .judge import DEFAULT_CACHE_DIR, Judge, JudgeCall, JudgeRecord, as_judge, find_conflicts
from .metrics import attribute, case_result, counters, dimension_metrics, failure_modes
from .results import CaseResult, JudgedCounts, ModelRunResult, Results, TrialResult
from .scoring import CriterionResult, TrialScore, Verdict, VerdictEdit, combine, score_criterion, score_trajectory
from .stored import RunSource, load_trial, open_runs

__all__ = [
    "HumanVerdict",
    "apply_human_verdicts",
    "rebuild",
    "rescore_results",
    "trial_result",
]


class HumanVerdict(BaseModel):
    verdict: Verdict
    reason: str = ""
    reviewer: str | None = None   # who decided it


# Keyed (model, guards, case_id, trial) -> criterion id -> verdict
HumanVerdicts = Mapping[tuple[str, str, str, int], Mapping[str, HumanVerdict]]
ProgressFn = Callable[[str, str, int], None]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# -- one trial ----------------------------------------------------------------------
def trial_result(case: Case, trajectory: Trajectory, *, trial: int = 0, judged: Mapping[str, CriterionResult] | None = None,
                 simulator_fault: str | None = None, simulator_stop: str | None = None) -> TrialResult:
    """Score one run. A run that ended ``error`` gets verdict ``error`` with no
    criterion results and no attribution: it says nothing about the agent."""
    started, finished = trajectory.started, trajectory.finished
    c = counters(trajectory)
    base: dict[str, Any] = dict(trial=trial, status=str(trajectory.status or "unknown"), reply=trajectory.final_reply,
                                error=finished.error if finished else None, counters=c,
                                run_id=started.run_id if started else None, digest=trajectory.digest(),
                                simulator_fault=simulator_fault, simulator_stop=simulator_stop)
    if finished is not None and finished.status == TerminalStatus.ERROR:
        return TrialResult(**base, verdict=Verdict.ERROR, auto_verdict=Verdict.ERROR,
                           error_kind=finished.error_kind or "harness")
    score = score_trajectory(case, trajectory, judged=dict(judged or {}))
    return TrialResult(**base, verdict=score.verdict, auto_verdict=score.auto_verdict, criteria=score.criteria,
                       attribution=None if simulator_fault else attribute(case, trial, score, trajectory, c),
                       conflicts=find_conflicts(case, score.criteria))


# -- helpers ------------------------------------------------------------------------
def _case_index(results: Results, cases: Iterable[Case] | Mapping[str, Case]) -> dict[str, Case]:
    index = dict(cases) if isinstance(cases, Mapping) else {c.id: c for c in cases}
    missing = sorted({c.case_id for run in results.runs for c in run.cases} - set(index))
    if missing:
        raise UsageError(f"no case definition for {', '.join(missing)}: the results were made with other cases; "
                         "point at them (tether: --cases DIR)")
    return index


def _stub_trajectory(trial: TrialResult) -> Trajectory:
    """Enough of a trajectory for attribution when the run is not needed."""
    try:
        status = TerminalStatus(trial.status)
    except ValueError:
        status = TerminalStatus.UNKNOWN
    return Trajectory([RunFinished(status=status, reply=trial.reply, steps=trial.counters.steps, error=trial.error)])


def with_history(prior: CriterionResult | None, new: CriterionResult, *, at: str) -> CriterionResult:
    """``new``, carrying ``prior``'s history plus an edit when a decided verdict
    changed (its value, or who decided it)."""
    if prior is None:
        return new
    history = list(prior.history)
    decided = prior.judged_by is not None or (prior.kind == "auto" and prior.verdict != Verdict.UNJUDGED)
    if decided and (prior.verdict != new.verdict or prior.decider != new.decider):
        history.append(VerdictEdit(at=at, by=new.decider, previous=prior.verdict, previous_by=prior.decider,
                                   previous_evidence=prior.evidence[:300]))
    return new.model_copy(update={"history": history})


def _human_result(criterion_id: str, spec, hv: HumanVerdict, prior: CriterionResult | None, at: str) -> CriterionResult:
    kind = "judge" if spec.kind == "judge" else "auto"
    new = CriterionResult(id=criterion_id, kind=kind, check=spec.check, verdict=hv.verdict,
                          value=prior.value if prior is not None and kind == "auto" else None,
                          expected=prior.expected if prior is not None else getattr(spec, "pass_when", ""),
                          evidence=f"human: {hv.reason.strip() or '(no reason given)'}", judged_by="human",
                          reviewer=hv.reviewer, judged_at=at)
    return with_history(prior, new, at=at)


def _judge_error(records: Mapping[str, JudgeRecord]) -> tuple[str, str] | None:
    failed = [r for r in records.values() if r.failed]
    if not failed:
        return None
    kind = "infrastructure" if any(r.error_kind == "infrastructure" for r in failed) else "model"
    return kind, f"judge {failed[0].judge}: {failed[0].samples[0].reason}"


def _rescore_trial(case: Case, trial: TrialResult, trajectory: Trajectory | None,
                   llm: Mapping[str, JudgeRecord] | None, human: Mapping[str, HumanVerdict] | None,
                   *, at: str) -> TrialResult:
    if trajectory is not None and trajectory.status == TerminalStatus.ERROR:
        return trial_result(case, trajectory, trial=trial.trial, simulator_fault=trial.simulator_fault,
                            simulator_stop=trial.simulator_stop)
    if trajectory is None and trial.errored and not trial.criteria:   # the run itself failed
        if human:
            raise UsageError(f"{case.id} trial {trial.trial} ended in error ({trial.error_kind}): "
                             "it has no verdicts to review")
        return trial
    prior = {c.id: c for c in trial.criteria}
    specs = {c.id: c for c in case.criteria}
    humans = {cid: cr for cid, cr in prior.items() if cr.judged_by == "human" and cid in specs}
    for cid, hv in (human or {}).items():
        humans[cid] = _human_result(cid, specs[cid], hv, prior.get(cid), at)
    judged: dict[str, CriterionResult] = {}
    for spec in case.judge_criteria:
        if spec.id in humans:
            judged[spec.id] = humans[spec.id]
        elif llm and spec.id in llm and not llm[spec.id].failed:
            judged[spec.id] = with_history(prior.get(spec.id), llm[spec.id].to_result(spec, at=at), at=at)
        elif llm and spec.id in llm:
            judged[spec.id] = llm[spec.id].to_result(spec, at=at)
        elif spec.id in prior and (prior[spec.id].judged_by or "").startswith("llm:"):
            judged[spec.id] = prior[spec.id]

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
        if auto_verdict == Verdict.ERROR:     # its judge had failed: the counters' view again
            autos = [r.verdict for r in results if r.kind == "auto"]
            auto_verdict = combine(autos) if autos else Verdict.UNJUDGED
        cnt = trial.counters
    # Human verdicts on automatic criteria (an unclear count a reviewer decided)
    # replace the counter's verdict in the trial verdict; auto_verdict keeps the
    # counters' own view.
    results = [humans[r.id] if r.kind == "auto" and r.id in humans else r for r in results]
    verdict = combine(r.verdict for r in results)
    score = TrialScore(verdict=verdict, auto_verdict=auto_verdict, criteria=results)
    update: dict[str, Any] = dict(verdict=verdict, auto_verdict=auto_verdict, criteria=results, counters=cnt,
                                  error=None, error_kind=None,
                                  attribution=None if trial.simulator_fault else attribute(case, trial.trial, score, t, cnt),
                                  conflicts=find_conflicts(case, results))
    if trajectory is not None:
        update["digest"] = trajectory.digest()
    failure = _judge_error(llm or {})
    if failure is not None:   # the judge could not answer: no verdict about the agent
        update.update(verdict=Verdict.ERROR, auto_verdict=Verdict.ERROR, error_kind=failure[0], error=failure[1],
                      attribution=None, conflicts=[])
    return trial.model_copy(update=update)


def rebuild(results: Results, index: Mapping[str, Case], trials: Mapping[tuple[int, str, int], TrialResult], *,
            judge: Judge | None = None) -> Results:
    """New results with these trials: case, dimension, failure-mode and judging summaries recomputed."""
    runs = []
    for ri, run in enumerate(results.runs):
        pairs = []
        for c in run.cases:
            case = index[c.case_id]
            scored = [trials.get((ri, c.case_id, t.trial), t) for t in c.trials]
            pairs.append((case, case_result(case, scored)))
        case_results = [r for _, r in pairs]
        runs.append(summarize(ModelRunResult(
            model=run.model, guards=run.guards, trials=run.trials, dimensions=dimension_metrics(pairs),
            failure_modes=failure_modes(case_results), cases=case_results,
            judge=judge.label if judge else run.judge,
            judge_samples=judge.samples if judge else run.judge_samples,
        )))
    return results.model_copy(update={"runs": runs})


def summarize(run: ModelRunResult) -> ModelRunResult:
    """Who decided the criteria, the judge's mean agreement, conflicts."""
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
                    agreement = cr.agreement if cr.agreement is not None else cr.value
                    if isinstance(agreement, (int, float)):
                        agreements.append(float(agreement))
                elif cr.verdict == Verdict.UNJUDGED:
                    counts.unjudged += 1
                else:
                    counts.auto += 1
    run.judged = counts
    run.conflicts = conflicts
    run.judge_agreement = round(sum(agreements) / len(agreements), 4) if agreements else None
    return run


# -- the judge's requests, as events of the judged run --------------------------------
def judge_events(trajectory: Trajectory, calls: list[JudgeCall]) -> list:
    """Append the judge's requests to ``trajectory`` (role ``judge``, messages as a
    delta against its previous judge request) and return the new events."""
    previous = next((msgs for _, msgs in reversed(trajectory.requests(role="judge"))), [])
    finished = trajectory.finished
    at = finished.at_ms if finished is not None else 0.0
    new = []
    for call in sorted(calls, key=lambda c: (c.criterion, c.sample)):
        messages = list(call.request.messages)
        keep, added = message_delta(previous, messages)
        previous = messages
        req = ModelRequestEvent(step=call.sample, message_count=len(messages), tools=[],
                                request_hash=call.request.canonical_hash(), role="judge", model=call.model,
                                keep=keep, messages=added, params={"criterion": call.criterion, "sample": call.sample})
        d = call.response.decision
        dec = ModelDecisionEvent(step=call.sample, kind=d.kind, tool_calls=d.tool_calls, text=d.text,
                                 usage=call.response.usage, role="judge", latency_ms=round(call.latency_ms, 3))
        for event in (req, dec):
            event.at_ms = at
            new.append(trajectory.append(event))
    return new


# -- the two entry points -----------------------------------------------------------
async def rescore_results(results: Results, cases: Iterable[Case] | Mapping[str, Case],
                          judge: Model | Judge | None = None, samples: int = 1, *,
                          runs: RunSource | None = None, results_path: str | Path | None = None,
                          store: Any = None, cache_dir: str | Path | None = DEFAULT_CACHE_DIR, concurrency: int = 4,
                          progress: ProgressFn | None = None) -> Results:
    """Re-score every trial of ``results`` from its stored run.

    ``judge``: a model (or a configured :class:`Judge`) for the rubric criteria;
    ``None`` re-scores the automatic criteria only and keeps stored verdicts.
    ``runs`` / ``store``: where the runs are (default: the store the results
    name; see :func:`tether.evals.stored.open_runs`). ``cache_dir``: the judge
    cache (``None``: no cache). Returns new results; the input is not modified.
    Raises UsageError when a run is missing or is not the one the results pinned.
    """
    index = _case_index(results, cases)
    j = as_judge(judge, samples, cache_dir) if judge is not None else None
    if j is not None and judge is not None and not isinstance(judge, Judge):
        j.concurrency = concurrency
    source = runs if runs is not None else open_runs(results, results_path, store=store)
    sem = asyncio.Semaphore(max(1, concurrency))
    at = _now()

    async def one(ri: int, run: ModelRunResult, c: CaseResult, trial: TrialResult):
        case = index[c.case_id]
        async with sem:
            t = load_trial(source, trial, label=f"{run.model} {c.case_id} ")
            records = None
            if j is not None and case.judge_criteria and t.status != TerminalStatus.ERROR:
                calls: list[JudgeCall] = []
                records = await j.judge_trial(case, t, on_request=calls.append)
                source.append_judge_events(trial.run_id or "", judge_events(t, calls))
        scored = _rescore_trial(case, trial, t, records, None, at=at)
        if progress:
            progress(run.model, c.case_id, trial.trial)
        return (ri, c.case_id, trial.trial), scored

    jobs = [one(ri, run, c, t) for ri, run in enumerate(results.runs) for c in run.cases for t in c.trials]
    done = dict(await asyncio.gather(*jobs))
    return rebuild(results, index, done, judge=j)


def apply_human_verdicts(results: Results, cases: Iterable[Case] | Mapping[str, Case],
                         verdicts: HumanVerdicts) -> Results:
    """Record human verdicts (``judged_by: human``, with the reviewer and when)
    and rebuild the metrics. ``verdicts``: (model, guards, case id, trial) ->
    criterion id -> :class:`HumanVerdict`. Works from the stored criterion
    results; no run is needed."""
    index = _case_index(results, cases)
    at = _now()
    done: dict[tuple[int, str, int], TrialResult] = {}
    for ri, run in enumerate(results.runs):
        for c in run.cases:
            case = index[c.case_id]
            for trial in c.trials:
                human = verdicts.get((run.model, run.guards, c.case_id, trial.trial))
                if not human:
                    continue
                unknown = sorted(set(human) - {cr.id for cr in case.criteria})
                if unknown:
                    raise UsageError(f"{c.case_id} has no criterion {', '.join(unknown)}")
                done[(ri, c.case_id, trial.trial)] = _rescore_trial(case, trial, None, None, human, at=at)
    return rebuild(results, index, done)
