"""Run a suite of cases against models: trials, bounded concurrency, traces.

The harness owns the tools: each trial gets a fresh scenario world with the
case's intercepts and mocks layered in front, so faults reach any agent.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from ..guards import Guard
from ..models import Model, resolve_model
from ..runtime import RunConfig, Turn, run_agent
from ..tools import ToolSet
from .case import Case
from .metrics import attribute, case_result, counters, dimension_metrics, failure_modes
from .results import ModelRunResult, Results, TrialResult
from .scoring import score_trajectory
from .simulator import PersonaUser, make_user
from .world import case_toolset

REFERENCE_SYSTEM_PROMPT = (
    "你是一个会使用工具的助手。根据用户的请求调用合适的工具；工具失败或结果为空时，"
    "换一种方式（修改参数、换工具）再试，但不要无限重复同一个调用；确实无法完成时，"
    "说明原因、已做的事情和可行的替代方案。不要编造工具没有返回的信息。"
)


@dataclass(frozen=True)
class EvalConfig:
    trials: int = 1
    concurrency: int = 4
    out_dir: Path | None = None
    seed: int = 0
    system_prompt: str | None = REFERENCE_SYSTEM_PROMPT
    # guard stack label -> factory producing fresh guards per trial
    guard_stacks: dict[str, Callable[[], Sequence[Guard]]] = field(default_factory=lambda: {"off": lambda: ()})
    max_steps: int | None = None   # overrides each case's max_steps when set
    # The simulated user: "scripted" (the persona's rules), a model spec string or
    # a Model (tether.evals.llm_user.LLMUser plays the persona).
    simulator: str | Model = "scripted"


ProgressFn = Callable[[str, str, int, TrialResult], None]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"


def case_world(case: Case, *, seed: int = 0, simulator: str | Model = "scripted") -> tuple[ToolSet, PersonaUser | None]:
    """The tools an agent sees in ``case`` (a fresh scenario world with the
    case's intercepts and mocks in front) and its simulated user, if any
    (``simulator``: "scripted", a model spec or a Model)."""
    return case_toolset(case, seed=seed), make_user(case.persona, simulator)


async def run_trial(case: Case, model: Model, *, trial: int = 0, config: EvalConfig = EvalConfig(),
                    guards: Sequence[Guard] = (), guards_label: str = "off", model_label: str | None = None,
                    run_config: RunConfig | None = None, run_id: str | None = None):
    """One case, one trial: returns (TrialResult, RunResult). ``run_config``
    supplies durable-run settings (store, approvals, meta) when given."""
    toolset, user = case_world(case, seed=config.seed + trial, simulator=config.simulator)
    run_cfg = replace(run_config or RunConfig(), max_steps=config.max_steps or case.max_steps,
                      system_prompt=config.system_prompt, guards=tuple(guards), guards_label=guards_label,
                      meta={"suite": case.suite, **(run_config.meta if run_config else {})})
    result = await run_agent(
        model, toolset, message=case.input.message,
        history=[Turn(t.role, t.content, t.question) for t in case.input.history],
        user=user, config=run_cfg, case_id=case.id, trial=trial,
        run_id=run_id or f"{_slug(model_label or model.name)}-{guards_label}-{case.id}-t{trial}",
    )
    t = result.trajectory
    score = score_trajectory(case, t)
    c = counters(t)
    trace_path = None
    if config.out_dir is not None:
        rel = Path(_slug(model_label or model.name)) / guards_label / case.id / f"trial-{trial}.jsonl"
        t.save(config.out_dir / rel)
        trace_path = rel.as_posix()
    fault = getattr(user, "fault", None)   # a simulator fault: kept out of the agent's score
    tr = TrialResult(trial=trial, verdict=score.verdict, auto_verdict=score.auto_verdict, status=str(result.status),
                     reply=result.reply, error=result.error, counters=c, criteria=score.criteria,
                     attribution=None if fault else attribute(case, trial, score, t, c), trace=trace_path,
                     simulator_fault=fault, simulator_stop=getattr(user, "stop", None))
    return tr, result


async def run_suite(cases: Sequence[Case], models: Sequence[str | Model], config: EvalConfig = EvalConfig(),
                    *, suite: str = "c4", progress: ProgressFn | None = None) -> Results:
    """Every model x guard stack x case x trial, ``config.concurrency`` at a time."""
    sem = asyncio.Semaphore(max(1, config.concurrency))
    if isinstance(config.simulator, str) and config.simulator != "scripted":   # resolve a spec once
        config = replace(config, simulator=resolve_model(config.simulator))
    resolved = [(m if isinstance(m, str) else m.name, resolve_model(m)) for m in models]

    async def one(label: str, model: Model, stack: str, case: Case, trial: int) -> TrialResult:
        async with sem:
            guards = config.guard_stacks[stack]()
            tr, _ = await run_trial(case, model, trial=trial, config=config, guards=guards,
                                    guards_label=stack, model_label=label)
        if progress:
            progress(label, case.id, trial, tr)
        return tr

    jobs = {}
    for label, model in resolved:
        for stack in config.guard_stacks:
            for case in cases:
                for trial in range(config.trials):
                    jobs[(label, stack, case.id, trial)] = one(label, model, stack, case, trial)
    done = dict(zip(jobs, await asyncio.gather(*jobs.values())))

    runs = []
    for label, _ in resolved:
        for stack in config.guard_stacks:
            pairs = []
            for case in cases:
                trials = [done[(label, stack, case.id, k)] for k in range(config.trials)]
                pairs.append((case, case_result(case, trials)))
            results = [r for _, r in pairs]
            runs.append(ModelRunResult(model=label, guards=stack, trials=config.trials,
                                       dimensions=dimension_metrics(pairs), failure_modes=failure_modes(results),
                                       cases=results))
    return Results(suite=suite, created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   out_dir=str(config.out_dir) if config.out_dir else None, runs=runs)
