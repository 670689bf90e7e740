"""Plan-Execute-Review (seed 002 section 7): plan once, run the plan, judge by evidence.

1. **Plan**: one model request, no tools offered, asks for a JSON array of
   steps (action, tool, arguments, acceptance, expect_fields). The JSON is
   taken out of the reply (fences and prose tolerated) and validated
   (:class:`PlanStep`); bad JSON, an unknown tool or arguments that do not fit
   the tool's schema end the run as ``failed`` before anything runs.
2. **Execute**: the steps run in order through the :class:`ToolSet`, the
   config's guards asked ``before_tool`` / ``after_tool`` by the run loop's own
   plumbing. Each result is checked by :func:`verify_result` against the
   step's ``expect_fields``; the first failing step ends the run as ``failed``
   naming the step. A guard stop ends it with the guard's status.
3. **Review**: evidence decides (:func:`evidence_for`): every acceptance
   criterion proven -> ``succeeded``, some missing -> ``partial``. An optional
   reviewer model's JSON verdict is recorded but never overrides the evidence.

It is an agent (:class:`PlanExecuteReview`) run by the same driver on the
same :class:`~tether.runtime.session.RunSession` as the run loop, not a
variant of it. Unlike the loop agent: no finish-up request and no ``on_final``
check, since tether writes the reply from the facts (done / not done / why);
arguments are static (a step cannot use an earlier step's result). Model
requests (plan, review) ask before_model / after_model; each model request
and each plan step is one step; the reviewer's requests are recorded with
role ``review``.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from .. import i18n
from ..errors import RunAborted, RunStop, UsageError
from ..events import Trajectory, UserMessage
from ..guards.goal import GoalSpec, evidence_for
from ..guards.result import verify_result
from ..messages import Message, ToolCallRequest, canonical_json
from ..models import Model, ModelRequest
from ..status import TerminalStatus
from ..tools import ToolSet
from .loop import AgentTask, Ending, drive
from .session import RunConfig, RunSession, side_request



class PlanStep(BaseModel):
    """One step of a plan (``args`` is accepted for ``arguments``)."""

    model_config = ConfigDict(extra="ignore")

    step: int
    action: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict, validation_alias=AliasChoices("arguments", "args"))
    acceptance: str = ""
    expect_fields: list[str] = Field(default_factory=list)


@dataclass
class PlanRunResult:
    trajectory: Trajectory
    status: TerminalStatus
    reply: str
    plan: list[PlanStep] = field(default_factory=list)
    failed_step: int | None = None
    evidence: dict[str, str | None] = field(default_factory=dict)   # acceptance id -> proving call id
    review: dict[str, Any] | None = None
    reason: str = ""
    error: str | None = None

    @property
    def missing(self) -> list[str]:
        return [a for a, proof in self.evidence.items() if proof is None]

    @property
    def run_id(self) -> str:
        started = self.trajectory.started
        return started.run_id if started else ""


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_OPENER = re.compile(r"[\[{]")


def _result_of(session: RunSession, call_id: str) -> Any:
    return next((r for r in reversed(session.trajectory.tool_results()) if r.call_id == call_id), None)


def _extract_json(text: str, accept: Callable[[Any], bool], what: str) -> Any:
    """The first JSON value in ``text`` that ``accept`` likes: fenced blocks
    first, then anywhere in the text. Raises ValueError with the first problem."""
    decoder = json.JSONDecoder()
    first_error: str | None = None
    for chunk in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        for m in _OPENER.finditer(chunk):
            try:
                value, _ = decoder.raw_decode(chunk, m.start())
            except json.JSONDecodeError as exc:
                first_error = first_error or f"{exc.msg} (line {exc.lineno} column {exc.colno})"
                continue
            if accept(value):
                return value
    raise ValueError(first_error or f"no JSON {what} in the reply")


def _is_plan(value: Any) -> bool:
    """A list of step objects (or ``{"steps": [...]}``), not a fragment of one."""
    if isinstance(value, dict):
        return isinstance(value.get("steps"), list)
    return (isinstance(value, list) and all(isinstance(item, dict) for item in value)
            and any("tool" in item for item in value))


def _parse_plan(text: str, tools: ToolSet) -> tuple[list[PlanStep], str | None]:
    try:
        raw = _extract_json(text, _is_plan, "array of steps")
    except ValueError as exc:
        return [], f"the plan is not a valid JSON array of steps: {exc}"
    items = raw["steps"] if isinstance(raw, dict) else raw
    if not items:
        return [], "the plan has no steps"
    steps: list[PlanStep] = []
    for i, item in enumerate(items, 1):
        try:
            s = PlanStep.model_validate(item)
        except ValidationError as exc:
            why = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            return [], f"plan step {item.get('step', i)} is invalid: {why}"
        if s.tool not in tools:
            return [], (f"plan step {s.step} ({s.action}) names unknown tool {s.tool!r}; "
                        f"available tools: {', '.join(tools.names()) or '(none)'}")
        problem = tools.tools[s.tool].validate(s.arguments)
        if problem:
            return [], f"plan step {s.step} ({s.action}) has invalid arguments for {s.tool}: {problem}"
        steps.append(s)
    numbers = [s.step for s in steps]
    if numbers != list(range(1, len(steps) + 1)):
        return [], f"plan steps must be numbered 1..{len(steps)} in order; got {numbers}"
    return steps, None


class PlanExecuteReview:
    """Plan-execute-review as an agent on the same session and driver as the
    run loop (see the module docstring). Its plan lives in the run state
    (``RunState.strategy["plan"]``), so a checkpoint carries it and a resumed
    run continues the plan: steps whose result is recorded are not made again,
    the step in flight is made again (the ledger keeps its side effect from
    happening twice)."""

    resumes_from_state = True

    def __init__(self, model: Model, goal: GoalSpec, reviewer: Model | None = None):
        self.model, self.goal, self.reviewer = model, goal, reviewer
        self.name = getattr(model, "name", type(model).__name__)
        self.plan: list[PlanStep] = []
        self.done: list[PlanStep] = []
        self.failed_step: int | None = None
        self.review: dict[str, Any] | None = None
        self.where = ""

    async def stopped(self, session: RunSession, stop: RunStop) -> Ending:
        """A guard ended the run: no finish-up request, the reply is written from facts."""
        return stop.status, "", f"{self.where} stopped by {getattr(session.stopped_by, 'name', 'guard')}: {stop.reason}"

    async def _ask(self, session: RunSession, model: Model, messages: list[Message]) -> str:
        """One model request without tools, recorded and guarded like the run loop's."""
        request = await session.before_model(ModelRequest(messages=messages, tools=[]))
        role = "agent" if model is self.model else "review"
        if role == "agent":
            return (await session.request_model(model, request)).text
        response = await side_request(model, request, role="review")
        await session.after_model(response)
        return response.decision.text

    def _lang(self, session: RunSession) -> str:
        """The case's language when the run has one, else the goal's (its rendering is labelled in Chinese)."""
        lang = session.config.meta.get("language")
        return lang if lang in i18n.LANGUAGES else i18n.detect_language(self.goal.task)

    async def run(self, session: RunSession, task: AgentTask) -> Ending:
        tools = session.tools
        lang = self._lang(session)
        tool_list = "\n".join(f"- {s.name}: {s.description}{i18n.text(lang, 'plan.params')}"
                              f"{canonical_json(s.parameters)}"
                              + (i18n.text(lang, "plan.side_effect") if s.side_effect else "") for s in session.specs)
        messages = [Message(role="system", content=task.system_prompt)] if task.system_prompt else []
        messages += [Message(role="system", content=i18n.text(lang, "plan.prompt", tools=tool_list)),
                     Message(role="user", content=self.goal.render())]
        state = session.state
        if "plan" in state.strategy:        # a resumed run: the plan is in the checkpoint
            self.plan = [PlanStep.model_validate(p) for p in state.strategy["plan"]]
        else:
            self.where = "planning"
            text = await self._ask(session, self.model, messages)
            self.plan, problem = _parse_plan(text, tools)
            if problem:
                return TerminalStatus.FAILED, "", problem
            if len(self.plan) > task.max_steps:
                return TerminalStatus.STEP_LIMIT, "", f"the plan has {len(self.plan)} steps; step cap {task.max_steps}"
            state.strategy["plan"] = [p.model_dump(mode="json") for p in self.plan]

        for s in self.plan:
            self.where = f"step {s.step} ({s.action})"
            call = ToolCallRequest(id=f"plan_step_{s.step}", name=s.tool, arguments=s.arguments)
            in_flight = bool(state.pending_calls) and state.pending_calls[0].id == call.id
            recorded = None if in_flight else _result_of(session, call.id)
            if recorded is None:            # not made yet, or in flight when the run stopped: make it
                if not in_flight:
                    state.step += 1
                    state.pending_calls = [call]
                try:
                    await session.tool(state.pending_calls[0])
                except RunStop:
                    self.failed_step = s.step
                    raise
                recorded = _result_of(session, call.id)
            problem = verify_result(recorded, s.expect_fields)
            if problem:
                self.failed_step = s.step
                return TerminalStatus.FAILED, "", f"step {s.step} ({s.action}) failed: {problem}"
            self.done.append(s)

        evidence = evidence_for(self.goal, session.trajectory)
        missing = [a for a, proof in evidence.items() if proof is None]
        if self.reviewer is not None:
            self.where = "review"
            await self._review(session, self.reviewer, missing)
        if missing:
            proven = f"{len(evidence) - len(missing)} of {len(evidence)} acceptance criteria proven"
            return TerminalStatus.PARTIAL, "", f"partially complete: no evidence for {', '.join(missing)} ({proven})"
        return TerminalStatus.SUCCEEDED, "", f"all {len(evidence)} acceptance criteria proven"

    async def _review(self, session: RunSession, reviewer: Model, missing: list[str]) -> None:
        by_id = {r.call_id: r for r in session.trajectory.tool_results()}
        facts = [{"step": s.step, "tool": s.tool, "ok": r.ok, "data": r.data, "error": r.error}
                 for s in self.done for r in [by_id[f"plan_step_{s.step}"]]]
        lang = self._lang(session)
        prompt = i18n.text(
            lang, "plan.review", task=self.goal.task,
            acceptance=i18n.text(lang, "ledger.sep").join(f"{a.id}: {a.description or a.tool}"
                                                          for a in self.goal.acceptance) or i18n.text(lang, "plan.none"),
            evidence=json.dumps(facts, ensure_ascii=False, default=str)[:2000])
        try:
            text = await self._ask(session, reviewer, [Message(role="user", content=prompt)])
        except (UsageError, RunStop, RunAborted):
            raise
        except Exception as exc:   # the evidence still decides; keep the failure
            self.review = {"error": f"{type(exc).__name__}: {exc}"}
            return
        try:
            self.review = dict(_extract_json(text, lambda v: isinstance(v, dict), "object"))
        except ValueError as exc:
            self.review = {"error": f"the reviewer's reply is not JSON: {exc}", "text": text[:500]}
            return
        passed = self.review.get("passed")
        if isinstance(passed, str):
            passed = passed.strip().lower() in ("true", "yes", "passed")
        if passed and missing:
            self.review["disagreement"] = (f"the reviewer says passed, but there is no evidence for "
                                           f"{', '.join(missing)}; the evidence decides")
        elif passed is False and not missing:
            self.review["disagreement"] = ("the reviewer says not passed, but every acceptance criterion has "
                                           "evidence; the evidence decides")

    def final_reply(self, session: RunSession, status: TerminalStatus, why: str) -> str:
        evidence = evidence_for(self.goal, session.trajectory)
        lang = self._lang(session)
        t = lambda key, **kw: i18n.text(lang, key, **kw)   # noqa: E731
        op, cp = ("（", "）") if lang == "zh" else (" (", ")")
        sep, none = t("ledger.sep"), t("ledger.none")
        done = [f"step {s.step} {s.action}{op}{s.tool}{cp}" for s in self.done]
        not_done = [f"step {s.step} {s.action}{op}{t('plan.failed' if s.step == self.failed_step else 'plan.not_run')}{cp}"
                    for s in self.plan[len(self.done):]]
        lines = [t("ledger.done") + (sep.join(done) or none), t("ledger.not_done") + (sep.join(not_done) or none)]
        if evidence:
            lines.append(t("plan.evidence") + sep.join(f"{a} ← {proof}" if proof else t("plan.missing", a=a)
                                                        for a, proof in evidence.items()))
        if self.review and self.review.get("disagreement"):
            lines.append(t("plan.disagreement") + str(self.review["disagreement"]))
        lines.append(t("plan.result", status=status.value, why=why))
        return "\n".join(lines)


async def resume_plan_execute_review(run_id: str, model: Model, tools: ToolSet, goal: GoalSpec, *, store: Any,
                                     config: RunConfig = RunConfig(), reviewer: Model | None = None) -> PlanRunResult:
    """Continue a stored plan-mode run from its last checkpoint (see :mod:`tether.runtime.durable`)."""
    from .durable import resume_task

    agent = PlanExecuteReview(model, goal, reviewer)
    result = await resume_task(run_id, agent, tools, store=store, config=config)
    return _plan_result(agent, goal, result)


def _plan_result(agent: PlanExecuteReview, goal: GoalSpec, result: Any) -> PlanRunResult:
    finished = result.trajectory.finished
    return PlanRunResult(result.trajectory, result.status, result.reply, agent.plan, agent.failed_step,
                         evidence_for(goal, result.trajectory), agent.review, finished.reason if finished else "",
                         result.error)


async def run_plan_execute_review(model: Model, tools: ToolSet, goal: GoalSpec, *, config: RunConfig = RunConfig(),
                                  reviewer: Model | None = None, run_id: str | None = None) -> PlanRunResult:
    """Plan, execute, review (see the module docstring). Never raises for run
    failures (a model error ends as ``error``); raises :class:`UsageError` for
    misuse (e.g. a scripted model called once too often), after recording it.
    With a store in ``config``, the run, its events and its side-effect ledger
    are stored under its own run id like any other run."""
    agent = PlanExecuteReview(model, goal, reviewer)
    config = replace(config, meta={**config.meta, "mode": "plan_execute_review"})
    session = RunSession.start(model_name=agent.name, tools=tools, config=config, run_id=run_id)
    session.add(UserMessage(content=goal.render(), source="input"))
    result = await drive(session, agent, AgentTask(tools=tools, system_prompt=config.system_prompt,
                                                   max_steps=config.max_steps))
    return _plan_result(agent, goal, result)


def run_plan_execute_review_sync(*args: Any, **kwargs: Any) -> PlanRunResult:
    """Synchronous wrapper; refuses to nest in a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_plan_execute_review(*args, **kwargs))
    raise UsageError("run_plan_execute_review_sync() called inside a running event loop; "
                     "use `await run_plan_execute_review(...)` instead")
