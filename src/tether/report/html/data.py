"""The report's data: a results document with its runs loaded, and the
numbers each page shows (rates with Wilson intervals, pass^k, who decided
the verdicts, errors apart, what the guards changed)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ...evals.results import CaseResult, ModelRunResult, Results, TrialResult
from ...evals.stats import pass_hat_k, wilson
from ...evals.stored import RunMissing
from ...events import Trajectory
from .. import metrics
from .transcript import Transcript, build, language


def slug(*parts: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", "-".join(str(p) for p in parts)).strip("_")


def errored(t: TrialResult) -> bool:
    return t.errored


def scored(t: TrialResult) -> bool:
    return t.scored


@dataclass
class TrialView:
    key: str
    run: ModelRunResult
    case: CaseResult
    trial: TrialResult
    trajectory: Trajectory | None = None
    missing: str | None = None            # why the run could not be read
    _transcript: Transcript | None = None

    @property
    def run_id(self) -> str | None:
        return self.trial.run_id

    @property
    def transcript(self) -> Transcript | None:
        if self._transcript is None and self.trajectory is not None:
            self._transcript = build(self.trajectory)
        return self._transcript

    @property
    def cost(self) -> float | None:
        return self.trajectory.usage().cost if self.trajectory is not None else None

    @property
    def tokens(self) -> int | None:
        """The agent's input + output tokens (the transcript's totals, without building the transcript)."""
        if self.trajectory is None:
            return None
        usage = self.trajectory.usage()
        return usage.input_tokens + usage.output_tokens


TrajectoryLoader = Callable[[ModelRunResult, CaseResult, TrialResult], Trajectory]


def default_loader(results: Results, results_path: str | Path | None, store: Any = None) -> TrajectoryLoader:
    """Read each trial's run from the store the results name (or ``store``),
    checked against the digest the results pinned (:mod:`tether.evals.stored`)."""
    from ...evals.stored import load_trial, open_runs

    source: Any = None

    def load(run: ModelRunResult, case: CaseResult, trial: TrialResult) -> Trajectory:
        nonlocal source
        if source is None:
            source = open_runs(results, results_path, store=store)
        return load_trial(source, trial, label=f"{run.model} · guards {run.guards} · {case.case_id} ")

    return load


@dataclass
class Report:
    results: Results
    title: str
    trials: dict[str, TrialView] = field(default_factory=dict)

    # -- walking ---------------------------------------------------------------------
    def label(self, run: ModelRunResult) -> str:
        return f"{run.model} · guards {run.guards}"

    def views(self, run: ModelRunResult | None = None, case_id: str | None = None) -> Iterator[TrialView]:
        for v in self.trials.values():
            if (run is None or v.run is run) and (case_id is None or v.case.case_id == case_id):
                yield v

    def trial_key(self, run: ModelRunResult, case: CaseResult, trial: TrialResult) -> str:
        return slug("t", run.model, run.guards, case.case_id, trial.trial)

    @property
    def case_ids(self) -> list[str]:
        out: list[str] = []
        for r in self.results.runs:
            for c in r.cases:
                if c.case_id not in out:
                    out.append(c.case_id)
        return out

    def case_info(self, case_id: str) -> CaseResult:
        for r in self.results.runs:
            for c in r.cases:
                if c.case_id == case_id:
                    return c
        raise KeyError(case_id)

    @property
    def dimensions(self) -> list[tuple[str, Any]]:
        out: dict[str, Any] = {}
        for r in self.results.runs:
            for d, m in r.dimensions.items():
                out.setdefault(d, m)
        return list(out.items())

    @property
    def lang(self) -> str:
        texts = [c.title for r in self.results.runs for c in r.cases]
        texts += [v.trial.reply for v in self.trials.values()]
        return language(texts)

    # -- numbers ---------------------------------------------------------------------
    def dim_cell(self, run: ModelRunResult, dim: str) -> dict[str, Any] | None:
        m = run.dimensions.get(dim)
        if m is None:
            return None
        decided = m.passed + m.failed
        hit = m.failed if m.better == "lower" else m.passed
        ci = wilson(hit, decided)
        cases = [c for c in run.cases if c.dimension == dim]
        phk = self.pass_k(cases, run.trials) if run.trials > 1 else None
        return {"rate": m.rate, "auto_rate": m.auto_rate, "better": m.better, "name": m.name, "n": decided,
                "low": ci.low if ci else None, "high": ci.high if ci else None, "passed": m.passed,
                "failed": m.failed, "unclear": m.unclear, "unjudged": m.unjudged, "pass_k": phk,
                "errors": m.errors, "faults": m.simulator_faults}

    def pass_k(self, cases: list[CaseResult], k: int) -> float | None:
        """Mean over cases of pass^k (tau-bench's unbiased C(c, k) / C(n, k)) over decided
        trials (pass or fail); None when no trial is decided: unjudged is never 0 %."""
        values = []
        for c in cases:
            s = [t for t in c.trials if scored(t) and str(t.verdict) in ("pass", "fail")]
            if not s:
                continue
            passes = sum(1 for t in s if str(t.verdict) == "pass")
            values.append(pass_hat_k(len(s), passes, min(k, len(s))))
        return sum(values) / len(values) if values else None

    def case_pass_k(self, case: CaseResult, k: int) -> float | None:
        return self.pass_k([case], k)

    def deciders(self, run: ModelRunResult) -> dict[str, int]:
        """Criterion results by who decided them."""
        out = {"auto": 0, "llm": 0, "human": 0, "unjudged": 0}
        for c in run.cases:
            for t in c.trials:
                if not scored(t):
                    continue
                for cr in t.criteria:
                    by = cr.judged_by or ""
                    if by == "human":
                        out["human"] += 1
                    elif by.startswith("llm"):
                        out["llm"] += 1
                    elif str(cr.verdict) == "unjudged":
                        out["unjudged"] += 1
                    elif cr.kind == "auto":
                        out["auto"] += 1
                    else:
                        out["llm"] += 1
        return out

    def errors(self) -> list[TrialView]:
        return [v for v in self.trials.values() if errored(v.trial)]

    def faults(self) -> list[TrialView]:
        return [v for v in self.trials.values() if v.trial.simulator_fault and not errored(v.trial)]

    def run_metrics(self, run: ModelRunResult | None = None) -> dict[str, Any]:
        """``tether stats`` numbers over this report's runs (errors left out)."""
        facts, errors = [], 0
        for v in self.views(run):
            if v.trajectory is None:
                continue
            if v.trial.status == "error":
                errors += 1
                continue
            row = {"status": v.trial.status}
            facts.append(metrics.run_facts(row, (e.model_dump(mode="json") for e in v.trajectory)))
        return metrics.summarize(facts, errors=errors)

    def guard_groups(self) -> list[tuple[str, list[ModelRunResult]]]:
        """Models evaluated under more than one guard stack, with their runs."""
        out = []
        for model in dict.fromkeys(r.model for r in self.results.runs):
            runs = [r for r in self.results.runs if r.model == model]
            if len(runs) > 1:
                out.append((model, runs))
        return out

    def cost_mean(self, run: ModelRunResult, case_id: str | None = None) -> float | None:
        costs = [v.cost for v in self.views(run, case_id) if v.cost is not None]
        return sum(costs) / len(costs) if costs else None


def build_report(results: Results, *, loader: TrajectoryLoader | None = None, title: str | None = None,
                 results_path: str | Path | None = None, store: Any = None) -> Report:
    loader = loader or default_loader(results, results_path, store)
    report = Report(results, title or f"{results.suite} · {results.created or ''}".strip(" ·"))
    for run in results.runs:
        for case in run.cases:
            for trial in case.trials:
                key = report.trial_key(run, case, trial)
                view = TrialView(key, run, case, trial)
                try:
                    view.trajectory = loader(run, case, trial)
                except RunMissing as exc:        # one missing run is shown as missing; no store at all is an error
                    view.missing = str(exc)
                report.trials[key] = view
    return report
