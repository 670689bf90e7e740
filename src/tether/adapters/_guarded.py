"""The production core every framework adapter shares: one guarded run.

A :class:`GuardOptions` holds what the user's one line sets (the guard stack, the
store, the tools declared side-effecting, approvals). For each run of the
framework's agent it opens a :class:`GuardedRun`: a :class:`RunSession`
recorded in the store, or, inside ``tether eval`` / ``run_task``, the session
already driving the run (:func:`tether.runtime.current_session`).

The framework's hooks call three methods:

* :meth:`GuardedRun.model_call`: guards before (the budget), the request and
  the response recorded, guards after. When the run has been stopped (a guard,
  a gate, the step cap), the framework's model is not asked for its next
  step: it gets the finish-up answer instead (one request to the agent's own
  model, without tools, when the guard asks for it), a final answer that ends
  the framework's own loop normally;
* :meth:`GuardedRun.tool_call`: every tool call (the agent's own tools, its MCP
  toolsets, the harness's tools in an eval) goes through ``session.tool``: the
  guards, approvals, the side-effect ledger for tools declared
  side-effecting, recording. The agent's own tool runs inside it; its
  exception is a tool result the model reads;
* :meth:`GuardedRun.close`: the run's ending (``completed``, the stop's status,
  or ``error`` with ``infrastructure`` for a provider failure).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Collection, Sequence

from ..errors import ModelFailure, RunAborted, RunStop, UsageError
from ..messages import Decision, Message, ToolCallRequest, ToolSpec
from ..models import ModelRequest, ModelResponse
from ..status import TerminalStatus
from ..tools import Tool, ToolResult, ToolSet
from ._common import ASK_USER, CallIds, check_step_cap, remember, result_text, split_added

__all__ = ["Failed", "GuardOptions", "GuardedRun", "NativeTool", "ModelTurn", "run_sync", "provider_failure"]

# The framework's own tool call in progress (set around each session.tool call):
# how to run it, and where its own result is kept for the framework.
_INVOKE: contextvars.ContextVar["tuple[Callable[[], Any], dict[str, Any]] | None"] = contextvars.ContextVar(
    "tether_native_invoke", default=None)


class NativeTool(Tool):
    """One of the agent's own tools (or an MCP toolset's) as the session sees it:
    its body is the framework's own execution of the call; the framework
    validates the arguments itself."""

    def __init__(self, spec: ToolSpec, *, side_effect: bool = False):
        params = spec.parameters if isinstance(spec.parameters, dict) else {"type": "object"}
        try:
            super().__init__(spec.name, spec.description or "", params, self._run, side_effect=side_effect)
        except Exception:       # a schema tether's validator rejects: the framework judges the arguments
            super().__init__(spec.name, spec.description or "", {"type": "object"}, self._run,
                             side_effect=side_effect)

    def validate(self, arguments: dict[str, Any]) -> str | None:
        return None

    async def _run(self, **_: Any) -> Any:
        current = _INVOKE.get()
        if current is None:
            raise RuntimeError(f"{self.name}: no framework call in progress")
        invoke, holder = current
        out = invoke()
        if asyncio.iscoroutine(out) or isinstance(out, asyncio.Future):
            out = await out
        if isinstance(out, Failed):
            holder["raw"] = out.raw
            return ToolResult.failure(out.error, "tool_error", data=_raw_text(out.raw))
        holder["raw"] = out
        error = _error_of(out)
        if error is not None:
            return ToolResult.failure(error, "tool_error", data=error)
        return ToolResult.success(_raw_text(out))


class Failed:
    """A framework tool call that failed, and the framework's own answer for it
    (the text its error handler gives the model)."""

    def __init__(self, raw: Any, error: str):
        self.raw, self.error = raw, error


def _error_of(value: Any) -> str | None:
    """A framework result that reports a failure (a LangChain ToolMessage with status error)."""
    if getattr(value, "status", None) == "error":
        return _raw_text(value)
    return None


def _raw_text(value: Any) -> str:
    content = getattr(value, "content", None)      # LangChain ToolMessage, MCP results
    if isinstance(content, str):
        return content
    if isinstance(value, str):
        return value
    try:
        from ..messages import canonical_json

        return canonical_json(value)
    except Exception:
        return str(value)


@dataclass
class GuardOptions:
    """What the one production line configures (the same for every framework).

    ``guards``: a stack spec (``on``, ``off``, ``loop,budget``) or guard objects
    (a fresh list per run is built from a spec; pass a callable for objects).
    ``store``: a path, an open :class:`~tether.store.SQLiteStore`, ``None`` for
    ``$TETHER_STORE`` or ``.tether/tether.db``, or ``False`` for no store.
    ``side_effects``: names of the agent's tools that change the world (the
    ledger never runs one twice for the same arguments in a run).
    """

    guards: str | Callable[[], Sequence[Any]] = "on"
    store: Any = None
    side_effects: Collection[str] = ()
    approvals: Any = None
    name: str | None = None
    max_steps: int = 10 ** 6
    _store: Any = field(default=None, init=False, repr=False)

    def guard_objects(self) -> tuple[list[Any], str]:
        if callable(self.guards):
            return list(self.guards()), "custom"
        from ..guards.stacks import guard_stack

        return list(guard_stack(self.guards)()), self.guards

    def open_store(self) -> Any:
        if self.store is False:
            return None
        if self._store is None:
            from ..store import SQLiteStore, default_store_path

            if self.store is None or isinstance(self.store, (str, Path)):
                path = Path(self.store) if self.store is not None else default_store_path()
                path.parent.mkdir(parents=True, exist_ok=True)
                self._store = SQLiteStore(path)
            else:
                self._store = self.store
        return self._store

    def open(self, *, framework: str, model_name: str, message: str | None = None) -> "GuardedRun":
        """A run: the session already driving this task (an eval), else a new recorded one."""
        from ..runtime import current_session

        session = current_session()
        if session is not None and session.finished is None:
            run = _ATTACHED.get(session) or attach(session, framework=framework, guard=self)
            if run.opened:
                return run.nested()
            run.opened = True
            return run
        return GuardedRun(self, None, framework=framework, owned=True, start=(model_name, message))

    def start_session(self, run: "GuardedRun", model_name: str, message: str | None,
                      specs: Sequence[ToolSpec] = ()) -> Any:
        """The recorded run of a production run (started at its first model call, when
        the model and the tools it is offered are known). Inside :func:`tether.adapters.replay.cassette`
        the run is recorded into the cassette, or replayed from it."""
        from ..runtime import RunConfig, RunSession
        from .replay import active_tape

        tape = active_tape()
        guards, label = self.guard_objects()
        config = RunConfig(guards=tuple(guards), guards_label=label,
                           store=tape.store if tape is not None else self.open_store(),
                           approvals=self.approvals, max_steps=self.max_steps,
                           kind="cassette" if tape is not None else "run",
                           meta={"framework": run.framework, "production": True,
                                 **({"cassette": str(tape.path)} if tape is not None else {})})
        tools = ToolSet(NativeTool(spec, side_effect=spec.name in self.side_effects)
                        for spec in specs if spec.name != ASK_USER)
        session = RunSession.start(model_name=self.name or model_name, tools=tools, config=config)
        session.conversation(message)
        run.opened = True
        _ATTACHED[session] = run
        if tape is not None:
            tape.attach(run, session)
        return session


_ATTACHED: "weakref.WeakKeyDictionary[Any, GuardedRun]" = weakref.WeakKeyDictionary()


def attach(session: Any, task: Any = None, *, framework: str = "", guard: GuardOptions | None = None,
           ask_user: bool = True) -> "GuardedRun":
    """The GuardedRun of a session someone else drives (an eval trial): the
    case's tools go beside the agent's own, its prompt as ``task.system_prompt_mode`` says."""
    run = _ATTACHED.get(session)
    if run is None:
        run = _ATTACHED[session] = GuardedRun(guard or GuardOptions(guards="off", store=False), session,
                                              framework=framework, owned=False)
    if task is not None:
        run.case_prompt = task.system_prompt
        run.prompt_mode = getattr(task, "system_prompt_mode", "agent")
    run.ask_user = ask_user
    return run


def attached(session: Any) -> "GuardedRun | None":
    return _ATTACHED.get(session) if session is not None else None


@dataclass
class ModelTurn:
    """What :meth:`GuardedRun.model_call` returns: the framework's own response,
    or (``final`` set) the text that ends the framework's run."""

    response: Any = None
    final: str | None = None


def provider_failure(model: str, step: int, exc: BaseException) -> ModelFailure:
    """A model call that raised inside the framework: the wire (connection,
    timeouts, HTTP errors, retries exhausted) is ``infrastructure``."""
    return ModelFailure(model, step, f"{type(exc).__name__}: {exc}", infrastructure=True)


class GuardedRun:
    """One run of a framework agent under tether (see the module docstring)."""

    def __init__(self, guard: GuardOptions, session: Any, *, framework: str, owned: bool,
                 start: tuple[str, str | None] | None = None):
        self.guard = guard
        self._session = session
        self._start = start
        self.framework = framework
        self.owned = owned
        self.ids = CallIds()
        self.stop: RunStop | None = None
        self.final_text: str | None = None
        self.closed = False
        self.depth = 0
        self._asker: Callable[[ModelRequest], Awaitable[ModelResponse]] | None = None
        self._model = ""
        self._provider: str | None = None
        self._specs: Sequence[ToolSpec] = ()
        self.replay: Any = None          # a Replayer when the run is replayed from a cassette
        self.aborted: BaseException | None = None
        self.case_prompt: str | None = None
        self.prompt_mode = "agent"
        self.ask_user = True
        self.harness_given = False
        self.opened = False

    def harness_specs(self) -> list[ToolSpec]:
        """The tools the harness adds beside the agent's own (an eval: the case's, and ask_user)."""
        if self.owned:
            return []
        specs = [t.spec for t in self.session.tools.tools.values() if not isinstance(t, NativeTool)]
        if self.ask_user and not any(s.name == ASK_USER for s in specs):
            from ._common import ASK_USER_TOOL

            specs.append(ASK_USER_TOOL)
        return specs

    def system_prompt(self, own: str | None) -> str | None:
        """The system prompt the agent runs with in an eval (``--system-prompt``)."""
        case = self.case_prompt
        if self.owned or not case:
            return own
        if self.prompt_mode == "case" or not own:
            return case
        if self.prompt_mode == "both":
            return f"{own}\n\n{case}"
        return own

    @property
    def session(self) -> Any:
        if self._session is None:
            model, message = self._start or ("agent", None)
            self._session = self.guard.start_session(self, self._model or model, message, self._specs)
        return self._session

    @property
    def run_id(self) -> str:
        return self.session.run_id

    def nested(self) -> "GuardedRun":
        self.depth += 1
        return self

    # -- tools ---------------------------------------------------------------------
    def know_tools(self, specs: Sequence[ToolSpec]) -> None:
        """The tools the framework offers its model: its own ones become NativeTools of the session."""
        tools = self.session.tools
        added = False
        for spec in specs:
            if spec.name not in tools and spec.name != ASK_USER:
                tools.add(NativeTool(spec, side_effect=spec.name in self.guard.side_effects))
                added = True
        if added:
            self.session.specs = tools.specs()

    def is_harness(self, name: str) -> bool:
        t = self.session.tools.tools.get(name)
        return (t is not None and not isinstance(t, NativeTool)) or (name == ASK_USER and not self.owned)

    async def tool_call(self, call_id: str | None, name: str, arguments: Any,
                        invoke: Callable[[], Any]) -> tuple[bool, Any, ToolResult | None]:
        """(raw, value, result): ``raw`` true when ``value`` is the framework's own
        tool result (the call ran as the framework would run it); else ``value``
        is the text the model reads (blocked, stopped, mocked, answered from the ledger)."""
        s = self.session
        if self.stop is not None:
            return False, f"not executed: the run was stopped ({self.stop.reason})", None
        if name == ASK_USER and not self.owned and ASK_USER not in s.tools:
            return False, await self._ask_user(arguments), None
        if name not in s.tools:
            self.know_tools([ToolSpec(name=name, description="", parameters={"type": "object"})])
        raw = None
        if isinstance(arguments, str):
            from ..models._http import parse_arguments

            arguments, raw = parse_arguments(arguments)
        call = ToolCallRequest(id=self.ids.get(call_id, f"call_{name}_{s.state.tool_calls}"), name=name,
                               arguments=dict(arguments or {}) if isinstance(arguments, dict) else {},
                               raw_arguments=raw)
        holder: dict[str, Any] = {}
        token = _INVOKE.set((invoke, holder))
        try:
            result = await s.tool(call)
        except RunStop as stop:
            self.stop = stop
            return False, f"not executed: {stop.reason}", None
        finally:
            _INVOKE.reset(token)
        if self.replay is not None:
            if self.replay.state.mismatches:       # the run departed from its recording here: say where
                self.aborted = self.replay.state.mismatches[0]
                raise self.aborted
            if isinstance(s.tools.tools.get(name), NativeTool) and isinstance(result.data, str):
                return False, result.data, result      # what the framework's tool answered in the recording
        if "raw" in holder and result.source == "tool":
            return True, holder["raw"], result
        return False, result_text(result), result

    async def _ask_user(self, arguments: Any) -> str:
        if isinstance(arguments, str):
            from ..models._http import parse_arguments

            arguments, _ = parse_arguments(arguments)
        question = str((arguments or {}).get("question", "")).strip()
        answer = await self.session.ask_user(question)
        if answer is None:
            self.stop = RunStop(TerminalStatus.AWAITING_USER, question, "question with no answer from the user")
            return "(the user gave no answer)"
        return answer

    # -- the model -----------------------------------------------------------------
    async def model_call(self, request: ModelRequest, send: Callable[[list[str], list[str]], Awaitable[Any]],
                         read: Callable[[Any], tuple[Decision, Any, list[str | None]]], *, model: str,
                         provider: str | None = None,
                         asker: Callable[[ModelRequest], Awaitable[ModelResponse]] | None = None,
                         render: Callable[[Decision, Any], Any] | None = None) -> ModelTurn:
        """One model call of the framework. ``send(pinned, hints)`` makes the
        framework's request (with the session's pinned text and hints added) and
        returns its response; ``read(response)`` gives (decision, usage, the
        framework's call ids). ``asker`` asks the agent's own model without tools
        (the finish-up request)."""
        self._model = model
        self._provider = provider
        self._specs = request.tools
        s = self.session
        if self.aborted is not None:
            raise self.aborted
        if asker is not None:
            self._asker = asker
        self.know_tools(request.tools)
        if self.stop is None:
            try:
                check_step_cap(s, self.guard.max_steps if self.owned else s.config.max_steps)
                sent = await s.before_model(request)
            except RunStop as stop:
                self.stop = stop
        if self.stop is not None:
            return ModelTurn(final=await self._finish_up())
        pinned, hints = split_added(request.messages, sent.messages)
        params = {"provider": provider} if provider else {}
        s.record_request(sent, model=model, params=params)
        t0 = time.perf_counter()
        try:
            replayed = s.replayed_response() if render is not None else None
            if self.replay is not None:     # the recorded decision, in the framework's own response type
                if render is None:
                    raise UsageError(f"{self.framework}: this adapter cannot replay a cassette")
                recorded = await self.replay.model.request(sent)
                response = render(recorded.decision, recorded.usage)
            elif replayed is not None:      # a run resumed by replay: the recorded answer, not the model's
                response = render(replayed.decision, replayed.usage)
            else:
                response = await send(pinned, hints)
        except (RunStop, UsageError, RunAborted):
            raise
        except Exception as exc:
            raise provider_failure(model, s.state.step, exc) from exc
        decision, usage, framework_ids = read(response)
        tether_response = ModelResponse(decision=decision, usage=usage)
        recorded = s.record_response(tether_response, latency_ms=round((time.perf_counter() - t0) * 1000, 3))
        self.ids.learn(framework_ids, recorded)
        remember(s, request, recorded)
        try:
            await s.after_model(tether_response)
        except RunStop as stop:
            self.stop = stop
            return ModelTurn(final=await self._finish_up())
        return ModelTurn(response=response)

    async def _finish_up(self) -> str:
        """The answer that ends the framework's run after a stop (once): with the
        guard's ``finish_up``, one request to the agent's own model without tools
        (tether's loop's finish-up prompt), recorded like its other requests."""
        if self.final_text is None:
            stop = self.stop
            assert stop is not None
            s = self.session
            reply = stop.reply or s.state.last_text
            if stop.verdict is not None and stop.verdict.finish_up and self._asker is not None:
                reply = await self._ask_finish_up(stop) or reply
            if stop.verdict is not None and s.stopped_by is not None:
                reply = s.stopped_by.on_stop(s.ctx(), stop.verdict, reply)
            self.final_text = reply or ""
        return self.final_text

    async def _ask_finish_up(self, stop: RunStop) -> str:
        from .. import i18n
        from ..events import AgentMessage

        s = self.session
        lang = i18n.run_language(s.trajectory)
        localized = getattr(s.stopped_by, "localized", None)
        message = (localized(stop.verdict, lang) if lang != "en" and callable(localized) else None) \
            or stop.verdict.message
        prompt = i18n.text(lang, "finish_up", guard=getattr(s.stopped_by, "name", "guard"), message=message)
        s.state.step += 1
        request = ModelRequest(messages=[*s.state.messages, Message(role="system", content=prompt)], tools=[],
                               step=s.state.step)
        s.record_request(request, model=self._model or "agent",
                         params={"provider": self._provider} if self._provider else {})
        try:
            assert self._asker is not None
            response = await self._asker(request)
        except Exception as exc:  # the run is ending anyway: keep what we have
            s.add(AgentMessage(content=f"(finish-up failed: {type(exc).__name__}: {exc})", kind="text"))
            return ""
        return s.record_response(response).text

    # -- the ending ----------------------------------------------------------------
    async def ending(self, reply: str) -> tuple[TerminalStatus, str, str]:
        """The run's ending once the framework returned ``reply``."""
        if self.stop is not None:
            return self.stop.status, self.final_text if self.final_text is not None else reply, self.stop.reason
        try:
            await self.session.final(reply)
        except RunStop as stop:
            return stop.status, stop.reply, stop.reason
        return TerminalStatus.COMPLETED, reply, "final answer"

    def ending_after_stop(self, exc: BaseException) -> tuple[TerminalStatus, str, str] | None:
        """The ending when the framework raised ``exc`` after a guard or a gate had already ended
        the run (pydantic-ai, say, refuses the empty answer that closes its loop when a call was
        held for approval before the model said anything): the stop is why the run ended, so it
        ends as the stop says, and the framework's complaint is kept as a note. None: no stop."""
        if self.stop is None or isinstance(exc, (ModelFailure, RunAborted, UsageError)):
            return None
        from ..events import AgentMessage

        self.session.add(AgentMessage(content=f"(after the stop, {self.framework} raised "
                                              f"{type(exc).__name__}: {str(exc)[:300]})", kind="text"))
        reply = self.final_text or self.stop.reply or ""
        return self.stop.status, reply, self.stop.reason

    async def close(self, reply: str | None = None, error: BaseException | None = None) -> None:
        """End the run (only the run this object opened; an eval's driver ends its own)."""
        if self.depth:
            self.depth -= 1
            return
        if self.closed or not self.owned:
            return
        self.closed = True
        if self._session is None and error is None:
            return           # the framework never called its model: nothing to record
        s = self.session
        if self.replay is not None and error is None:
            try:
                self.replay.assert_complete()
            except RunAborted as exc:
                error = exc
        if error is not None:
            aborted = _find(error, RunAborted)
            if aborted is not None:
                s.finish(TerminalStatus.ERROR, s.state.last_text, "aborted", error=f"{type(aborted).__name__}: {aborted}",
                         error_kind="aborted")
                raise aborted
            failure = error if isinstance(error, ModelFailure) else _find(error, ModelFailure)
            kind = ("infrastructure" if failure.infrastructure else "model") if failure is not None else "harness"
            s.finish(TerminalStatus.ERROR, s.state.last_text, "exception", error=f"{type(error).__name__}: {error}",
                     error_kind=kind)
            return
        status, text, reason = await self.ending(reply or "")
        s.finish(status, text, reason)


def _find(exc: BaseException, kind: type) -> Any:
    """An exception of ``kind`` in ``exc``'s causes (frameworks wrap what hooks raise)."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, kind):
            return e
        stack += [x for x in (e.__cause__, e.__context__) if x is not None]
        stack += list(getattr(e, "exceptions", ()))
    return None


find_in = _find

def run_sync(coro: Awaitable[Any]) -> Any:
    """Run a coroutine from a framework's synchronous hook (a thread with no running loop),
    on a loop of its own that is closed afterwards."""
    loop = asyncio.new_event_loop()
    try:
        return contextvars.copy_context().run(loop.run_until_complete, coro)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
