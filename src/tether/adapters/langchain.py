"""LangChain v1: tether's guards and harness tools as agent middleware.

``pip install 'tether[langchain]'``. :class:`TetherMiddleware` sits in a
``create_agent`` agent's own loop through its native extension points:

* ``awrap_model_call``: every model call is guarded (the budget before the
  request), pinned text and guard hints are added as system messages, and
  the request and the response are recorded as tether events;
* ``awrap_tool_call``: every tool call goes to ``session.tool(call)`` (guards,
  approvals, the side-effect ledger, the case's intercepts and mocks,
  recording); a blocked call comes back as a ``ToolMessage`` the model
  reads; a stop raises :class:`RunStop`, which LangChain's ``ToolNode``
  re-raises (its default error handler only answers argument errors).

::

    from langchain.agents import create_agent
    from tether.adapters.langchain import LangChainAgent

    def build():
        return LangChainAgent(lambda tools, middleware: create_agent(my_model, tools=tools, middleware=middleware))
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated, Any, Awaitable, Callable, Sequence

from typing_extensions import NotRequired

from ..messages import Decision, DecisionKind, Message, ToolCallRequest, ToolSpec, Usage
from ..models import ModelRequest, ModelResponse
from ..errors import ModelFailure, UsageError
from ..runtime import AgentTask, RunSession
from ._common import ASK_USER, decision_from, require
from ._guarded import GuardOptions, GuardedRun, attach, find_in, run_sync

_EXTRA = "langchain"
require("langchain.agents", _EXTRA)

from langchain.agents.middleware import AgentMiddleware, AgentState  # noqa: E402
from langchain.agents.middleware.types import ModelResponse as LcModelResponse, PrivateStateAttr  # noqa: E402
from langgraph.channels.untracked_value import UntrackedValue  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402

__all__ = ["LangChainAgent", "TetherMiddleware", "TetherState", "harness_tools", "to_tether_messages", "from_tether_messages",
           "TetherChatModel"]


# -- messages both ways -----------------------------------------------------------
def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(c if isinstance(c, str) else str(c.get("text", "")) for c in content
                       if isinstance(c, (str, dict)))
    return "" if content is None else str(content)


def to_tether_messages(messages: Sequence[BaseMessage]) -> list[Message]:
    """LangChain messages as tether messages (ask_user: the agent's question, the user's reply)."""
    out: list[Message] = []
    asked: set[str] = set()
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append(Message(role="system", content=_text(m.content)))
        elif isinstance(m, HumanMessage):
            out.append(Message(role="user", content=_text(m.content)))
        elif isinstance(m, AIMessage):
            text, calls = _text(m.content), []
            for c in m.tool_calls:
                if c["name"] == ASK_USER:
                    asked.add(c.get("id") or "")
                    text = (text + "\n" if text else "") + str(c["args"].get("question", ""))
                else:
                    calls.append(ToolCallRequest(id=c.get("id") or "", name=c["name"], arguments=dict(c["args"])))
            out.append(Message(role="assistant", content=text, tool_calls=calls))
        elif isinstance(m, ToolMessage):
            if m.tool_call_id in asked:
                out.append(Message(role="user", content=_text(m.content)))
            else:
                out.append(Message(role="tool", tool_call_id=m.tool_call_id, name=m.name, content=_text(m.content)))
    return out


def from_tether_messages(messages: Sequence[Message]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in messages:
        if m.role == "system":
            out.append(SystemMessage(content=m.content))
        elif m.role == "user":
            out.append(HumanMessage(content=m.content))
        elif m.role == "tool":
            out.append(ToolMessage(content=m.content, tool_call_id=m.tool_call_id or "", name=m.name))
        else:
            out.append(AIMessage(content=m.content, tool_calls=[{"name": c.name, "args": c.arguments, "id": c.id}
                                                                for c in m.tool_calls]))
    return out


def _spec_of(tool: Any) -> ToolSpec:
    if isinstance(tool, dict):   # an OpenAI-style tool dict
        fn = tool.get("function", tool)
        return ToolSpec(name=fn["name"], description=fn.get("description", ""),
                        parameters=fn.get("parameters", {"type": "object", "properties": {}}))
    schema = tool.tool_call_schema
    params = schema if isinstance(schema, dict) else tool.get_input_schema().model_json_schema()
    return ToolSpec(name=tool.name, description=tool.description or "", parameters=params)


def decision_of(message: AIMessage, tools: list[ToolSpec], step: int = 0) -> Decision:
    calls = [(c.get("id"), c["name"], c["args"]) for c in message.tool_calls]
    return decision_from(calls, _text(message.content), tools, step)


def _usage(message: AIMessage) -> Usage:
    u = message.usage_metadata or {}
    return Usage(input_tokens=u.get("input_tokens", 0), output_tokens=u.get("output_tokens", 0))


# -- the middleware: the production line --------------------------------------------------
def harness_tools(specs: list[ToolSpec]) -> list[StructuredTool]:
    """The harness's tools (an eval's case tools) as LangChain tools, offered to the
    model beside the agent's own; :class:`TetherMiddleware` answers their calls
    through the session (their bodies never run)."""

    def unreachable(**kwargs: Any) -> str:
        raise RuntimeError("harness tools are answered by TetherMiddleware")

    return [StructuredTool.from_function(func=unreachable, name=s.name, description=s.description,
                                         args_schema=s.parameters) for s in specs]


class TetherState(AgentState):
    tether_run: NotRequired[Annotated[str, UntrackedValue, PrivateStateAttr]]


def _provider(model: Any) -> str | None:
    try:
        return model._get_ls_params().get("ls_provider")
    except Exception:
        return None


def _model_name(model: Any) -> str:
    return getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__


class TetherMiddleware(AgentMiddleware):
    """tether in a LangChain v1 agent, one line::

        agent = create_agent(model, tools=[...], system_prompt=..., middleware=[TetherMiddleware()])

    Each ``invoke`` / ``ainvoke`` / ``stream`` of the agent is a run in the store
    (``$TETHER_STORE`` or ``.tether/tether.db``); every model call and every tool
    call (the agent's own tools, MCP tools it mounts) goes through the guard
    stack and the gates (options: :class:`tether.adapters._guarded.GuardOptions`). A
    stop ends the agent's run with the finish-up answer as its last message.
    Inside ``tether eval`` the middleware joins the eval's run and adds the
    case's tools.
    """

    state_schema = TetherState

    def __init__(self, guards: Any = "on", *, store: Any = None, side_effects: Any = (), approvals: Any = None,
                 name: str | None = None):
        super().__init__()
        self.guard = GuardOptions(guards=guards, store=store, side_effects=tuple(side_effects), approvals=approvals,
                           name=name)
        self.tools = []
        self._runs: dict[str, GuardedRun] = {}

    # -- the run --------------------------------------------------------------------
    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state.get("messages") or []
        last = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        run = self.guard.open(framework="langchain", model_name="langchain",
                              message=_text(last.content) if last is not None else None)
        key = f"{id(run)}/{run.depth}/{uuid.uuid4().hex[:8]}"
        self._runs[key] = run
        return {"tether_run": key}

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        run = self._runs.pop(state.get("tether_run") or "", None)
        if run is not None:
            final = next((m for m in reversed(state.get("messages") or []) if isinstance(m, AIMessage)), None)
            await run.close(reply=_text(final.content) if final is not None else "")
        return None

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return run_sync(self.abefore_agent(state, runtime))

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return run_sync(self.aafter_agent(state, runtime))

    def _run(self, state: Any) -> GuardedRun | None:
        return self._runs.get((state or {}).get("tether_run") or "")

    # -- model calls ------------------------------------------------------------------
    async def _model_call(self, request: Any, call: Callable[[Any], Awaitable[Any]], *, sync: bool = False) -> Any:
        run = self._run(request.state)
        if run is None:
            return await call(request)
        extra = run.harness_specs()
        if extra:
            known = {getattr(t, "name", None) for t in request.tools}
            request = request.override(tools=[*request.tools, *harness_tools([s for s in extra
                                                                             if s.name not in known])])
        own = _text(request.system_message.content) if request.system_message is not None else None
        prompt = run.system_prompt(own)
        if prompt != own:
            request = request.override(system_message=SystemMessage(content=prompt) if prompt else None)
        specs = [_spec_of(t) for t in request.tools]
        lc_messages = ([request.system_message] if request.system_message is not None else []) + list(request.messages)
        tether_request = ModelRequest(messages=to_tether_messages(lc_messages), tools=specs)
        model = request.model

        async def send(pinned: list[str], hints: list[str]) -> Any:
            r = request
            if pinned or hints:
                system = "\n".join([*pinned, _text(r.system_message.content)] if r.system_message else pinned)
                r = r.override(system_message=SystemMessage(content=system) if system else r.system_message,
                               messages=[*r.messages, *[SystemMessage(content=h) for h in hints]])
            return await call(r)

        def read(response: Any) -> tuple[Decision, Usage, list[str | None]]:
            message = _ai_message(response)
            return (decision_of(message, specs, run.session.state.step), _usage(message),
                    [c.get("id") for c in message.tool_calls if c["name"] != ASK_USER])

        async def ask(req: ModelRequest) -> ModelResponse:
            messages = from_tether_messages(req.messages)
            message = model.invoke(messages) if sync else await model.ainvoke(messages)
            return ModelResponse(decision=decision_of(message, []), usage=_usage(message))

        def render(decision: Decision, usage: Usage) -> Any:
            calls = [{"name": c.name, "args": c.arguments, "id": c.id} for c in decision.tool_calls]
            if decision.kind == DecisionKind.QUESTION:
                calls = [{"name": ASK_USER, "args": {"question": decision.text}, "id": f"ask_{run.session.state.step}"}]
            return LcModelResponse(result=[AIMessage(
                content="" if decision.kind == DecisionKind.QUESTION else decision.text, tool_calls=calls,
                usage_metadata={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                                "total_tokens": usage.input_tokens + usage.output_tokens})])

        try:
            turn = await run.model_call(tether_request, send, read, model=_model_name(model),
                                        provider=_provider(model), asker=ask, render=render)
        except Exception as exc:        # the run ends here (after_agent will not run): record why
            self._runs.pop((request.state or {}).get("tether_run") or "", None)
            await run.close(error=exc)
            raise
        if turn.final is not None:
            return LcModelResponse(result=[AIMessage(content=turn.final)])
        return turn.response

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return await self._model_call(request, handler)

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        async def call(r: Any) -> Any:
            return handler(r)

        return run_sync(self._model_call(request, call, sync=True))

    # -- tool calls ---------------------------------------------------------------------
    async def _tool_call(self, request: Any, invoke: Callable[[], Any]) -> Any:
        run = self._run(request.state)
        call = request.tool_call
        if run is None:
            return await _maybe_await(invoke())
        raw, value, result = await run.tool_call(call.get("id"), call["name"], call.get("args") or {}, invoke)
        if raw:
            return value
        return ToolMessage(content=value, tool_call_id=call.get("id") or "", name=call["name"],
                           status="error" if result is not None and not result.ok else "success")

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return await self._tool_call(request, lambda: handler(request))

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return run_sync(self._tool_call(request, lambda: handler(request)))


async def _maybe_await(value: Any) -> Any:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value


def _ai_message(response: Any) -> AIMessage:
    result = getattr(response, "result", None)
    if result is None:       # an ExtendedModelResponse
        result = getattr(getattr(response, "model_response", None), "result", None) or []
    return next((m for m in reversed(result) if isinstance(m, AIMessage)), AIMessage(content=""))


AgentFactory = Callable[[list[Any], list[AgentMiddleware]], Any]


class LangChainAgent:
    """A LangChain v1 agent as a tether agent under test (``tether eval --agent``).

    Either a compiled ``create_agent`` agent that carries :class:`TetherMiddleware`
    (it joins the eval's run and adds the case's tools), or ``factory(tools,
    middleware)`` that builds one (``create_agent(model, tools=[*mine, *tools],
    middleware=[*mine, *middleware])``); the agent keeps its own system prompt
    (``--system-prompt``)."""

    def __init__(self, agent: Any, *, name: str = "langchain", ask_user: bool = True):
        self.agent = agent
        self.name = name
        self.ask_user = ask_user

    def _graph(self, run: GuardedRun) -> Any:
        if hasattr(self.agent, "ainvoke"):
            return self.agent
        return self.agent(harness_tools(run.harness_specs()), [TetherMiddleware("off", store=False)])

    async def run(self, session: RunSession, task: AgentTask) -> Any:
        run = attach(session, task, framework="langchain", ask_user=self.ask_user)
        graph = self._graph(run)
        messages: list[BaseMessage] = []
        for turn in task.history:
            messages.append(HumanMessage(content=turn.content) if turn.role == "user" else AIMessage(content=turn.content))
        if task.message is not None:
            messages.append(HumanMessage(content=task.message))
        try:
            # the session's step cap ends the run, not LangGraph's recursion limit
            state = await graph.ainvoke({"messages": messages}, config={"recursion_limit": 4 * task.max_steps + 10})
        except Exception as exc:
            failure = find_in(exc, ModelFailure)
            if failure is not None:
                raise failure from None
            ended = run.ending_after_stop(exc)
            if ended is not None:
                return ended
            raise
        if not run.session.state.model_calls and not run.stop:
            raise UsageError(f"{self.name}: the agent made no model call through tether: add TetherMiddleware() "
                             "to its create_agent(middleware=[...])")
        final = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        return await run.ending(_text(final.content) if final is not None else "")


# -- a LangChain chat model backed by any tether Model -------------------------------------
class TetherChatModel(BaseChatModel):
    """A LangChain chat model that asks a tether :class:`~tether.models.Model`
    (a scripted double, a calibration policy, a provider adapter): runs
    LangChain agents offline and deterministically. A question is an
    ``ask_user`` tool call."""

    model: Any
    tool_specs: list[ToolSpec] = []

    @property
    def _llm_type(self) -> str:
        return "tether"

    @property
    def model_name(self) -> str:
        return getattr(self.model, "name", "tether")

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "TetherChatModel":
        return self.model_copy(update={"tool_specs": [_spec_of(t) for t in tools]})

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("TetherChatModel is async: use ainvoke / astream")

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                         **kwargs: Any) -> ChatResult:
        specs = [s for s in self.tool_specs if s.name != ASK_USER]
        response = await self.model.request(ModelRequest(messages=to_tether_messages(messages), tools=specs))
        d, u = response.decision, response.usage
        if d.kind == DecisionKind.QUESTION:
            calls = [{"name": ASK_USER, "args": {"question": d.text}, "id": f"ask_{len(messages)}"}]
            text = ""
        else:
            calls = [{"name": c.name, "args": c.arguments, "id": c.id} for c in d.tool_calls]
            text = d.text
        message = AIMessage(content=text, tool_calls=calls,
                            usage_metadata={"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                                            "total_tokens": u.input_tokens + u.output_tokens})
        return ChatResult(generations=[ChatGeneration(message=message)])
