"""One run's record and gates: the object every agent drives.

A :class:`RunSession` is a run in progress. It owns the run's record (the
event stream, persisted to the store when there is one), its state
(:class:`RunState`, which *is* the checkpoint), the guard chain and the gates
around each tool call (approvals, then the side-effect ledger). tether's own
loop (:mod:`tether.runtime.loop`) drives it; so do framework adapters, from
the framework's own hooks::

    session = RunSession.start(model_name="my-agent", tools=toolset, config=config)
    session.conversation(message="...")
    request = await session.before_model(ModelRequest(messages=..., tools=...))   # guards; may raise RunStop
    session.record_request(request, model="gpt-x")
    decision = session.record_response(response, latency_ms=812.0)
    await session.after_model(response)
    result = await session.tool(call)          # guards, gates, the harness's tools, recorded; may raise RunStop
    result = session.finish(TerminalStatus.COMPLETED, reply, "final answer")

Guards and gates end a run by raising :class:`~tether.errors.RunStop`; the
driver catches it and finishes the run. Nothing here is C4-specific.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from ..errors import LeaseLost, ModelFailure, RunAborted, RunStop, UsageError
from ..events import (
    AgentMessage,
    GuardTripped,
    ModelDecisionEvent,
    ModelRequestEvent,
    RunFinished,
    RunResumed,
    RunStarted,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
    UserMessage,
    message_delta,
    outcome_of,
)
from ..guards import GuardContext, Intervention
from ..guards._base import GuardChain, Trip
from ..messages import Decision, Message, ToolCallRequest, Usage, canonical_json
from ..models import Model, ModelRequest, ModelResponse
from ..status import TerminalStatus
from ..tools import ToolResult, ToolSet
from ._resume import LeaseHeartbeat, Replaying


class SimulatedUser(Protocol):
    """Answers the agent's questions. ``None`` means the user says nothing more."""

    async def reply(self, question: str, trajectory: Trajectory) -> str | None: ...


@dataclass(frozen=True)
class Turn:
    """One turn of prior conversation."""

    role: str            # "user" or "agent"
    content: str
    question: bool = False


@dataclass(frozen=True)
class RunConfig:
    max_steps: int = 30
    system_prompt: str | None = None
    guards: Sequence[Any] = ()
    guards_label: str = "off"
    clock: Callable[[], float] = time.perf_counter
    meta: dict[str, Any] = field(default_factory=dict)
    # The store (tether.store.SQLiteStore) the run is written to: events, one
    # checkpoint per step and the side-effect ledger, so the run can resume.
    store: Any = None
    # Human approval gates for risky tools (tether.runtime.approvals.ApprovalGate).
    approvals: Any = None
    # What kind of run this is and which eval it belongs to (recorded on run_started).
    kind: str = "run"
    eval_id: str | None = None
    # False: a run whose state lives elsewhere (a gateway's conversation: its client
    # holds the history) records its events only, no checkpoints; it cannot be resumed.
    checkpoints: bool = True


@dataclass
class RunResult:
    trajectory: Trajectory
    status: TerminalStatus
    reply: str
    error: str | None = None
    error_kind: str | None = None

    @property
    def run_id(self) -> str:
        started = self.trajectory.started
        return started.run_id if started else ""


@dataclass
class RunState:
    """Everything the loop needs to continue a run: this is the checkpoint."""

    messages: list[Message] = field(default_factory=list)
    step: int = 0
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0
    tool_calls: int = 0
    last_text: str = ""
    pending_hints: list[str] = field(default_factory=list)
    pending_calls: list[ToolCallRequest] = field(default_factory=list)
    seen_ids: set[str] = field(default_factory=set)
    strategy: dict[str, Any] = field(default_factory=dict)    # a strategy's own data (plan mode's plan)
    queued_s: float = 0.0     # seconds the agent's requests waited for a connection slot (not the agent's time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": [m.model_dump(mode="json") for m in self.messages],
            "step": self.step, "usage": self.usage.model_dump(), "model_calls": self.model_calls,
            "tool_calls": self.tool_calls, "last_text": self.last_text, "pending_hints": list(self.pending_hints),
            "pending_calls": [c.model_dump(mode="json") for c in self.pending_calls],
            "seen_ids": sorted(self.seen_ids), "strategy": self.strategy, "queued_s": self.queued_s,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunState":
        return cls(messages=[Message.model_validate(m) for m in d["messages"]], step=d["step"],
                   usage=Usage.model_validate(d["usage"]), model_calls=d["model_calls"], tool_calls=d["tool_calls"],
                   last_text=d["last_text"], pending_hints=list(d["pending_hints"]),
                   pending_calls=[ToolCallRequest.model_validate(c) for c in d["pending_calls"]],
                   seen_ids=set(d["seen_ids"]), strategy=dict(d.get("strategy") or {}),
                   queued_s=float(d.get("queued_s") or 0.0))


# A run's lease outlives its holder by this long after the last checkpoint (a crashed
# process's run can be resumed by another once it runs out).
LEASE_TTL_S = 120.0

# Sessions of this process still driving their run (a lease held by this pid but
# not in here was left by a session that died with an exception).
_DRIVING: set[str] = set()


def new_holder() -> str:
    return f"{os.getpid()}@{socket.gethostname()}/{uuid.uuid4().hex[:8]}"


def take_lease(store: Any, run_id: str, holder: str) -> None:
    """Take the run's lease for ``holder`` (raises RunBusy when another process drives it)."""
    store.acquire_lease(run_id, holder, LEASE_TTL_S, stale=_stale_lease)
    _DRIVING.add(holder)


def _stale_lease(row: dict) -> bool:
    """The lease's holder is gone: a dead process on this host, or a session of
    this process that is no longer driving."""
    if row["host"] != socket.gethostname():
        return False
    if row["pid"] == os.getpid():
        return row["holder"] not in _DRIVING
    try:
        os.kill(row["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


# Called with (session, event) for every event a session records (tether.report.otel's live export).
EVENT_LISTENERS: list[Callable[["RunSession", Any], None]] = []
# Observers of a whole run recorded in another process (a Ray worker's trial), called once it is stored here.
RECORDED_LISTENERS: list[Callable[[Trajectory], Any]] = []

_CURRENT: contextvars.ContextVar["RunSession | None"] = contextvars.ContextVar("tether_run_session", default=None)


def current_session() -> "RunSession | None":
    """The session driving the current task, if any (judges, LLM users and
    drift checks record their requests into it)."""
    return _CURRENT.get()


async def side_request(model: Model, request: ModelRequest, *, role: str) -> ModelResponse:
    """A model request made *for* a run but not by its agent (a simulated
    user, a drift check): recorded as events of the current run with ``role``,
    so its cost is kept apart from the agent's. Without a session it is a plain request."""
    session = current_session()
    started = time.perf_counter()
    response = await model.request(request)
    if session is not None:
        session.record_side(request, response, role=role, model=getattr(model, "name", type(model).__name__),
                            latency_ms=(time.perf_counter() - started) * 1000)
    return response


def model_params(model: Any) -> dict[str, Any]:
    """The request parameters a provider model sends (its ``params()``), {} for other models."""
    params = getattr(model, "params", None)
    out = params() if callable(params) else None
    return dict(out) if isinstance(out, dict) else {}


class RunSession(Replaying):
    """A run in progress: record, state, guards and gates (see the module docstring)."""

    def __init__(self, *, run_id: str, model_name: str, tools: ToolSet, config: RunConfig,
                 user: SimulatedUser | None = None, state: RunState | None = None,
                 trajectory: Trajectory | None = None, offset_ms: float = 0.0, holder: str | None = None):
        self.run_id = run_id
        self.model_name = model_name
        self.tools = tools
        self.config = config
        self.user = user
        self.state = state or RunState()
        self.trajectory = trajectory or Trajectory()
        self.chain = GuardChain(config.guards)
        self.specs = tools.specs()
        self.store = config.store
        self.clock = config.clock
        self.t0 = self.clock() - offset_ms / 1000
        self._persisted = len(self.trajectory)
        self._sent: dict[str, list[Message]] = {}      # last full request per role, for deltas
        self.stopped_by: Any = None
        self.finished: RunResult | None = None
        self._tool_lock: asyncio.Lock | None = None
        self.lease_lost = False                   # another process took the run over: write nothing more
        self._heartbeat: LeaseHeartbeat | None = None
        self._last_checkpoint: tuple | None = None
        self._renewed_at = time.monotonic()       # the lease was just taken (or renewed by the caller)
        # A run resumed by replay (a framework agent): recorded events not yet re-reached,
        # the resume event to write when they are, the simulated user's state at the checkpoint.
        self._replay: collections.deque | None = None
        self._resumed: RunResumed | None = None
        self._resumed_user: Any = None
        from .gates import default_gates
        self.gates = default_gates(self)
        if holder is None:
            holder = new_holder()
            if self.store is not None:       # one process drives a run at a time
                take_lease(self.store, run_id, holder)
        self.holder = holder
        self._token = _CURRENT.set(self)

    # -- lifecycle ------------------------------------------------------------------
    @classmethod
    def start(cls, *, model_name: str, tools: ToolSet, config: RunConfig = RunConfig(),
              user: SimulatedUser | None = None, run_id: str | None = None, case_id: str | None = None,
              trial: int = 0) -> "RunSession":
        """Open a new run: records ``run_started`` (and creates the run in the store)."""
        from ..ids import check_id

        run_id = check_id(run_id, "run id") if run_id is not None else new_run_id()
        if config.store is not None:
            config.store.create_run(run_id, model=model_name, case_id=case_id, meta=dict(config.meta),
                                    kind=config.kind, eval_id=config.eval_id, trial=trial, guards=config.guards_label)
        session = cls(run_id=run_id, model_name=model_name, tools=tools, config=config, user=user)
        session.add(RunStarted(run_id=run_id, model=model_name, case_id=case_id, trial=trial, tools=tools.names(),
                               guards=config.guards_label, meta=dict(config.meta), kind=config.kind,  # type: ignore[arg-type]
                               eval_id=config.eval_id, tool_specs=session.specs))
        return session

    def conversation(self, message: str | None = None, history: Sequence[Turn] = (), *, record: bool = True) -> None:
        """Record the conversation the run starts from and seed the messages
        (``record=False``: seed only; a run resumed by replay has it recorded)."""
        s = self.state
        add = self.add if record else (lambda event: event)
        if self.config.system_prompt:
            s.messages.append(Message(role="system", content=self.config.system_prompt))
        for turn in history:
            if turn.role == "user":
                add(UserMessage(content=turn.content, source="history"))
                s.messages.append(Message(role="user", content=turn.content))
            else:
                add(AgentMessage(content=turn.content, kind="question" if turn.question else "text",
                                 source="history"))
                s.messages.append(Message(role="assistant", content=turn.content))
        if message is not None:
            add(UserMessage(content=message, source="input"))
            s.messages.append(Message(role="user", content=message))

    def add(self, event):
        if self._replay is not None:
            recorded = self._replayed(event)
            if recorded is not None:
                return recorded
        event.at_ms = round((self.clock() - self.t0) * 1000, 3)
        event = self.trajectory.append(event)
        for listener in EVENT_LISTENERS:     # observers (live OpenTelemetry export); they must not raise
            listener(self, event)
        return event

    def flush(self) -> None:
        """Write events not yet in the store (one transaction)."""
        if self.store is None or self._persisted >= len(self.trajectory):
            return
        batch = self.trajectory.events[self._persisted:]
        self.store.append_events(self.run_id, [(e.seq, e.model_dump(mode="json")) for e in batch])
        self._persisted = len(self.trajectory)

    def checkpoint(self, phase: str) -> None:
        """A checkpoint (runs with a store), taken by the session itself at the
        boundaries it owns: before each model request, after each model decision
        with tool calls, before and after each tool call. Renews the run's lease;
        a session that lost it stops (another process took over). A boundary with
        nothing new since the last checkpoint writes nothing; a run re-reaching
        its record (resumed by replay) only renews the lease."""
        if self.store is None or not self.config.checkpoints:
            return
        mark = (len(self.trajectory), self.state.step, len(self.state.pending_calls))
        if self._replay is not None or mark == self._last_checkpoint:
            self.hold_lease(recent_ok=True)
            return
        self.hold_lease()
        batch = self.trajectory.events[self._persisted:]
        self.store.save_checkpoint(self.run_id, self.state.step, phase, len(self.trajectory), self.snapshot(),
                                   events=[(e.seq, e.model_dump(mode="json")) for e in batch])
        self._persisted = len(self.trajectory)
        self._last_checkpoint = mark

    def hold_lease(self, *, recent_ok: bool = False) -> None:
        """Renew the run's lease, or raise LeaseLost (writing nothing) when another
        process holds it now: checked before every checkpoint written and before a
        side effect's outcome is written to the ledger. ``recent_ok``: a boundary
        that writes nothing skips the renewal when the last one is fresh (nobody
        can take a lease before it expires)."""
        if self.store is None:
            return
        hb = self._heartbeat
        now = time.monotonic()
        if recent_ok and not self.lease_lost and not (hb is not None and hb.lost) \
                and now - self._renewed_at < LEASE_TTL_S / 4:
            return
        if self.lease_lost or (hb is not None and hb.lost) or \
                not self.store.renew_lease(self.run_id, self.holder, LEASE_TTL_S):
            self.lease_lost = True
            raise LeaseLost(f"run {self.run_id}: this process ({self.holder}) no longer holds the run's lease; "
                            "another process took it over after it expired, so this one stops without "
                            "writing anything more")
        self._renewed_at = now

    def snapshot(self) -> dict[str, Any]:
        user_state = getattr(self.user, "state", None)
        return {**self.state.to_dict(), "guards": [g.state() for g in self.chain.guards],
                "user": user_state() if callable(user_state) else None, "sent": {
                    role: [m.model_dump(mode="json") for m in msgs] for role, msgs in self._sent.items()}}

    def restore(self, snap: dict[str, Any]) -> None:
        self.state = RunState.from_dict(snap)
        for guard, gstate in zip(self.chain.guards, snap.get("guards", [])):
            guard.load_state(gstate)
        load_user = getattr(self.user, "load_state", None)
        if snap.get("user") is not None and callable(load_user):
            load_user(snap["user"])
        self._sent = {role: [Message.model_validate(m) for m in msgs] for role, msgs in (snap.get("sent") or {}).items()}

    def finish(self, status: TerminalStatus, reply: str, reason: str, *, error: str | None = None,
               error_kind: str | None = None) -> RunResult:
        """Record ``run_finished`` (once) and return the result."""
        if self.finished is not None:
            return self.finished
        if self.lease_lost:
            raise LeaseLost(f"run {self.run_id}: this process no longer holds the run's lease; not finishing it")
        self._go_live()
        self.add(RunFinished(status=status, reply=reply, steps=self.state.step, usage=self.state.usage, error=error,
                             reason=reason, error_kind=error_kind))  # type: ignore[arg-type]
        if self.store is not None:
            self.flush()
            self.store.finish_run(self.run_id, status, reply, reason, digest=self.trajectory.digest(),
                                  error_kind=error_kind)
            self.store.release_lease(self.run_id, self.holder)
        self.let_go()
        self.finished = RunResult(self.trajectory, status, reply, error, error_kind)
        try:
            _CURRENT.reset(self._token)
        except ValueError:    # finished from another context (a framework's thread)
            _CURRENT.set(None)
        return self.finished

    def let_go(self) -> None:
        """This process stops driving the run (its lease is stale from now on if still held)."""
        _DRIVING.discard(self.holder)

    def abandon(self) -> None:
        """Stop after losing the lease: nothing more is written (the new holder drives the run)."""
        self.lease_lost = True
        self.let_go()
        try:
            _CURRENT.reset(self._token)
        except ValueError:
            _CURRENT.set(None)

    # -- guards ---------------------------------------------------------------------
    def ctx(self) -> GuardContext:
        s = self.state
        # The run's time without the time its requests queued for a connection slot
        # (other runs' requests on a shared connection are not this agent's doing).
        return GuardContext(trajectory=self.trajectory, step=s.step, usage=s.usage,
                            elapsed_s=self.clock() - self.t0 - s.queued_s, model_calls=s.model_calls,
                            tool_calls=s.tool_calls,
                            model_name=self.model_name, tools=self.specs, side_request=side_request)

    async def ask(self, hook: str, *args: Any) -> Intervention | None:
        """Ask the guard chain at ``hook``; every trip is recorded, hints are kept
        for the model's next request, the deciding verdict (if any) is returned."""
        trips, decisive = await self.chain.ask(hook, self.ctx(), *args)
        for trip in trips:
            self.record_trip(trip)
        if decisive is not None:
            self.stopped_by = decisive.guard
            return decisive.verdict
        return None

    def record_trip(self, trip: Trip) -> None:
        """Record a guard's verdict (a hint is kept for the model's next request).
        ``ask`` records the chain's; a harness that decides for a guard outside
        the chain (the LLM gateway's spent tool-call budget) records its own."""
        v = trip.verdict
        self.add(GuardTripped(step=self.state.step, guard=trip.guard.name, rule=v.rule, verdict=v.action,
                              message=v.message, numbers=dict(v.numbers)))
        if v.action == "hint":
            self.state.pending_hints.append(v.message)

    def take_hints(self) -> list[str]:
        """Hints not yet delivered to the model (a framework adapter appends them to a tool result)."""
        hints, self.state.pending_hints = self.state.pending_hints, []
        return hints

    def stop(self, verdict: Intervention) -> RunStop:
        if verdict.action == "escalate":
            return RunStop(TerminalStatus.NEEDS_HUMAN, self.state.last_text, verdict.message, verdict)
        return RunStop(verdict.status or TerminalStatus.LOOP_ABORTED, self.state.last_text, verdict.message, verdict)

    # -- the model ------------------------------------------------------------------
    async def before_model(self, request: ModelRequest) -> ModelRequest:
        """Start a step: ask the guards, then return the request to send with the
        pinned text first and undelivered hints last. Raises RunStop."""
        s = self.state
        self.checkpoint("before_model")
        if s.step >= self.config.max_steps:
            raise RunStop(TerminalStatus.STEP_LIMIT, s.last_text, f"step cap {self.config.max_steps} reached")
        s.step += 1
        messages = list(request.messages)
        pinned = self.chain.pinned(self.ctx())
        if pinned:
            messages.insert(0, Message(role="system", content="\n".join(pinned)))
        if s.pending_hints:
            messages.append(Message(role="system", content="\n".join(s.pending_hints)))
        request = request.model_copy(update={"messages": messages, "step": s.step})
        verdict = await self.ask("before_model", request)
        if verdict:
            raise self.stop(verdict)
        s.pending_hints.clear()
        return request

    def record_request(self, request: ModelRequest, *, model: str | None = None, role: str = "agent",
                       params: dict[str, Any] | None = None, request_hash: str | None = None) -> None:
        """Record what the model was sent (messages as a delta against the previous request).
        ``request_hash``: the request's canonical hash when the caller keeps it up to date
        as the conversation grows (the LLM gateway), instead of hashing it all again."""
        keep, added = message_delta(self._sent.get(role, []), request.messages)
        self._sent[role] = list(request.messages)
        self.add(ModelRequestEvent(step=request.step or self.state.step, message_count=len(request.messages),
                                   tools=[t.name for t in request.tools],
                                   request_hash=request_hash or request.canonical_hash(),
                                   role=role, model=model or self.model_name, keep=keep, messages=added,  # type: ignore[arg-type]
                                   params=params or {}))

    def record_response(self, response: ModelResponse, *, latency_ms: float = 0.0) -> Decision:
        """Record the agent's decision and usage; returns the decision with call ids unique in the run.
        A provider's response brings its own timing: the latency is its time on the wire,
        and the time it queued for a connection slot is not charged to the run."""
        s = self.state
        s.model_calls += 1
        decision = self._unique_ids(response.decision)
        s.usage = s.usage + response.usage
        s.queued_s += response.queued_ms / 1000
        self.add(ModelDecisionEvent(step=s.step, kind=decision.kind, tool_calls=decision.tool_calls, text=decision.text,
                                    usage=response.usage, **_timing(response, latency_ms)))
        if decision.text:
            s.last_text = decision.text
        if decision.tool_calls:          # the conversation the session keeps (and checkpoints)
            s.messages.append(Message(role="assistant", content=decision.text, tool_calls=decision.tool_calls))
            s.pending_calls = list(decision.tool_calls)       # made one by one through tool(); each leaves it
            self.checkpoint("calls_pending")
        return decision

    def record_side(self, request: ModelRequest, response: ModelResponse, *, role: str, model: str,
                    latency_ms: float = 0.0) -> None:
        """A request made for the run by someone else (judge, simulated user, drift check)."""
        self.record_request(request, model=model, role=role, params=response.params)
        d = response.decision
        self.add(ModelDecisionEvent(step=self.state.step, kind=d.kind, tool_calls=d.tool_calls, text=d.text,
                                    usage=response.usage, role=role, **_timing(response, latency_ms)))  # type: ignore[arg-type]

    async def request_model(self, model: Model, request: ModelRequest, *, role: str = "agent") -> Decision:
        """Send a prepared request to ``model``, recorded; a model error becomes ModelFailure."""
        name = getattr(model, "name", type(model).__name__)
        self.record_request(request, model=name, role=role, params=model_params(model))
        started = time.perf_counter()
        try:
            response = self.replayed_response() or await model.request(request)
        except (UsageError, ModelFailure, RunAborted):
            raise
        except Exception as exc:
            raise ModelFailure(name, self.state.step, f"{type(exc).__name__}: {exc}") from exc
        decision = self.record_response(response, latency_ms=(time.perf_counter() - started) * 1000)
        verdict = await self.ask("after_model", response)
        if verdict:
            raise self.stop(verdict)
        return decision

    async def after_model(self, response: ModelResponse) -> None:
        verdict = await self.ask("after_model", response)
        if verdict:
            raise self.stop(verdict)

    def _unique_ids(self, decision: Decision) -> Decision:
        """Call ids must be unique within a run (results are matched by id);
        models and doubles may reuse them, so repeats get a step suffix."""
        if not decision.tool_calls:
            return decision
        calls = []
        step, seen = self.state.step, self.state.seen_ids
        for i, call in enumerate(decision.tool_calls):
            cid = call.id or f"call_{step}_{i}"
            if cid in seen:
                cid = f"{cid}~{step}.{i}"
            seen.add(cid)
            calls.append(call if cid == call.id else call.model_copy(update={"id": cid}))
        return decision.model_copy(update={"tool_calls": calls})

    async def final(self, text: str) -> None:
        """The agent's final answer: the on_final guards (claim checks) may end it otherwise."""
        verdict = await self.ask("on_final", text)
        if verdict:
            # the claim check ends the run with the agent's own text: no finish-up, no amendment
            raise RunStop(verdict.status or TerminalStatus.NEEDS_HUMAN, text, verdict.message)

    # -- the user -------------------------------------------------------------------
    async def ask_user(self, question: str) -> str | None:
        """Record the agent's question and return the simulated user's answer (None: no answer)."""
        self.add(AgentMessage(content=question, kind="question", source="model", step=self.state.step))
        self.state.messages.append(Message(role="assistant", content=question))
        nxt = self._replay[0] if self._replay else None
        if isinstance(nxt, UserMessage) and nxt.source == "simulator":     # resumed by replay: as recorded
            self.add(UserMessage(content=nxt.content, source="simulator"))
            self.state.messages.append(Message(role="user", content=nxt.content))
            return nxt.content
        self._go_live()
        if self.user is None:
            return None
        answer = await self.user.reply(question, self.trajectory)
        if answer is not None:
            self.add(UserMessage(content=answer, source="simulator"))
            self.state.messages.append(Message(role="user", content=answer))
        return answer

    # -- tools ----------------------------------------------------------------------
    async def tool(self, call: ToolCallRequest) -> ToolResult:
        """One tool call through the guards, the gates and the harness's tools,
        recorded. Raises RunStop when a guard or a gate ends the run (the call's
        result is recorded first). Calls are made one at a time, in the order
        they arrive, even when a framework runs a turn's calls concurrently."""
        if self._tool_lock is None:
            self._tool_lock = asyncio.Lock()
        async with self._tool_lock:
            return await self._tool(call)

    async def _tool(self, call: ToolCallRequest) -> ToolResult:
        s = self.state
        self.checkpoint("before_tool")
        self.add(ToolCallEvent(step=s.step, call_id=call.id, tool=call.name, arguments=call.arguments))
        verdict = await self.ask("before_tool", call)
        started = time.perf_counter()
        stop: RunStop | None = None
        if verdict is not None and verdict.action != "block":
            result = ToolResult.failure(f"not executed: {verdict.message}", "guard_stopped", source="guard")
            stop = self.stop(verdict)
        elif verdict is not None:
            result = ToolResult.failure(f"blocked by guard: {verdict.message}", "guard_blocked", source="guard")
        elif call.raw_arguments is not None:
            result = ToolResult.failure(f"arguments for {call.name} are not a JSON object: {call.raw_arguments[:200]}",
                                        "invalid_arguments", source="runner")
        else:
            result = self.tools.check(call.name, call.arguments)
            if result is None and self._replay is not None:
                result = self._replayed_result(call)
            if result is None:
                try:
                    result = await self._gated(call)
                except RunStop as exc:
                    if exc.result is None:
                        raise
                    result, stop = exc.result, exc
        event = self.add(ToolResultEvent(step=s.step, call_id=call.id, tool=call.name, ok=result.ok, data=result.data,
                                         error=result.error, error_type=result.error_type, source=result.source,
                                         outcome=outcome_of(result.source, result.error_type), duration_ms=round((time.perf_counter() - started) * 1000, 3)))
        if not (stop is not None and stop.requeue):      # a paused call is asked again on resume
            s.messages.append(Message(role="tool", tool_call_id=call.id, name=call.name,
                                      content=canonical_json(result.for_model())))
            if s.pending_calls and s.pending_calls[0].id == call.id:
                s.pending_calls.pop(0)
        self.checkpoint("after_tool")
        if stop is not None:
            raise stop
        if verdict is None:
            after = await self.ask("after_tool", call, event)
            if after is not None and after.action != "block":
                raise self.stop(after)
        return result


    async def _gated(self, call: ToolCallRequest) -> ToolResult:
        """The gates and the tool, the lease kept alive meanwhile (a tool may outlive it)."""
        if self.store is None:
            return await self.gates.run(call)
        with LeaseHeartbeat(self.store, self.run_id, self.holder, LEASE_TTL_S) as hb:
            self._heartbeat = hb
            try:
                result = await self.gates.run(call)
            finally:
                self._heartbeat = None
        if hb.lost:
            self.hold_lease()
        return result


def _timing(response: ModelResponse, latency_ms: float) -> dict[str, Any]:
    """A decision event's timing and stop-reason fields."""
    wire = response.wire_ms
    return {"latency_ms": round(wire if wire is not None else latency_ms, 3), "finish_reason": response.finish_reason,
            "truncated": response.truncated, "queued_ms": round(response.queued_ms, 3),
            "attempts": list(response.attempts)}


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]
