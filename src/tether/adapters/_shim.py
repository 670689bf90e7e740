"""A stand-in for ``tether.runtime.RunSession`` until it lands on main.

It implements the RunSession contract the adapters are written against on
top of the existing run loop's pieces (``runtime.runner._Loop``: the same
guard plumbing, gates, recorder and finish-up), so that when the real
session lands the adapters switch by changing one import in ``_compat``.
Delete this module then.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol, Sequence

from ..errors import UsageError
from ..events import AgentMessage, RunFinished, RunStarted, ToolResultEvent, UserMessage
from ..guards import Verdict
from ..messages import Decision, Message, ToolCallRequest
from ..models import ModelRequest, ModelResponse
from ..runtime.runner import RunConfig, RunResult, SimulatedUser, Turn, _Loop, _Recorder
from ..status import TerminalStatus
from ..tools import ToolResult, ToolSet


class RunStop(Exception):
    """A guard (or the step cap, or an unanswered question) ended the run."""

    def __init__(self, status: TerminalStatus, reply: str = "", reason: str = "", verdict: Verdict | None = None):
        super().__init__(f"{status}: {reason}")
        self.status, self.reply, self.reason, self.verdict = status, reply, reason, verdict


@dataclass
class AgentTask:
    message: str | None
    history: list[Turn] = field(default_factory=list)
    tools: ToolSet = field(default_factory=ToolSet)
    system_prompt: str | None = None
    max_steps: int = 30


class Agent(Protocol):
    name: str

    async def run(self, session: "RunSession", task: AgentTask) -> None: ...


Finisher = Callable[[ModelRequest], Awaitable[ModelResponse]]


class _FinisherModel:
    """What the loop's finish-up asks: the adapter's own model, when it gave one."""

    def __init__(self, name: str):
        self.name = name
        self.finisher: Finisher | None = None

    async def request(self, request: ModelRequest) -> ModelResponse:
        if self.finisher is None:
            raise RuntimeError("no finish-up model attached to this session")
        return await self.finisher(request)


class RunSession:
    def __init__(self, loop: _Loop, rec: _Recorder):
        self._loop, self._rec = loop, rec
        self.reply = ""

    # -- lifecycle -------------------------------------------------------------
    @classmethod
    def start(cls, *, model_name: str, tools: ToolSet, config: RunConfig = RunConfig(), run_id: str | None = None,
              case_id: str | None = None, trial: int = 0, user: SimulatedUser | None = None) -> "RunSession":
        run_id = run_id or uuid.uuid4().hex[:12]
        if config.store is not None:
            config.store.create_run(run_id, model=model_name, case_id=case_id, meta=dict(config.meta))
        rec = _Recorder(config.clock, config.store, run_id)
        rec.add(RunStarted(run_id=run_id, model=model_name, case_id=case_id, trial=trial, tools=tools.names(),
                           guards=config.guards_label, meta=dict(config.meta)))
        loop = _Loop(_FinisherModel(model_name), tools, user, config, rec, [])
        finish_up = loop._finish_up

        async def maybe_finish_up(verdict: Verdict) -> str:
            # a session with no model (the MCP proxy) has nobody to ask for a final answer
            return await finish_up(verdict) if loop.model.finisher is not None else ""

        loop._finish_up = maybe_finish_up  # type: ignore[method-assign]
        return cls(loop, rec)

    @property
    def run_id(self) -> str:
        return self._rec.run_id

    @property
    def trajectory(self):
        return self._rec.trajectory

    @property
    def tools(self) -> ToolSet:
        return self._loop.tools

    @property
    def step(self) -> int:
        return self._loop.step

    def set_finisher(self, finisher: Finisher) -> None:
        """(not in the contract) the request a guard's finish-up sends, with no tools."""
        self._loop.model.finisher = finisher

    def conversation(self, message: str | None = None, history: Sequence[Turn] = (),
                     system_prompt: str | None = None) -> None:
        L = self._loop
        if system_prompt:
            L.messages.append(Message(role="system", content=system_prompt))
        for turn in history:
            if turn.role == "user":
                self._rec.add(UserMessage(content=turn.content, source="history"))
                L.messages.append(Message(role="user", content=turn.content))
            else:
                self._rec.add(AgentMessage(content=turn.content, kind="question" if turn.question else "text",
                                           source="history"))
                L.messages.append(Message(role="assistant", content=turn.content))
        if message is not None:
            self._rec.add(UserMessage(content=message, source="input"))
            L.messages.append(Message(role="user", content=message))

    # -- the model -------------------------------------------------------------
    async def before_model(self, request: ModelRequest) -> ModelRequest:
        L = self._loop
        if L.step >= L.config.max_steps:
            raise RunStop(TerminalStatus.STEP_LIMIT, L.last_text, f"step cap {L.config.max_steps} reached")
        L.step += 1
        L.messages = list(request.messages)     # the finish-up request is built from these
        messages = list(request.messages)
        pinned = L._pinned()
        if pinned:
            messages.insert(0, Message(role="system", content="\n".join(pinned)))
        if L.pending_hints:
            messages.append(Message(role="system", content="\n".join(L.pending_hints)))
        out = request.model_copy(update={"messages": messages, "step": L.step})
        verdict = await L._ask_guards("before_model", out)
        if verdict:
            await self._stop(verdict)
        L.pending_hints.clear()
        return out

    def record_request(self, request: ModelRequest, *, model: str | None = None, params: dict | None = None) -> None:
        from ..events import ModelRequestEvent

        self._rec.add(ModelRequestEvent(step=self._loop.step, message_count=len(request.messages),
                                        tools=[t.name for t in request.tools], request_hash=request.canonical_hash()))

    def record_response(self, response: ModelResponse, *, latency_ms: float | None = None) -> Decision:
        from ..events import ModelDecisionEvent

        L = self._loop
        L.model_calls += 1
        decision = L._unique_ids(response.decision)
        L.usage = L.usage + response.usage
        self._rec.add(ModelDecisionEvent(step=L.step, kind=decision.kind, tool_calls=decision.tool_calls,
                                         text=decision.text, usage=response.usage))
        if decision.text:
            L.last_text = decision.text
        return decision

    async def after_model(self, response: ModelResponse) -> None:
        verdict = await self._loop._ask_guards("after_model", response)
        if verdict:
            await self._stop(verdict)

    # -- tools and the user ----------------------------------------------------
    async def tool(self, call: ToolCallRequest) -> ToolResult:
        L = self._loop
        ending = await L._tool(call)
        event = next(e for e in reversed(self._rec.trajectory.events) if isinstance(e, ToolResultEvent))
        result = ToolResult(ok=event.ok, data=event.data, error=event.error, error_type=event.error_type,
                            source=event.source)
        if ending:
            status, reply, reason = ending
            raise RunStop(status, reply, reason)
        return result

    def take_hints(self) -> list[str]:
        hints, self._loop.pending_hints = list(self._loop.pending_hints), []
        return hints

    async def ask_user(self, question: str) -> str | None:
        L = self._loop
        self._rec.add(AgentMessage(content=question, kind="question", source="model", step=L.step))
        if L.user is None:
            return None
        answer = await L.user.reply(question, self._rec.trajectory)
        if answer is None:
            return None
        self._rec.add(UserMessage(content=answer, source="simulator"))
        return answer

    async def final(self, text: str) -> None:
        self.reply = text
        self._loop.last_text = text or self._loop.last_text
        verdict = await self._loop._ask_guards("on_final", text)
        if verdict:
            raise RunStop(verdict.status or TerminalStatus.NEEDS_HUMAN, text, verdict.message, verdict)

    async def _stop(self, verdict: Verdict) -> None:
        status, reply, reason = await self._loop._end(verdict)
        raise RunStop(status, reply, reason, verdict)

    def finish(self, status: TerminalStatus, reply: str = "", reason: str = "", error: str | None = None) -> RunResult:
        L, rec = self._loop, self._rec
        rec.add(RunFinished(status=status, reply=reply, steps=L.step, usage=L.usage, error=error, reason=reason))
        if rec.store is not None:
            rec.store.finish_run(rec.run_id, status, reply, reason)
        return RunResult(rec.trajectory, status, reply, error)


async def drive_agent(agent: Agent, session: RunSession, task: AgentTask) -> RunResult:
    """What the harness does with an Agent: run it, and finish the session however it ended."""
    try:
        await agent.run(session, task)
    except RunStop as stop:
        return session.finish(stop.status, stop.reply, stop.reason)
    except UsageError:
        session.finish(TerminalStatus.ERROR, "", "misuse")
        raise
    except Exception as exc:
        return session.finish(TerminalStatus.ERROR, session._loop.last_text, "exception", f"{type(exc).__name__}: {exc}")
    return session.finish(TerminalStatus.COMPLETED, session.reply, "final answer")



async def run_case(case: Any, agent: Agent, *, guards: Sequence[Any] = (), guards_label: str = "off",
                   trial: int = 0, store: Any = None, seed: int = 0) -> tuple[Any, RunResult]:
    """One C4-style case with an Agent, as ``tether eval --agent`` will do:
    (score, RunResult). Stand-in until main's runner takes agents."""
    from ..evals.runner import REFERENCE_SYSTEM_PROMPT, case_world
    from ..evals.scoring import score_trajectory

    tools, user = case_world(case, seed=seed + trial)
    config = RunConfig(max_steps=case.max_steps, system_prompt=REFERENCE_SYSTEM_PROMPT, guards=tuple(guards),
                       guards_label=guards_label, store=store, meta={"suite": case.suite})
    session = RunSession.start(model_name=agent.name, tools=tools, config=config, case_id=case.id, trial=trial,
                               user=user, run_id=f"{agent.name.replace(':', '_')}-{guards_label}-{case.id}-t{trial}")
    history = [Turn(t.role, t.content, t.question) for t in case.input.history]
    session.conversation(message=case.input.message, history=history)
    task = AgentTask(message=case.input.message, history=history, tools=tools,
                     system_prompt=REFERENCE_SYSTEM_PROMPT, max_steps=case.max_steps)
    result = await drive_agent(agent, session, task)
    return score_trajectory(case, result.trajectory), result
