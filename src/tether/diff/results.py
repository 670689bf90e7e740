"""Results diff: two ``tether eval --json`` documents, case by case.

Per case: the verdict change (flips are listed first: regressions, then
improvements), the pass@1 change, and per trial the trajectory diff of the
two runs, read from the store (or a baseline's copy) and checked against the
digests the results pinned. A trial whose run is missing or does not match is
still compared on what the results document holds: terminal status, counters
and criteria; the diff says which run and how to make it available.

Over all the compared cases, a paired comparison (:class:`PairedComparison`)
says whether the change in pass rate is more than noise, on the case verdicts
and on the automatic verdicts.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Literal, Sequence

from pydantic import BaseModel, Field, computed_field

from ..errors import CaseFileError, UsageError
from ..evals.results import CaseResult, Counters, ModelRunResult, Results, TrialResult
from .loading import ResultsFile, load_input, load_results, select_run
from .parts import MetricChange, TerminalDiff, TrajectoryDiff
from .trajectory import diff_terminal, diff_trajectories

__all__ = ["CaseDiff", "PairedComparison", "ResultsDiff", "ResultsFile", "TrialDiff", "diff_results", "load_input",
           "load_results", "paired_comparison"]

VerdictKind = Literal["same", "improved", "regressed", "changed"]
_RANK = {"fail": 0, "unclear": 1, "pass": 2}   # unjudged is not ranked: no judge has spoken


class VerdictChange(BaseModel):
    base: str
    new: str
    kind: VerdictKind = "same"

    def describe(self) -> str:
        return self.base if self.kind == "same" else f"{self.base} -> {self.new}"


def verdict_change(base: str, new: str) -> VerdictChange:
    """``regressed``: toward fail among pass / unclear / fail; ``improved``: the
    reverse; ``changed``: to or from unjudged."""
    if base == new:
        return VerdictChange(base=base, new=new)
    if base in _RANK and new in _RANK:
        return VerdictChange(base=base, new=new, kind="improved" if _RANK[new] > _RANK[base] else "regressed")
    return VerdictChange(base=base, new=new, kind="changed")


class CriterionChange(BaseModel):
    id: str
    base: str | None     # verdict, None when the criterion is absent on that side
    new: str | None


class TrialDiff(BaseModel):
    trial: int
    verdict: VerdictChange
    terminal: TerminalDiff                       # from the results document: always there
    counters: list[MetricChange] = Field(default_factory=list)
    criteria: list[CriterionChange] = Field(default_factory=list)
    trajectory: TrajectoryDiff | None = None     # None when a trace is missing
    missing: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def changed(self) -> bool:
        if self.trajectory is not None:
            return self.trajectory.changed or bool(self.criteria) or self.verdict.kind != "same"
        return bool(self.counters or self.criteria) or self.terminal.changed or self.verdict.kind != "same"


class CaseDiff(BaseModel):
    case_id: str
    title: str = ""
    dimension: str = ""
    verdict: VerdictChange
    auto_verdict: VerdictChange
    pass_at_1: tuple[float | None, float | None]   # None: no scored trial (every trial errored)
    trials: list[TrialDiff] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def flipped(self) -> bool:
        return self.verdict.kind != "same" or self.auto_verdict.kind != "same"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def regressed(self) -> bool:
        return "regressed" in (self.verdict.kind, self.auto_verdict.kind)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def improved(self) -> bool:
        return not self.regressed and "improved" in (self.verdict.kind, self.auto_verdict.kind)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def changed(self) -> bool:
        return self.flipped or bool(self.notes) or any(t.changed for t in self.trials)


class DimensionChange(BaseModel):
    dimension: str
    name: str
    better: str
    base: float | None
    new: float | None
    base_auto: float | None
    new_auto: float | None
    assessment: Literal["better", "worse", "neutral"] = "neutral"


class DiffStats(BaseModel):
    cases: int = 0
    flipped: int = 0
    improved: int = 0
    regressed: int = 0
    with_differences: int = 0
    trials: tuple[int, int] = (1, 1)
    pass_at_1: tuple[float | None, float | None] = (None, None)   # mean over the compared cases


class PairedComparison(BaseModel):
    """Is the change in pass rate over the same cases more than noise?

    ``basis``: the case verdicts (judge and human included), or the automatic
    verdicts only. A case takes part when it is decided on both sides; one
    unjudged (or errored) on either side is listed in ``left_out``, never
    counted as a fail. One trial per case on both sides: the exact McNemar test
    on the cases that flipped. More: the same exact test on the direction each
    case's pass rate moved, and a paired bootstrap of the mean difference in
    per-case pass rate (seeded, 95 %) that must agree with it."""

    basis: Literal["verdict", "automatic verdict"]
    method: Literal["exact McNemar", "paired bootstrap"]
    cases: int = 0                                         # paired cases
    better: list[str] = Field(default_factory=list)        # failed (or lower pass rate) in base, better in new
    worse: list[str] = Field(default_factory=list)
    left_out: list[str] = Field(default_factory=list)      # unjudged or error on a side
    base_rate: float | None = None                         # mean pass rate over the paired cases
    new_rate: float | None = None
    p_value: float | None = None                           # McNemar
    interval: tuple[float, float] | None = None            # bootstrap 95 % interval of new - base
    verdict: str = "no detectable change at this n"        # better | worse | no detectable change at this n
    needed: int | None = None                              # paired cases a difference this size would need


class ResultsDiff(BaseModel):
    base_label: str
    new_label: str
    suite: tuple[str, str]
    cases: list[CaseDiff] = Field(default_factory=list)
    dimensions: list[DimensionChange] = Field(default_factory=list)
    only_in_base: list[str] = Field(default_factory=list)
    only_in_new: list[str] = Field(default_factory=list)
    stats: DiffStats = Field(default_factory=DiffStats)
    paired: list[PairedComparison] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def flipped(self) -> list[CaseDiff]:
        return [c for c in self.cases if c.flipped]


# -- diffing ------------------------------------------------------------------
def diff_results(base: Results | ResultsFile, new: Results | ResultsFile, *,
                 base_run: str | None = None, new_run: str | None = None,
                 base_guards: str | None = None, new_guards: str | None = None,
                 cases: Sequence[str] | None = None) -> ResultsDiff:
    """Compare one run (model x guard stack) of each document, case by case.

    ``base_run`` / ``new_run`` name the model (needed when a document holds
    several runs); ``cases`` are id globs."""
    bf = base if isinstance(base, ResultsFile) else ResultsFile(base)
    nf = new if isinstance(new, ResultsFile) else ResultsFile(new)
    br = select_run(bf.results, base_run, base_guards, side="base")
    nr = select_run(nf.results, new_run, new_guards, side="new")

    def keep(cid: str) -> bool:
        return not cases or any(fnmatch.fnmatch(cid, pat) for pat in cases)

    b_cases = {c.case_id: c for c in br.cases if keep(c.case_id)}
    n_cases = {c.case_id: c for c in nr.cases if keep(c.case_id)}
    out = ResultsDiff(
        base_label=_label(bf, br), new_label=_label(nf, nr), suite=(bf.results.suite, nf.results.suite),
        only_in_base=sorted(set(b_cases) - set(n_cases)), only_in_new=sorted(set(n_cases) - set(b_cases)),
    )
    if bf.results.suite != nf.results.suite:
        out.notes.append(f"suites differ: {bf.results.suite} vs {nf.results.suite}")
    for cid in sorted(set(b_cases) & set(n_cases)):
        bc, nc = b_cases[cid], n_cases[cid]
        cd = CaseDiff(case_id=cid, title=nc.title or bc.title, dimension=nc.dimension,
                      verdict=verdict_change(bc.verdict, nc.verdict),
                      auto_verdict=verdict_change(bc.auto_verdict, nc.auto_verdict),
                      pass_at_1=(bc.pass_at_1, nc.pass_at_1))
        b_trials = {t.trial: t for t in bc.trials}
        n_trials = {t.trial: t for t in nc.trials}
        for k in sorted(set(b_trials) | set(n_trials)):
            if k not in n_trials or k not in b_trials:
                cd.notes.append(f"trial {k} only in the {'base' if k in b_trials else 'new'} run")
                continue
            cd.trials.append(_trial_diff(bf, b_trials[k], nf, n_trials[k]))
        out.cases.append(cd)
    out.cases.sort(key=lambda c: (0 if c.regressed else 1 if c.improved else 2 if c.flipped else 3, c.case_id))
    out.dimensions = _dimensions(br, nr, cases_filtered=bool(cases))
    compared = out.cases
    out.stats = DiffStats(
        cases=len(compared), flipped=sum(c.flipped for c in compared),
        improved=sum(c.improved for c in compared), regressed=sum(c.regressed for c in compared),
        with_differences=sum(c.changed for c in compared), trials=(br.trials, nr.trials),
        pass_at_1=(_mean([c.pass_at_1[0] for c in compared if c.pass_at_1[0] is not None]),
                   _mean([c.pass_at_1[1] for c in compared if c.pass_at_1[1] is not None])),
    )
    pairs = [(b_cases[c.case_id], n_cases[c.case_id]) for c in sorted(compared, key=lambda c: c.case_id)]
    out.paired = [p for p in (paired_comparison(pairs, basis="verdict"),
                              paired_comparison(pairs, basis="automatic verdict")) if p is not None]
    missing = sum(1 for c in compared for t in c.trials if t.trajectory is None)
    if missing:
        out.notes.append(f"{missing} trial(s) compared without their runs (counters, criteria and status only)")
    return out


def _rate(case: CaseResult, basis: str) -> float | None:
    """The case's pass rate on ``basis`` over its decided trials (None: none is
    decided: unjudged or error). From the trials, so older documents work too."""
    field = "verdict" if basis == "verdict" else "auto_verdict"
    decided = [getattr(t, field) for t in case.trials if t.scored and getattr(t, field) != "unjudged"]
    return sum(1 for v in decided if v == "pass") / len(decided) if decided else None


def paired_comparison(pairs: Sequence[tuple[CaseResult, CaseResult]], *, basis: str,
                      alpha: float = 0.05) -> PairedComparison | None:
    """The paired test over the cases decided on both sides (None when no case is
    decided on either side on this basis)."""
    from ..evals.stats import mcnemar_exact, paired_bootstrap, trials_needed

    rates = [(b.case_id, _rate(b, basis), _rate(n, basis), b, n) for b, n in pairs]
    if all(rb is None and rn is None for _, rb, rn, _, _ in rates):
        return None
    decided = [(cid, rb, rn) for cid, rb, rn, _, _ in rates if rb is not None and rn is not None]
    left_out = [cid for cid, rb, rn, _, _ in rates if rb is None or rn is None]
    several = any(len(b.trials) > 1 or len(n.trials) > 1 for b, n in pairs)
    out = PairedComparison(basis=basis, method="paired bootstrap" if several else "exact McNemar",  # type: ignore[arg-type]
                           cases=len(decided), left_out=left_out,
                           better=[cid for cid, rb, rn in decided if rn > rb],
                           worse=[cid for cid, rb, rn in decided if rn < rb])
    if not decided:
        return out
    out.base_rate = round(sum(rb for _, rb, _ in decided) / len(decided), 4)
    out.new_rate = round(sum(rn for _, _, rn in decided) / len(decided), 4)
    # The exact McNemar test on the cases that changed (with several trials per
    # case: the sign test on the direction each case's pass rate moved); with
    # several trials the bootstrap interval of the mean change must agree (it
    # alone is overconfident over a handful of cases).
    out.p_value = round(mcnemar_exact(len(out.better), len(out.worse)), 6)
    significant = out.p_value < alpha
    up = len(out.better) > len(out.worse)
    if several:
        ci = paired_bootstrap([rb for _, rb, _ in decided], [rn for _, _, rn in decided])
        out.interval = (round(ci.low, 4), round(ci.high, 4))
        significant = significant and (ci.low > 0 if up else ci.high < 0)
    if significant:
        out.verdict = "better" if up else "worse"
    else:
        out.needed = trials_needed(len(decided), len(out.better), len(out.worse), alpha=alpha)
    return out


def _trial_diff(bf: ResultsFile, bt: TrialResult, nf: ResultsFile, nt: TrialResult) -> TrialDiff:
    td = TrialDiff(trial=nt.trial, verdict=verdict_change(bt.verdict, nt.verdict),
                   terminal=diff_terminal(bt.status, nt.status),
                   counters=counter_changes(bt.counters, nt.counters), criteria=_criteria(bt, nt))
    trajectories = []
    for side, f, t in (("base", bf, bt), ("new", nf, nt)):
        try:
            trajectories.append(f.trajectory(t))
        except CaseFileError as exc:
            td.missing.append(f"{side}: run {t.run_id} does not load: {exc.problems[0][1]}")
        except UsageError as exc:
            td.missing.append(f"{side}: {exc}")
    if len(trajectories) == 2:
        td.trajectory = diff_trajectories(*trajectories)
    return td


_COUNTER_WORSE_IF_HIGHER = {"retries", "max_identical", "guard_trips", "blocked"}


def counter_changes(base: Counters, new: Counters) -> list[MetricChange]:
    """The results document's counters, assessed as the recovery part does."""
    out = []
    for key, old in base.model_dump().items():
        value = getattr(new, key)
        if value == old:
            continue
        assessment: Any = "neutral"
        if key in _COUNTER_WORSE_IF_HIGHER:
            assessment = "worse" if value > old else "better"
        elif key == "strategies":
            assessment = "better" if value > old else "worse" if new.errors > 0 else "neutral"
        out.append(MetricChange(metric=key, base=old, new=value, assessment=assessment))
    return out


def _criteria(bt: TrialResult, nt: TrialResult) -> list[CriterionChange]:
    b = {c.id: str(c.verdict) for c in bt.criteria}
    n = {c.id: str(c.verdict) for c in nt.criteria}
    return [CriterionChange(id=k, base=b.get(k), new=n.get(k)) for k in list(dict.fromkeys([*b, *n]))
            if b.get(k) != n.get(k)]


def _dimensions(br: ModelRunResult, nr: ModelRunResult, *, cases_filtered: bool) -> list[DimensionChange]:
    out = []
    for dim, bm in br.dimensions.items():
        nm = nr.dimensions.get(dim)
        if nm is None:
            continue
        assessment: Any = "neutral"
        if bm.rate is not None and nm.rate is not None and bm.rate != nm.rate:
            up = nm.rate > bm.rate
            assessment = "better" if up == (bm.better == "higher") else "worse"
        out.append(DimensionChange(dimension=dim, name=bm.name, better=bm.better, base=bm.rate, new=nm.rate,
                                   base_auto=bm.auto_rate, new_auto=nm.auto_rate, assessment=assessment))
    return [] if cases_filtered else out


def _label(f: ResultsFile, run: ModelRunResult) -> str:
    where = f"{f.path} · " if f.path is not None else ""
    return f"{where}{run.model} (guards {run.guards})"


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None
