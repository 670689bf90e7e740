"""Run a suite of cases against models or agents: every trial a stored run.

An evaluation is a group of runs with its own id (``ev-YYYYMMDD-xxxxxx``) in
the store. Each trial runs under its own run id, derived from the eval id (so
two evaluations never touch each other's runs), with ``kind="eval"``; the
finished results document is stored with the eval too.

The harness owns the tools: each trial gets a fresh scenario world with the
case's intercepts and mocks layered in front, so faults reach any agent.
The agent under test is tether's own loop around a model (``--model``) or
any :class:`~tether.runtime.Agent` (``--agent module:factory``).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import RunAborted, UsageError
from ..guards import Guard
from ..models import Model, resolve_model
from ..runtime import RunConfig, Turn
from ..runtime.loop import AgentTask, LoopAgent
from ..runtime.runner import run_task
from ..runtime.session import RunResult
from ..status import TerminalStatus
from ..tools import ToolSet
from .case import Case
from .metrics import case_result, dimension_metrics, failure_modes
from .rescore import summarize, trial_result
from .results import ModelRunResult, Results, TrialResult
from .simulator import PersonaUser, make_user
from .executors import EvalPlan, Subject, TrialJob, make_executor
from ._lease import eval_lease
from .resume import ResumePlan, a_store_to_resume_in, resume_plan
from .world import case_toolset

REFERENCE_SYSTEM_PROMPT = (
    "你是一个会使用工具的助手。根据用户的请求调用合适的工具；工具失败或结果为空时，"
    "换一种方式（修改参数、换工具）再试，但不要无限重复同一个调用；确实无法完成时，"
    "说明原因、已做的事情和可行的替代方案。不要编造工具没有返回的信息。"
)
REFERENCE_SYSTEM_PROMPT_EN = (      # the same, for a case in English (Case.run_language)
    "You are an assistant that uses tools. Call the tools that fit the user's request; when a tool fails or "
    "returns nothing, try another way (change the arguments, use another tool), but do not repeat the same call "
    "endlessly; when the task really cannot be done, explain why, what you did and the alternatives. Never state "
    "information no tool returned."
)


@dataclass(frozen=True)
class EvalConfig:
    trials: int = 1
    concurrency: int = 4
    seed: int = 0
    system_prompt: str | None = REFERENCE_SYSTEM_PROMPT
    # a framework agent's own instructions against the case's reference prompt:
    # "agent" (its own; the case's only where it has none), "case", or "both"
    system_prompt_mode: str = "agent"
    # guard stack label -> factory producing fresh guards per trial
    guard_stacks: dict[str, Callable[[], Sequence[Guard]]] = field(default_factory=lambda: {"off": lambda: ()})
    max_steps: int | None = None   # overrides each case's max_steps when set
    # The simulated user: "scripted" (the persona's rules), a model spec string or
    # a Model (tether.evals.llm_user.LLMUser plays the persona).
    simulator: str | Model = "scripted"
    # Where the runs go: a tether.store.SQLiteStore, a path, or None for the
    # default ($TETHER_STORE or .tether/tether.db).
    store: Any = None
    eval_id: str | None = None     # None: a new id
    export_dir: Path | None = None  # also write each run here as <run_id>.jsonl (a copy, never read back)
    # Where the trials run: "local" (this process), "ray" (Ray tasks; tether[ray]) or an Executor.
    executor: Any = "local"
    ray_address: str | None = None  # a Ray cluster to join (None: a local Ray instance)
    # Per-model limits for provider models named by spec: {"max_connections": N, "timeout": S}.
    model_limits: dict[str, Any] = field(default_factory=dict)
    # Continue the stored eval ``eval_id``: finished trials are kept, the rest run.
    resume: bool = False
    on_resume: Callable[[ResumePlan], None] | None = None   # told what a resume keeps and reruns
    options: dict[str, Any] = field(default_factory=dict)    # recorded with the eval (the CLI's options)


ProgressFn = Callable[[str, str, int, TrialResult], None]


def new_eval_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return f"ev-{now:%Y%m%d}-{secrets.token_hex(3)}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+|\.{2,}", "_", text).strip("_.") or "model"


def _short(text: str, limit: int = 40) -> str:
    """A slug of at most ``limit`` characters; long ones keep a hash of the whole
    (two model specs sharing a long prefix still get distinct run ids)."""
    slug = _slug(text)
    if len(slug) <= limit:
        return slug
    return f"{slug[:limit - 9]}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


def trial_run_id(eval_id: str, label: str, guards: str, case_id: str, trial: int) -> str:
    return f"{eval_id}-{_short(label)}-{_short(guards, 24)}-{_short(case_id)}-t{trial}"


def case_world(case: Case, *, seed: int = 0, simulator: str | Model = "scripted") -> tuple[ToolSet, PersonaUser | None]:
    """The tools an agent sees in ``case`` (a fresh scenario world with the
    case's intercepts and mocks in front) and its simulated user, if any
    (``simulator``: "scripted", a model spec or a Model)."""
    return case_toolset(case, seed=seed), make_user(case.persona, simulator)


# -- agents ---------------------------------------------------------------------------
def resolve_agent(ref: str) -> Callable[[], Any]:
    """``module:factory``, ``path/to/file.py:factory`` or a ``tether.agents`` entry
    point name -> a function making a fresh agent per trial."""
    from .. import plugins

    if ref.endswith(".py"):          # a file: its module-level ``agent``
        ref = f"{ref}:agent"
    if ":" in ref:
        obj = plugins.load_object(ref, what="agent")
    else:
        obj = plugins.get("tether.agents", ref)
        if obj is None:
            known = sorted(plugins.registered("tether.agents"))
            raise UsageError(f"unknown agent {ref!r}: give module:factory or path/to/file.py:factory"
                             + (f", or one of the registered agents: {', '.join(known)}" if known else ""))
    from ..adapters import framework_agent

    wrapped = framework_agent(obj)
    if wrapped is not None:                      # a pydantic-ai / Agents SDK / LangChain agent, run unchanged
        return lambda: wrapped
    if hasattr(obj, "run") and not isinstance(obj, type):
        return lambda: obj                       # an agent object: used as is
    if not callable(obj):
        raise UsageError(f"agent {ref!r} is neither an agent (with async run(session, task)) nor a factory")

    def make() -> Any:
        try:
            agent = obj()
        except Exception as exc:        # the user's factory failed: their code, not a bug in tether
            raise UsageError(f"agent {ref!r}: calling it failed: {type(exc).__name__}: {exc}") from None
        agent = framework_agent(agent) or agent
        if not hasattr(agent, "run"):
            raise UsageError(f"agent {ref!r}: the factory returned {type(agent).__name__}, which has no "
                             "async run(session, task) method")
        return agent

    return make


# -- one trial ------------------------------------------------------------------------
async def run_trial(case: Case, model: Model | None = None, *, trial: int = 0, config: EvalConfig = EvalConfig(),
                    guards: Sequence[Guard] = (), guards_label: str = "off", model_label: str | None = None,
                    run_config: RunConfig | None = None, run_id: str | None = None, agent: Any = None):
    """One case, one trial: returns (TrialResult, RunResult). The agent is
    ``agent`` when given, else tether's loop around ``model``. ``run_config``
    supplies durable-run settings (store, kind, eval id, approvals, meta)."""
    if agent is None and model is None:
        raise UsageError("run_trial needs a model or an agent")
    agent = agent if agent is not None else LoopAgent(model)
    label = model_label or getattr(agent, "name", type(agent).__name__)
    toolset, user = case_world(case, seed=config.seed + trial, simulator=config.simulator)
    system_prompt = config.system_prompt
    if system_prompt == REFERENCE_SYSTEM_PROMPT and case.run_language == "en":   # the model reads the case's language
        system_prompt = REFERENCE_SYSTEM_PROMPT_EN
    run_cfg = replace(run_config or RunConfig(), max_steps=config.max_steps or case.max_steps,
                      system_prompt=system_prompt, guards=tuple(guards), guards_label=guards_label,
                      meta={"suite": case.suite, "subject": label, "language": case.run_language,
                            **(run_config.meta if run_config else {})})
    task = AgentTask(message=case.input.message, history=tuple(Turn(t.role, t.content, t.question)
                                                              for t in case.input.history),
                     tools=toolset, system_prompt=run_cfg.system_prompt, max_steps=run_cfg.max_steps, case_id=case.id,
                     system_prompt_mode=config.system_prompt_mode)
    rid = run_id or f"{_slug(label)}-{guards_label}-{case.id}-t{trial}"
    try:
        result = await run_task(agent, task, user=user, config=run_cfg, run_id=rid, trial=trial)
    except RunAborted as exc:     # recorded as error (aborted) by the driver; a trial error here
        t = exc.trajectory  # type: ignore[attr-defined]
        result = RunResult(t, TerminalStatus.ERROR, t.final_reply, str(exc), "aborted")
    fault = getattr(user, "fault", None)   # a simulator fault: kept out of the agent's score
    tr = trial_result(case, result.trajectory, trial=trial, simulator_fault=fault,
                      simulator_stop=getattr(user, "stop", None))
    return tr, result


# -- a suite --------------------------------------------------------------------------
def open_store(store: Any) -> tuple[Any, str]:
    """(the store, how results name it)."""
    from ..store import open_store as open_any
    from ..store.connect import store_label

    opened = open_any(store)
    return opened, store_label(opened)


def _subjects(models: Sequence[str | Model], agents: Sequence[str], limits: dict[str, Any]) -> dict[str, Subject]:
    out: dict[str, Subject] = {}
    for m in models:
        label = m if isinstance(m, str) else m.name
        out[label] = Subject(label, model=m, model_limits=dict(limits))
    for ref in agents:
        out[ref] = Subject(ref, agent=ref)
    return out


def _eval_record(subjects: dict[str, Subject], cases: Sequence[Case], config: EvalConfig) -> dict[str, Any]:
    """What the store keeps about an eval (``tether eval --resume`` reads it back)."""
    return {
        "subjects": list(subjects), "models": [s.label for s in subjects.values() if s.agent is None],
        "agents": [s.agent for s in subjects.values() if s.agent is not None],
        "guards": list(config.guard_stacks), "trials": config.trials, "cases": [c.id for c in cases],
        "max_steps": config.max_steps, "seed": config.seed, "concurrency": config.concurrency,
        "simulator": config.simulator if isinstance(config.simulator, str) else config.simulator.name,
        "options": dict(config.options)}


async def run_suite(cases: Sequence[Case], models: Sequence[str | Model] = (), config: EvalConfig = EvalConfig(),
                    *, suite: str = "c4", progress: ProgressFn | None = None,
                    agents: Sequence[str] = (), judge: Any = None, judge_samples: int = 1,
                    fail_under: float | None = None, max_errors: int | None = None) -> Results:
    """Every subject (model or agent) x guard stack x case x trial,
    ``config.concurrency`` at a time, each trial a run in the store.

    ``judge`` (a model spec, a Model or a Judge; ``judge_samples`` per criterion)
    decides the rubric criteria afterwards; ``max_errors`` and ``fail_under`` are
    checked last and raise :class:`~tether.evals.gates.TooManyErrors` /
    :class:`~tether.evals.gates.FailUnder` carrying the results (see
    :mod:`tether.evals.gates`): what ``tether eval`` does, as a library.

    With ``config.resume`` (and ``config.eval_id``), continues that stored
    eval: finished trials are kept, the others (never started, or left
    ``running`` by a killed process: marked abandoned) run under new run ids."""
    from .gates import check_gates, judge_results, make_judge

    if not models and not agents:
        raise UsageError("nothing to evaluate: give a model or an agent")
    judging = make_judge(judge, judge_samples)
    if isinstance(config.simulator, str) and config.simulator != "scripted":   # resolve a spec once
        config = replace(config, simulator=resolve_model(config.simulator))
    subjects = _subjects(models, agents, config.model_limits)
    for s in subjects.values():
        s.factory()                     # resolve every subject before anything is stored
    probes = await _probe_subjects(subjects)    # a model that cannot see tool results stops the eval here
    executor = make_executor(config.executor, ray_address=config.ray_address)
    if config.resume and (config.store is None or isinstance(config.store, (str, Path))):
        a_store_to_resume_in(config.store, config.eval_id)
    store, store_label = open_store(config.store)
    eval_id = config.eval_id or new_eval_id()
    record = _eval_record(subjects, cases, config)
    if probes:
        record["probes"] = probes
    planned = [TrialJob(label, stack, case.id, trial, trial_run_id(eval_id, label, stack, case.id, trial))
               for label in subjects for stack in config.guard_stacks for case in cases
               for trial in range(config.trials)]
    by_id = {c.id: c for c in cases}
    done: dict[tuple[str, str, str, int], TrialResult] = {}
    async with eval_lease(store, eval_id):
        if config.resume:
            if not config.eval_id:
                raise UsageError("resuming needs the eval id (tether eval --resume EVAL_ID)")
            resumed = resume_plan(store, eval_id, planned, by_id, record)
            done.update(resumed.kept)
            jobs = resumed.to_run
            if config.on_resume is not None:
                config.on_resume(resumed)
        else:
            store.create_eval(eval_id, suite, record)
            jobs = planned
        plan = EvalPlan(cases=by_id, subjects=subjects, config=config, eval_id=eval_id)
        journal = _Journal(store, eval_id, resumed.journal if config.resume else {})

        def on_done(job: TrialJob, tr: TrialResult, trajectory: Any) -> None:
            done[job.key] = tr
            journal.note(job.run_id, tr)
            if progress:
                progress(job.label, job.case_id, job.trial, tr)

        try:
            await executor.run(plan, jobs, store, on_done)
        except BaseException:
            journal.flush(status="interrupted")
            raise

        runs = []
        for label in subjects:
            for stack in config.guard_stacks:
                pairs = []
                for case in cases:
                    trials = [done[(label, stack, case.id, k)] for k in range(config.trials)]
                    pairs.append((case, case_result(case, trials)))
                results = [r for _, r in pairs]
                runs.append(summarize(ModelRunResult(model=label, guards=stack, trials=config.trials,
                                                     dimensions=dimension_metrics(pairs),
                                                     failure_modes=failure_modes(results), cases=results)))
        out = Results(suite=suite, created=datetime.now(timezone.utc).isoformat(timespec="seconds"), eval_id=eval_id,
                      store=store_label, runs=runs)
        store.finish_eval(eval_id, out.model_dump(mode="json"))
    if judging is not None:
        out = await judge_results(out, cases, judging, store)
    check_gates(out, fail_under=fail_under, max_errors=max_errors)
    return out


async def _probe_subjects(subjects: dict[str, Subject]) -> dict[str, dict]:
    """Check once per eval that each provider model sees tool results (evals/probe.py);
    raises ToolResultsUnseen when one does not."""
    from .probe import check_tool_results

    out = {}
    for label, s in subjects.items():
        if s.agent is None:
            result = await check_tool_results(s.resolved_model())
            if result is not None:
                out[label] = result.record()
    return out


class _Journal:
    """What a finished trial's run does not hold: why the simulated user stopped or
    failed. Kept with the eval in the store (a fault at once, stop reasons at most
    once a second, everything when the eval is interrupted) so a resumed eval
    scores kept trials as they were."""

    def __init__(self, store: Any, eval_id: str, entries: dict[str, dict]):
        self.store, self.eval_id, self.entries = store, eval_id, dict(entries)
        self.dirty = False
        self.last = time.monotonic()

    def note(self, run_id: str, tr: TrialResult) -> None:
        if tr.simulator_fault or tr.simulator_stop:
            self.entries[run_id] = {"fault": tr.simulator_fault, "stop": tr.simulator_stop}
            self.dirty = True
        # a fault changes what counts (the trial leaves the score): written at once
        if self.dirty and (tr.simulator_fault or time.monotonic() - self.last >= 1.0):
            self.flush()

    def flush(self, status: str = "running") -> None:
        if self.dirty or status != "running":
            self.store.finish_eval(self.eval_id, {"progress": self.entries}, status=status)
        self.dirty = False
        self.last = time.monotonic()
