"""The machine-readable results document (``--json PATH``).

Shape (format ``tether.results``, version 1)::

    {"format": "tether.results", "version": 1, "suite": "c4", "created": "...",
     "runs": [{"model": "policy:steady", "guards": "off", "trials": 1,
               "dimensions": {"LD": {"rate": 1.0, "better": "higher", ...}, ...},
               "failure_modes": {"loop": {"count": 3, "rate": 0.25}, ...},
               "simulator_faults": 0, "simulator_fault_trials": [{"case_id": "...", "trial": 0, "reason": "..."}],
               "cases": [{"case_id": "C4-LD-01", "verdict": "pass", "pass_at_1": 1.0, "pass_hat_k": 1.0,
                          "trials": [{"verdict": "pass", "status": "completed",
                                      "criteria": [{"id": "...", "kind": "auto", "verdict": "pass"}]}]}]}]}

Documented in docs/results.md; the JSON Schema ships as ``tether/schemas/results.schema.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from .scoring import CriterionResult, Verdict

RESULTS_FORMAT = "tether.results"
RESULTS_VERSION = 1


class Counters(BaseModel):
    steps: int = 0
    tool_calls: int = 0         # executed calls (a guard's blocked or stopped calls are not counted)
    blocked: int = 0            # calls a guard blocked or stopped
    retries: int = 0            # calls identical to an earlier unsuccessful call
    max_identical: int = 0      # most repeats of one exact call
    strategies: int = 0         # distinct recovery strategies (retry / reword / fallback)
    questions: int = 0          # questions the agent itself asked the user
    errors: int = 0             # tool results with ok = false
    guard_trips: int = 0


class Attribution(BaseModel):
    """Failure attribution, as the seed's 失败归因 record."""

    case_id: str
    trial: int
    failure_type: str           # loop / deadlock / abandonment / irrational_abandonment / hallucination / ...
    manifestation: str          # 具体表现, with numbers
    root_cause: str             # 根本原因
    fix_suggestion: str         # 修复建议
    criteria: list[str] = Field(default_factory=list)


class TrialResult(BaseModel):
    trial: int
    verdict: Verdict
    auto_verdict: Verdict
    status: str
    reply: str = ""
    error: str | None = None
    counters: Counters = Field(default_factory=Counters)
    criteria: list[CriterionResult] = Field(default_factory=list)
    attribution: Attribution | None = None
    trace: str | None = None     # path of the saved JSONL trace, relative to the results file's out dir
    # The simulated user broke its persona or failed ("persona_break: ...", "simulator_error: ..."):
    # the trial is kept out of the case verdict, pass rates, dimension rates and failure modes.
    simulator_fault: str | None = None
    # Why the simulated user ended the conversation, if it did ("patience: ...", "max_rounds: ...",
    # "stop_token: ...", "replies_exhausted: ...").
    simulator_stop: str | None = None


class SimulatorFault(BaseModel):
    case_id: str
    trial: int
    reason: str


class CaseResult(BaseModel):
    case_id: str
    title: str = ""
    dimension: str
    verdict: Verdict
    auto_verdict: Verdict
    pass_at_1: float             # share of trials that passed
    pass_hat_k: float            # 1.0 when all k trials passed (pass^k)
    trials: list[TrialResult]
    simulator_faults: int = 0    # trials left out of the verdict and rates (derived from trials)

    @model_validator(mode="after")
    def _count_faults(self) -> "CaseResult":
        self.simulator_faults = sum(1 for t in self.trials if t.simulator_fault)
        return self


class DimensionMetrics(BaseModel):
    name: str
    better: Literal["higher", "lower"]
    rate: float | None           # LD/DR/AR: passed / decided; PA: failed / decided (premature abandonment)
    auto_rate: float | None      # the same over automatic verdicts only
    cases: int
    passed: int
    failed: int
    unclear: int
    unjudged: int
    simulator_faults: int = 0    # trials of this dimension left out (simulator faults)


class FailureMode(BaseModel):
    count: int
    rate: float                  # share of all trials with this failure type
    cases: list[str] = Field(default_factory=list)


class ModelRunResult(BaseModel):
    model: str
    guards: str = "off"
    trials: int = 1
    dimensions: dict[str, DimensionMetrics]
    failure_modes: dict[str, FailureMode] = Field(default_factory=dict)
    cases: list[CaseResult]
    # Trials whose simulated user broke its persona or failed (derived from the cases).
    simulator_faults: int = 0
    simulator_fault_trials: list[SimulatorFault] = Field(default_factory=list)

    @model_validator(mode="after")
    def _list_faults(self) -> "ModelRunResult":
        self.simulator_fault_trials = [SimulatorFault(case_id=c.case_id, trial=t.trial, reason=t.simulator_fault)
                                       for c in self.cases for t in c.trials if t.simulator_fault]
        self.simulator_faults = len(self.simulator_fault_trials)
        return self

    def case(self, case_id: str) -> CaseResult:
        for c in self.cases:
            if c.case_id == case_id:
                return c
        raise KeyError(case_id)


class Results(BaseModel):
    format: Literal["tether.results"] = RESULTS_FORMAT
    version: int = RESULTS_VERSION
    suite: str
    created: str = ""
    out_dir: str | None = None
    runs: list[ModelRunResult]

    def run(self, model: str, guards: str | None = None) -> ModelRunResult:
        for r in self.runs:
            if r.model == model and (guards is None or r.guards == guards):
                return r
        raise KeyError(model)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.model_dump_json(indent=2), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Results":
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))
