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

Unlike the run loop: no finish-up request and no ``on_stop`` / ``on_final``
hooks, since tether writes the reply from the facts (done / not done / why);
hints are recorded but only the reviewer sees them; arguments are static (a
step cannot use an earlier step's result). Model requests (plan, review) ask
before_model / after_model; each model request and each plan step is one step.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from ..errors import ModelFailure, UsageError
from ..events import ModelDecisionEvent, ModelRequestEvent, RunFinished, RunStarted, Trajectory, UserMessage
from ..guards import Verdict
from ..guards.goal import GoalSpec, evidence_for
from ..guards.result import verify_result
from ..messages import Message, ToolCallRequest, canonical_json
from ..models import Model, ModelRequest
from ..status import TerminalStatus
from ..tools import ToolSet
from .runner import RunConfig, _Ending, _Loop, _Recorder

PLAN_PROMPT = """把任务拆成有序步骤，每步含：动作、工具、参数、验收标准、结果必须包含的字段。
只能使用下列工具：
{tools}
只输出 JSON 数组：[{{"step":1,"action":"...","tool":"...","arguments":{{...}},"acceptance":"...","expect_fields":["..."]}}]
计划中的动作不算完成，必须等执行结果。"""

REVIEW_PROMPT = """对照验收标准逐条核对证据，输出 JSON：
{{"passed":true/false,"missing":["..."],"notes":"..."}}
目标：{task}
验收：{acceptance}
证据：{evidence}"""


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


class _PlanLoop(_Loop):
    """The run loop's recorder and guard plumbing, driven by a plan."""

    def __init__(self, model: Model, tools: ToolSet, config: RunConfig, rec: _Recorder, goal: GoalSpec,
                 reviewer: Model | None):
        super().__init__(model, tools, None, config, rec, [])
        self.goal, self.reviewer = goal, reviewer
        self.plan: list[PlanStep] = []
        self.done: list[PlanStep] = []
        self.failed_step: int | None = None
        self.review: dict[str, Any] | None = None

    async def _end(self, verdict: Verdict) -> _Ending:
        """A guard ended the run: no finish-up request, the reply is written from facts."""
        if verdict.action == "escalate":
            return TerminalStatus.NEEDS_HUMAN, "", verdict.message
        return verdict.status or TerminalStatus.LOOP_ABORTED, "", verdict.message

    def _stopped(self, ending: _Ending, where: str) -> tuple[TerminalStatus, str]:
        return ending[0], f"{where} stopped by {getattr(self._tripped_by, 'name', 'guard')}: {ending[2]}"

    async def _ask(self, model: Model, messages: list[Message]) -> tuple[str, _Ending | None]:
        """One model request without tools, recorded and guarded like the run loop's."""
        self.step += 1
        pinned = self._pinned()
        if pinned:
            messages.insert(0, Message(role="system", content="\n".join(pinned)))
        if self.pending_hints:
            messages.append(Message(role="system", content="\n".join(self.pending_hints)))
        request = ModelRequest(messages=messages, tools=[], step=self.step)
        verdict = await self._ask_guards("before_model", request)
        if verdict:
            return "", await self._end(verdict)
        self.pending_hints.clear()
        self.rec.add(ModelRequestEvent(step=self.step, message_count=len(messages), tools=[],
                                       request_hash=request.canonical_hash()))
        name = getattr(model, "name", "model")
        try:
            response = await model.request(request)
        except UsageError:
            raise
        except Exception as exc:
            raise ModelFailure(name, self.step, f"{type(exc).__name__}: {exc}") from exc
        self.model_calls += 1
        self.usage = self.usage + response.usage
        d = response.decision
        self.rec.add(ModelDecisionEvent(step=self.step, kind=d.kind, tool_calls=d.tool_calls, text=d.text,
                                        usage=response.usage))
        verdict = await self._ask_guards("after_model", response)
        return d.text, (await self._end(verdict) if verdict else None)

    async def run_plan(self) -> tuple[TerminalStatus, str]:
        tool_list = "\n".join(f"- {s.name}: {s.description} 参数: {canonical_json(s.parameters)}"
                              + ("（有副作用）" if s.side_effect else "") for s in self.specs)
        messages = [Message(role="system", content=self.config.system_prompt)] if self.config.system_prompt else []
        messages += [Message(role="system", content=PLAN_PROMPT.format(tools=tool_list)),
                     Message(role="user", content=self.goal.render())]
        text, ending = await self._ask(self.model, messages)
        if ending:
            return self._stopped(ending, "planning")
        self.plan, problem = _parse_plan(text, self.tools)
        if problem:
            return TerminalStatus.FAILED, problem
        if len(self.plan) > self.config.max_steps:
            return TerminalStatus.STEP_LIMIT, f"the plan has {len(self.plan)} steps; step cap {self.config.max_steps}"

        for s in self.plan:
            self.step += 1
            call = ToolCallRequest(id=f"plan_step_{s.step}", name=s.tool, arguments=s.arguments)
            ending = await self._tool(call)
            if ending:
                self.failed_step = s.step
                return self._stopped(ending, f"step {s.step} ({s.action})")
            result = next(r for r in reversed(self.rec.trajectory.tool_results()) if r.call_id == call.id)
            problem = verify_result(result, s.expect_fields)
            if problem:
                self.failed_step = s.step
                return TerminalStatus.FAILED, f"step {s.step} ({s.action}) failed: {problem}"
            self.done.append(s)

        evidence = evidence_for(self.goal, self.rec.trajectory)
        missing = [a for a, proof in evidence.items() if proof is None]
        if self.reviewer is not None:
            ending = await self._review(self.reviewer, missing)
            if ending:
                return self._stopped(ending, "review")
        if missing:
            proven = f"{len(evidence) - len(missing)} of {len(evidence)} acceptance criteria proven"
            return TerminalStatus.PARTIAL, f"partially complete: no evidence for {', '.join(missing)} ({proven})"
        return TerminalStatus.SUCCEEDED, f"all {len(evidence)} acceptance criteria proven"

    async def _review(self, reviewer: Model, missing: list[str]) -> _Ending | None:
        by_id = {r.call_id: r for r in self.rec.trajectory.tool_results()}
        facts = [{"step": s.step, "tool": s.tool, "ok": r.ok, "data": r.data, "error": r.error}
                 for s in self.done for r in [by_id[f"plan_step_{s.step}"]]]
        prompt = REVIEW_PROMPT.format(
            task=self.goal.task,
            acceptance="；".join(f"{a.id}: {a.description or a.tool}" for a in self.goal.acceptance) or "（无）",
            evidence=json.dumps(facts, ensure_ascii=False, default=str)[:2000])
        try:
            text, ending = await self._ask(reviewer, [Message(role="user", content=prompt)])
        except ModelFailure as exc:   # the evidence still decides; keep the failure
            self.review = {"error": str(exc)}
            return None
        if ending:
            return ending
        try:
            self.review = dict(_extract_json(text, lambda v: isinstance(v, dict), "object"))
        except ValueError as exc:
            self.review = {"error": f"the reviewer's reply is not JSON: {exc}", "text": text[:500]}
            return None
        passed = self.review.get("passed")
        if isinstance(passed, str):
            passed = passed.strip().lower() in ("true", "yes", "passed")
        if passed and missing:
            self.review["disagreement"] = (f"the reviewer says passed, but there is no evidence for "
                                           f"{', '.join(missing)}; the evidence decides")
        elif passed is False and not missing:
            self.review["disagreement"] = ("the reviewer says not passed, but every acceptance criterion has "
                                           "evidence; the evidence decides")
        return None

    def reply(self, status: TerminalStatus, why: str, evidence: dict[str, str | None]) -> str:
        done = [f"step {s.step} {s.action}（{s.tool}）" for s in self.done]
        not_done = [f"step {s.step} {s.action}（{'未通过' if s.step == self.failed_step else '未执行'}）"
                    for s in self.plan[len(self.done):]]
        lines = ["已完成：" + ("；".join(done) or "无"), "未完成：" + ("；".join(not_done) or "无")]
        if evidence:
            lines.append("验收证据：" + "；".join(f"{a} ← {proof}" if proof else f"{a} 缺证据"
                                              for a, proof in evidence.items()))
        if self.review and self.review.get("disagreement"):
            lines.append(f"复核分歧：{self.review['disagreement']}")
        lines.append(f"结果：{status.value}（{why}）")
        return "\n".join(lines)


async def run_plan_execute_review(model: Model, tools: ToolSet, goal: GoalSpec, *, config: RunConfig = RunConfig(),
                                  reviewer: Model | None = None, run_id: str | None = None) -> PlanRunResult:
    """Plan, execute, review (see the module docstring). Never raises for run
    failures (a model error ends as ``error``); raises :class:`UsageError` for
    misuse (e.g. a scripted model called once too often), after recording it."""
    rec = _Recorder(config.clock)
    rec.add(RunStarted(run_id=run_id or uuid.uuid4().hex[:12], model=getattr(model, "name", type(model).__name__),
                       tools=tools.names(), guards=config.guards_label,
                       meta={**config.meta, "mode": "plan_execute_review"}))
    rec.add(UserMessage(content=goal.render(), source="input"))
    loop = _PlanLoop(model, tools, config, rec, goal, reviewer)
    error: str | None = None
    try:
        status, reason = await loop.run_plan()
    except UsageError as exc:
        rec.add(RunFinished(status=TerminalStatus.ERROR, reply="", steps=loop.step, usage=loop.usage,
                            error=str(exc), reason="misuse"))
        exc.trajectory = rec.trajectory  # type: ignore[attr-defined]
        raise
    except Exception as exc:  # a run failure: recorded, never a crash of the caller
        status, reason, error = TerminalStatus.ERROR, "exception", f"{type(exc).__name__}: {exc}"
    evidence = evidence_for(goal, rec.trajectory)
    reply = loop.reply(status, error or reason, evidence)
    rec.add(RunFinished(status=status, reply=reply, steps=loop.step, usage=loop.usage, error=error, reason=reason))
    return PlanRunResult(rec.trajectory, status, reply, loop.plan, loop.failed_step, evidence, loop.review,
                         reason, error)


def run_plan_execute_review_sync(*args: Any, **kwargs: Any) -> PlanRunResult:
    """Synchronous wrapper; refuses to nest in a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_plan_execute_review(*args, **kwargs))
    raise UsageError("run_plan_execute_review_sync() called inside a running event loop; "
                     "use `await run_plan_execute_review(...)` instead")
