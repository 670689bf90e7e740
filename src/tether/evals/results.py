"""The machine-readable results document (``--json PATH``).

Shape (format ``tether.results``, version 2)::

    {"format": "tether.results", "version": 2, "suite": "c4", "created": "...",
     "eval_id": "ev-20261130-ab12cd", "store": ".tether/tether.db",
     "runs": [{"model": "policy:steady", "guards": "off", "trials": 1,
               "dimensions": {"LD": {"rate": 1.0, "better": "higher", ...}, ...},
               "failure_modes": {"loop": {"count": 3, "rate": 0.25}, ...},
               "errors": 0, "error_trials": [...], "judged": {...}, "judge": null, ...,
               "cases": [{"case_id": "C4-LD-01", "verdict": "pass", "pass_at_1": 1.0, "pass_hat_k": 1.0,
                          "decided": 1, "passed": 1, "pass_at_k": {"1": 1.0}, "pass_hat": {"1": 1.0},
                          "interval": [0.21, 1.0], "auto_pass_at_1": 1.0,
                          "trials": [{"verdict": "pass", "status": "completed", "run_id": "ev-...-t0",
                                      "digest": "<sha256 of the run's events>",
                                      "criteria": [{"id": "...", "kind": "auto", "verdict": "pass"}]}]}]}]}

Every trial is a run in the store (``store``), pinned by ``run_id`` and the
``digest`` of its events; ``tether score / diff / review / baseline`` read the
runs from there. Judge and human verdicts, with who gave them, when, the
samples and an edit history, are part of each criterion result.

A trial that ended ``error`` (``error_kind``: infrastructure, model, harness,
...) is not a verdict about the agent: it is left out of the case verdict,
pass rates, dimension rates and failure modes, and listed in ``error_trials``.

:meth:`Results.load` is the one loader: it checks ``format`` and ``version``
and refuses anything else with an error naming the file. Documented in
docs/results.md; the JSON Schema ships as ``tether/schemas/results.schema.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from ..errors import CaseFileError, FileLocation
from .judge import Conflict
from .scoring import CriterionResult, Verdict

RESULTS_FORMAT = "tether.results"
RESULTS_VERSION = 2



MAX_TRIAL = 1_000_000     # a trial number (one eval makes at most 100,000 runs)

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
    # tool calls by outcome (tether.events.Outcome; "unfinished": no result recorded), zeros left out
    outcomes: dict[str, int] = Field(default_factory=dict)
    truncated: int = 0          # the agent's replies cut by the output token limit (finish_reason length)


class Attribution(BaseModel):
    """Failure attribution, as the seed's 失败归因 record."""

    case_id: str
    trial: int = Field(ge=0, le=MAX_TRIAL)
    failure_type: str           # loop / deadlock / abandonment / irrational_abandonment / hallucination / ...
    manifestation: str          # 具体表现, with numbers
    root_cause: str             # 根本原因
    fix_suggestion: str         # 修复建议
    criteria: list[str] = Field(default_factory=list)
    # root_cause / fix_suggestion in each language tether has them in ({"en": {...}, "zh": {...}}); a case's own
    # fix suggestion is in the case's language only. Reports pick one (--lang).
    translations: dict[str, dict[str, str]] = Field(default_factory=dict)

    def text(self, field: str, lang: str) -> str:
        return self.translations.get(lang, {}).get(field) or getattr(self, field)


class TrialResult(BaseModel):
    trial: int = Field(ge=0, le=MAX_TRIAL)
    verdict: Verdict
    auto_verdict: Verdict
    status: str
    reply: str = ""
    error: str | None = None
    # Why the trial says nothing about the agent (verdict "error"): the run ended
    # error (infrastructure / model / harness / misuse / aborted), or its judge failed.
    error_kind: str | None = None
    run_id: str | None = None    # the run in the store (tether runs show RUN)
    digest: str | None = None    # sha256 of the run's own events (Trajectory.digest)
    counters: Counters = Field(default_factory=Counters)
    criteria: list[CriterionResult] = Field(default_factory=list)
    attribution: Attribution | None = None
    # A judge (LLM or human) passed a criterion while an automatic check failed.
    conflicts: list[Conflict] = Field(default_factory=list)
    # The simulated user broke its persona or failed ("persona_break: ...", "simulator_error: ..."):
    # the trial is kept out of the case verdict, pass rates, dimension rates and failure modes.
    simulator_fault: str | None = None
    # Why the simulated user ended the conversation, if it did ("patience: ...", "max_rounds: ...",
    # "stop_token: ...", "replies_exhausted: ...").
    simulator_stop: str | None = None

    @property
    def errored(self) -> bool:
        return self.verdict == Verdict.ERROR

    @property
    def scored(self) -> bool:
        """Whether the trial counts for the agent (no error, no simulator fault)."""
        return not self.errored and not self.simulator_fault


class SimulatorFault(BaseModel):
    case_id: str
    trial: int = Field(ge=0, le=MAX_TRIAL)
    reason: str


class ErrorTrial(BaseModel):
    """A trial left out because its run (or judge) failed."""

    case_id: str
    trial: int = Field(ge=0, le=MAX_TRIAL)
    error_kind: str | None = None
    error: str | None = None
    run_id: str | None = None


class CaseResult(BaseModel):
    case_id: str
    title: str = ""
    dimension: str
    verdict: Verdict             # over the scored trials; "error" when every trial errored
    auto_verdict: Verdict
    # Pass rates over the decided trials (scored, verdict not unjudged): None when there
    # is none (every trial errored, or nothing is decided yet: the case is unjudged, never 0%).
    pass_at_1: float | None      # share of the decided trials that passed
    pass_hat_k: float | None     # pass^k at k = the decided trials: 1.0 when all of them passed
    decided: int = 0             # n: scored trials with a verdict (pass / fail / unclear)
    passed: int = 0              # c: of those, passed
    # The unbiased estimators over the n decided trials, for k = 1..n (keys are k):
    # pass@k, the chance that at least one of k trials passes; pass^k, that all k pass.
    pass_at_k: dict[int, float] | None = None
    pass_hat: dict[int, float] | None = None
    interval: tuple[float, float] | None = None   # Wilson 95 % interval of pass_at_1
    auto_pass_at_1: float | None = None           # the same over automatic verdicts
    trials: list[TrialResult]
    simulator_faults: int = 0    # trials left out of the verdict and rates (derived from trials)
    errors: int = 0              # trials whose run or judge failed (derived from trials)

    @model_validator(mode="after")
    def _count_faults(self) -> "CaseResult":
        self.simulator_faults = sum(1 for t in self.trials if t.simulator_fault and not t.errored)
        self.errors = sum(1 for t in self.trials if t.errored)
        return self


class DimensionMetrics(BaseModel):
    name: str
    better: Literal["higher", "lower"]
    rate: float | None           # LD/DR/AR: passed / decided; PA: failed / decided (premature abandonment)
    auto_rate: float | None      # the same over automatic verdicts only
    interval: tuple[float, float] | None = None       # Wilson 95 % interval of rate (over the decided cases)
    auto_interval: tuple[float, float] | None = None  # ... of auto_rate
    cases: int                   # cases with at least one scored trial
    passed: int
    failed: int
    unclear: int
    unjudged: int
    simulator_faults: int = 0    # trials of this dimension left out (simulator faults)
    errors: int = 0              # trials of this dimension left out (run or judge errors)


class FailureMode(BaseModel):
    count: int
    rate: float                  # share of all scored trials with this failure type
    cases: list[str] = Field(default_factory=list)


class JudgedCounts(BaseModel):
    """Criterion results of a run (over every trial), by who decided them."""

    auto: int = 0        # automatic checks
    llm: int = 0         # the LLM judge
    human: int = 0       # a human reviewer
    unjudged: int = 0    # rubric criteria nobody decided yet


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
    # Trials whose run or judge failed (derived from the cases).
    errors: int = 0
    error_trials: list[ErrorTrial] = Field(default_factory=list)
    # Who decided the criteria, and the last LLM judge's settings.
    judged: JudgedCounts = Field(default_factory=JudgedCounts)
    judge: str | None = None              # "llm:<model>" of the last LLM scoring
    judge_samples: int | None = None
    judge_agreement: float | None = None  # mean agreement of the LLM-judged criteria
    conflicts: int = 0

    @model_validator(mode="after")
    def _list_faults(self) -> "ModelRunResult":
        self.simulator_fault_trials = [SimulatorFault(case_id=c.case_id, trial=t.trial, reason=t.simulator_fault)
                                       for c in self.cases for t in c.trials if t.simulator_fault and not t.errored]
        self.simulator_faults = len(self.simulator_fault_trials)
        self.error_trials = [ErrorTrial(case_id=c.case_id, trial=t.trial, error_kind=t.error_kind, error=t.error,
                                        run_id=t.run_id) for c in self.cases for t in c.trials if t.errored]
        self.errors = len(self.error_trials)
        return self

    def case(self, case_id: str) -> CaseResult:
        for c in self.cases:
            if c.case_id == case_id:
                return c
        raise KeyError(case_id)


class Results(BaseModel):
    format: Literal["tether.results"] = RESULTS_FORMAT
    version: Literal[2] = RESULTS_VERSION
    suite: str
    created: str = ""
    eval_id: str | None = None   # the eval in the store these trials belong to
    store: str | None = None     # the store the runs are in (None: a self-contained folder with runs/)
    runs: list[ModelRunResult]

    @model_validator(mode="after")
    def _suite_order(self) -> "Results":
        """Each subject's dimensions in the suite's order (C4: LD, DR, PA, AR), also when
        read back from a store, which sorts JSON keys: one order in every report."""
        from .metrics import in_suite_order

        for run in self.runs:
            order = in_suite_order(self.suite, run.dimensions)
            if list(run.dimensions) != order:
                run.dimensions = {d: run.dimensions[d] for d in order}
        return self

    def run(self, model: str, guards: str | None = None) -> ModelRunResult:
        for r in self.runs:
            if r.model == model and (guards is None or r.guards == guards):
                return r
        raise KeyError(model)

    def trials(self):
        """Every (run, case, trial) of the document."""
        for run in self.runs:
            for case in run.cases:
                for trial in case.trials:
                    yield run, case, trial

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        from ..inputs import write_text

        write_text(path, self.model_dump_json(indent=2), "results file")   # a failure names the file
        return path

    @classmethod
    def parse(cls, text: str, *, path: str = "<results>") -> "Results":
        """Parse a results document, checking its format and version first."""
        from ..inputs import loads_json

        doc: Any = loads_json(text, path)
        if not isinstance(doc, dict) or doc.get("format") != RESULTS_FORMAT:
            got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise CaseFileError([(FileLocation(path, field="format"),
                                  f"not a tether results document (format {got!r}, expected {RESULTS_FORMAT!r})")])
        version = doc.get("version")
        if version != RESULTS_VERSION:
            if isinstance(version, int) and version < RESULTS_VERSION:
                why = (f"results format version {version} is from an older tether (its trials point at trace "
                       f"files, not stored runs); this tether reads version {RESULTS_VERSION}: run the "
                       "evaluation again (tether eval ... --json)")
            else:
                why = (f"results format version {version!r} is unknown to this tether (it reads version "
                       f"{RESULTS_VERSION}); upgrade tether")
            raise CaseFileError([(FileLocation(path, field="version"), why)])
        try:
            return cls.model_validate(doc)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise CaseFileError([(FileLocation(path, field=where or None),
                                  f"not a tether results document: {first.get('msg')} "
                                  f"({exc.error_count()} problem(s))")]) from None

    @classmethod
    def load(cls, path: str | Path) -> "Results":
        """The one loader: reads ``path``, checks format and version (errors name the file)."""
        from ..inputs import read_text

        text = read_text(path, "results file")
        return cls.parse(text, path=str(path))
