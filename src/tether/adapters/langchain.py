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
import time
from typing import Any, Callable, Sequence

from ..messages import Decision, DecisionKind, Message, ToolCallRequest, ToolSpec, Usage
from ..models import ModelRequest, ModelResponse
from ..tools import ToolSet
from ..errors import RunStop
from ..runtime import AgentTask, RunSession
from ._common import (ASK_USER, CallIds, PerRun, check_step_cap, decision_from, finish_up, harness_specs, remember,
                      require, run_tool, split_added)

_EXTRA = "langchain"
require("langchain.agents", _EXTRA)

from langchain.agents.middleware import AgentMiddleware  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402

__all__ = ["LangChainAgent", "TetherMiddleware", "harness_tools", "to_tether_messages", "from_tether_messages",
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


# -- tools and middleware ----------------------------------------------------------------
def harness_tools(tools: ToolSet, *, ask_user: bool = True) -> list[StructuredTool]:
    """The harness's tools as LangChain tools, so the model sees their schemas.
    :class:`TetherMiddleware` answers their calls through the session (their own
    bodies never run inside a tether agent)."""

    def unreachable(**kwargs: Any) -> str:
        raise RuntimeError("harness tools run through TetherMiddleware; add it to the agent's middleware")

    return [StructuredTool.from_function(func=unreachable, name=s.name, description=s.description,
                                         args_schema=s.parameters)
            for s in harness_specs(tools.specs(), ask_user=ask_user)]


class TetherMiddleware(AgentMiddleware):
    """Records and guards every model call; runs every tool call through the session."""

    def __init__(self, session: RunSession, tools: ToolSet, *, max_steps: int = 30):
        super().__init__()
        self.session = session
        self.max_steps = max_steps
        self.ids = CallIds()
        self.real_ask = ASK_USER in tools
        self._names = set(tools.names()) | {ASK_USER}
        self._lock = asyncio.Lock()        # ToolNode runs a turn's calls concurrently; guards see them in order
        self._model: Any = None

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        s = self.session
        self._model = request.model
        specs = [_spec_of(t) for t in request.tools]
        lc_messages = ([request.system_message] if request.system_message is not None else []) + list(request.messages)
        tether_request = ModelRequest(messages=to_tether_messages(lc_messages), tools=specs)
        check_step_cap(s, self.max_steps)
        sent = await s.before_model(tether_request)
        pinned, hints = split_added(tether_request.messages, sent.messages)
        if pinned or hints:
            system = "\n".join([*pinned, _text(request.system_message.content)] if request.system_message else pinned)
            request = request.override(
                system_message=SystemMessage(content=system) if system else request.system_message,
                messages=[*request.messages, *[SystemMessage(content=h) for h in hints]])
        s.record_request(sent, model=getattr(request.model, "model_name", None) or type(request.model).__name__,
                         params={})
        t0 = time.perf_counter()
        response = await handler(request)
        message = next((m for m in reversed(response.result) if isinstance(m, AIMessage)), AIMessage(content=""))
        tether_response = ModelResponse(decision=decision_of(message, specs, sent.step), usage=_usage(message))
        recorded = s.record_response(tether_response, latency_ms=round((time.perf_counter() - t0) * 1000, 3))
        self.ids.learn([c.get("id") for c in message.tool_calls if c["name"] != ASK_USER], recorded)
        remember(s, tether_request, recorded)
        await s.after_model(tether_response)
        return response

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        call = request.tool_call
        if call["name"] not in self._names:
            return await handler(request)        # not a harness tool: the agent's own business
        async with self._lock:
            text = await run_tool(self.session, self.ids.get(call.get("id"), f"call_{call['name']}"), call["name"],
                                  call["args"], real_ask_user=self.real_ask)
        return ToolMessage(content=text, tool_call_id=call.get("id") or "", name=call["name"])

    async def ask_model(self, request: ModelRequest) -> ModelResponse:
        """The agent's chat model, asked directly with no tools (a guard's finish-up)."""
        if self._model is None:
            raise RuntimeError("the agent made no model call yet")
        message = await self._model.ainvoke(from_tether_messages(request.messages))
        return ModelResponse(decision=decision_of(message, []), usage=_usage(message))


AgentFactory = Callable[[list[StructuredTool], list[AgentMiddleware]], Any]


class LangChainAgent:
    """A LangChain v1 agent as a tether agent under test.

    ``factory(tools, middleware)`` builds the agent for one run (typically
    ``create_agent(model, tools=tools, middleware=[*mine, *middleware])``),
    so the harness's tools and :class:`TetherMiddleware` go in each time."""

    def __init__(self, factory: AgentFactory, *, name: str = "langchain", ask_user: bool = True):
        self.factory = factory
        self.name = name
        self.ask_user = ask_user
        self._runs: PerRun[TetherMiddleware] = PerRun()

    async def run(self, session: RunSession, task: AgentTask) -> str:
        middleware = TetherMiddleware(session, task.tools, max_steps=task.max_steps)
        self._runs[session] = middleware
        agent = self.factory(harness_tools(task.tools, ask_user=self.ask_user), [middleware])
        messages: list[BaseMessage] = [SystemMessage(content=task.system_prompt)] if task.system_prompt else []
        for turn in task.history:
            messages.append(HumanMessage(content=turn.content) if turn.role == "user" else AIMessage(content=turn.content))
        if task.message is not None:
            messages.append(HumanMessage(content=task.message))
        # the session's step cap ends the run, not LangGraph's recursion limit
        state = await agent.ainvoke({"messages": messages}, config={"recursion_limit": 4 * task.max_steps + 10})
        final = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        reply = _text(final.content) if final is not None else ""
        await session.final(reply)
        return reply

    async def stopped(self, session: RunSession, stop: RunStop) -> tuple[Any, str, str]:
        """A guard stopped the run: its finish-up request goes to the agent's own chat model."""
        middleware = self._runs.get(session)
        ask = middleware.ask_model if middleware is not None and middleware._model is not None else None
        return await finish_up(session, stop, self.name, ask)


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
