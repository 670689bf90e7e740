"""pydantic-ai: tether's guards and harness tools inside a pydantic-ai agent's own loop.

``pip install 'tether[pydantic-ai]'``. One capability does it all, through
pydantic-ai's native extension points:

* ``get_toolset``: the harness's tools (the case's intercepts and mocks
  applied) as a pydantic-ai toolset whose bodies call ``session.tool(call)``:
  guards, approvals, the side-effect ledger and recording run inside the
  agent's tool step; a blocked call comes back as an error result the model
  reads; a stop raises :class:`RunStop` out of ``agent.run``;
* ``wrap_model_request``: every model request is guarded (budget before the
  request), pinned text and guard hints are added as system parts, and the
  request and the response are recorded as tether events.

::

    from pydantic_ai import Agent
    from tether.adapters.pydantic_ai import PydanticAIAgent

    def build():
        return PydanticAIAgent(Agent("openai:gpt-4.1-mini"))   # tether eval c4 --agent file.py:build
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

from ..messages import Decision, DecisionKind, Message, ToolCallRequest, ToolSpec, Usage
from ..models import Model, ModelRequest, ModelResponse
from ..tools import ToolSet
from ..errors import RunStop
from ..runtime import AgentTask, RunSession
from ._common import (ASK_USER, CallIds, PerRun, check_step_cap, decision_from, finish_up, harness_specs, remember,
                      require, run_tool, split_added)

_EXTRA = "pydantic-ai"
require("pydantic_ai", _EXTRA)

from pydantic_ai import messages as pm  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.models import ModelRequestParameters  # noqa: E402
from pydantic_ai.tools import Tool as PaiTool  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402
from pydantic_ai.usage import RequestUsage, UsageLimits  # noqa: E402

__all__ = ["PydanticAIAgent", "TetherCapability", "harness_toolset", "to_tether_messages", "from_tether_messages",
           "decision_of", "response_of", "tether_function_model"]


# -- messages both ways ---------------------------------------------------------
def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "".join(c for c in content if isinstance(c, str))
    return "" if content is None else str(content)


_SYSTEM_FRAME = re.compile(r"<system>(.*)</system>", re.S)


def to_tether_messages(messages: list[pm.ModelMessage], *, instructions: str | None = None) -> list[Message]:
    """pydantic-ai messages as tether messages. The ask_user pseudo-tool becomes
    what it is in tether's loop: the agent's question and the user's reply."""
    out: list[Message] = [Message(role="system", content=instructions)] if instructions else []
    asked: set[str] = set()
    for msg in messages:
        if isinstance(msg, pm.ModelRequest):
            for part in msg.parts:
                if isinstance(part, pm.SystemPromptPart):
                    out.append(Message(role="system", content=part.content))
                elif isinstance(part, pm.UserPromptPart):
                    text = _text(part.content)
                    framed = _SYSTEM_FRAME.fullmatch(text.strip())
                    # pydantic-ai renders a mid-conversation system part as <system>-framed user text
                    out.append(Message(role="system", content=framed.group(1)) if framed
                               else Message(role="user", content=text))
                elif isinstance(part, pm.ToolReturnPart):
                    if part.tool_call_id in asked:
                        out.append(Message(role="user", content=part.model_response_str()))
                    else:
                        out.append(Message(role="tool", tool_call_id=part.tool_call_id, name=part.tool_name,
                                           content=part.model_response_str()))
                elif isinstance(part, pm.RetryPromptPart):
                    if part.tool_name:
                        out.append(Message(role="tool", tool_call_id=part.tool_call_id, name=part.tool_name,
                                           content=part.model_response()))
                    else:
                        out.append(Message(role="user", content=part.model_response()))
        elif isinstance(msg, pm.ModelResponse):
            text = "".join(p.content for p in msg.parts if isinstance(p, pm.TextPart))
            calls = []
            for p in msg.parts:
                if not isinstance(p, pm.ToolCallPart):
                    continue
                if p.tool_name == ASK_USER:
                    asked.add(p.tool_call_id)
                    text = (text + "\n" if text else "") + str(p.args_as_dict().get("question", ""))
                else:
                    calls.append(ToolCallRequest(id=p.tool_call_id, name=p.tool_name, arguments=p.args_as_dict()))
            out.append(Message(role="assistant", content=text, tool_calls=calls))
    return out


def from_tether_messages(messages: list[Message]) -> list[pm.ModelMessage]:
    """tether messages as pydantic-ai messages (consecutive request parts merged)."""
    out: list[pm.ModelMessage] = []
    parts: list[Any] = []

    def flush() -> None:
        if parts:
            out.append(pm.ModelRequest(parts=list(parts)))
            parts.clear()

    for m in messages:
        if m.role == "system":
            parts.append(pm.SystemPromptPart(content=m.content))
        elif m.role == "user":
            parts.append(pm.UserPromptPart(content=m.content))
        elif m.role == "tool":
            parts.append(pm.ToolReturnPart(tool_name=m.name or "", content=m.content, tool_call_id=m.tool_call_id or ""))
        else:
            flush()
            rparts: list[Any] = [pm.TextPart(content=m.content)] if m.content else []
            rparts += [pm.ToolCallPart(tool_name=c.name, args=c.arguments, tool_call_id=c.id) for c in m.tool_calls]
            out.append(pm.ModelResponse(parts=rparts))
    flush()
    return out


def _specs(defs: list[Any]) -> list[ToolSpec]:
    return [ToolSpec(name=d.name, description=d.description or "", parameters=d.parameters_json_schema) for d in defs]


def decision_of(response: pm.ModelResponse, tools: list[ToolSpec], step: int = 0) -> Decision:
    text = "".join(p.content for p in response.parts if isinstance(p, pm.TextPart))
    calls = [(p.tool_call_id, p.tool_name, p.args_as_dict()) for p in response.parts if isinstance(p, pm.ToolCallPart)]
    return decision_from(calls, text, tools, step)


def response_of(decision: Decision, usage: Usage | None = None) -> pm.ModelResponse:
    """A tether decision as a pydantic-ai response (a question is an ask_user call)."""
    parts: list[Any] = []
    if decision.kind == DecisionKind.QUESTION:
        parts.append(pm.ToolCallPart(tool_name=ASK_USER, args={"question": decision.text}))
    else:
        if decision.text:
            parts.append(pm.TextPart(content=decision.text))
        parts += [pm.ToolCallPart(tool_name=c.name, args=c.arguments, tool_call_id=c.id) for c in decision.tool_calls]
    u = usage or Usage()
    return pm.ModelResponse(parts=parts, usage=RequestUsage(input_tokens=u.input_tokens, output_tokens=u.output_tokens))


def _usage(response: pm.ModelResponse) -> Usage:
    u = response.usage
    return Usage(input_tokens=u.input_tokens or 0, output_tokens=u.output_tokens or 0)


# -- the capability ---------------------------------------------------------------
def harness_toolset(session: RunSession, tools: ToolSet, ids: CallIds | None = None, *,
                    ask_user: bool = True) -> FunctionToolset:
    """The harness's tools as a pydantic-ai toolset whose bodies call ``session.tool``.
    Sequential, as in tether's loop: a guard sees the calls in order."""
    ids = ids or CallIds()
    real_ask = ASK_USER in tools
    pai_tools = []
    for spec in harness_specs(tools.specs(), ask_user=ask_user):
        async def body(ctx: Any, _name: str = spec.name, **kwargs: Any) -> str:
            return await run_tool(session, ids.get(ctx.tool_call_id, f"call_{_name}"), _name, kwargs,
                                  real_ask_user=real_ask)

        pai_tools.append(PaiTool.from_schema(body, spec.name, spec.description, spec.parameters, takes_ctx=True,
                                             sequential=True))
    return FunctionToolset(pai_tools)


class TetherCapability(AbstractCapability[Any]):
    """Harness tools in, every model request guarded and recorded."""

    def __init__(self, session: RunSession, tools: ToolSet, *, max_steps: int = 30, ask_user: bool = True):
        self.session = session
        self.max_steps = max_steps
        self.ids = CallIds()
        self._toolset = harness_toolset(session, tools, self.ids, ask_user=ask_user)
        self._model: Any = None

    def get_toolset(self) -> Any:
        return self._toolset

    async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        s = self.session
        self._model = request_context.model
        params = request_context.model_request_parameters
        specs = _specs(params.function_tools)
        instructions = _instructions(request_context.messages)
        request = ModelRequest(messages=to_tether_messages(request_context.messages, instructions=instructions),
                               tools=specs)
        check_step_cap(s, self.max_steps)
        sent = await s.before_model(request)
        pinned, hints = split_added(request.messages, sent.messages)
        if pinned or hints:
            request_context = dataclasses.replace(request_context,
                                                  messages=_with_system(request_context.messages, pinned, hints))
        s.record_request(sent, model=getattr(self._model, "model_name", ""), params={})
        t0 = time.perf_counter()
        replayed = s.replayed_response()      # a run resumed by replay: the recorded answer, not the model's
        response = response_of(replayed.decision, replayed.usage) if replayed else await handler(request_context)
        decision = decision_of(response, specs, sent.step)
        tether_response = ModelResponse(decision=decision, usage=_usage(response))
        recorded = s.record_response(tether_response, latency_ms=round((time.perf_counter() - t0) * 1000, 3))
        self.ids.learn([p.tool_call_id for p in response.parts if isinstance(p, pm.ToolCallPart)
                        and p.tool_name != ASK_USER], recorded)
        remember(s, request, recorded)
        await s.after_model(tether_response)
        return response

    async def ask_model(self, request: ModelRequest) -> ModelResponse:
        """The agent's own model, asked directly with no tools (a guard's finish-up)."""
        if self._model is None:
            raise RuntimeError("the agent made no model request yet")
        response = await self._model.request(from_tether_messages(request.messages), None,
                                             ModelRequestParameters(function_tools=[], allow_text_output=True))
        return ModelResponse(decision=decision_of(response, []), usage=_usage(response))


def _instructions(messages: list[Any]) -> str | None:
    for m in reversed(messages):
        if isinstance(m, pm.ModelRequest) and m.instructions:
            return m.instructions
    return None


def _with_system(messages: list[Any], pinned: list[str], hints: list[str]) -> list[Any]:
    out = list(messages)
    if pinned:
        out.insert(0, pm.ModelRequest(parts=[pm.SystemPromptPart(content="\n".join(pinned))]))
    if hints:
        last = out[-1] if out else None
        hint = pm.SystemPromptPart(content="\n".join(hints))
        if isinstance(last, pm.ModelRequest):
            out[-1] = dataclasses.replace(last, parts=[*last.parts, hint])
        else:
            out.append(pm.ModelRequest(parts=[hint]))
    return out


# -- the agent under test -----------------------------------------------------------
class PydanticAIAgent:
    """A pydantic-ai ``Agent`` as a tether agent under test.

    ``agent.run`` gets the case's conversation, the harness's tools and the
    simulated user (through the ``ask_user`` tool) via :class:`TetherCapability`.
    """

    def __init__(self, agent: Any, *, name: str | None = None, ask_user: bool = True):
        self.agent = agent
        self.ask_user = ask_user
        model = getattr(agent, "model", None)
        self.name = name or f"pydantic-ai:{getattr(model, 'model_name', model) or 'agent'}"
        self._runs: PerRun[TetherCapability] = PerRun()

    async def run(self, session: RunSession, task: AgentTask) -> str:
        capability = TetherCapability(session, task.tools, max_steps=task.max_steps, ask_user=self.ask_user)
        self._runs[session] = capability
        history: list[Any] = []
        for turn in task.history:
            if turn.role == "user":
                history.append(pm.ModelRequest(parts=[pm.UserPromptPart(content=turn.content)]))
            else:
                history.append(pm.ModelResponse(parts=[pm.TextPart(content=turn.content)]))
        result = await self.agent.run(
            task.message, message_history=history or None, capabilities=[capability],
            instructions=task.system_prompt,
            # the session's step cap and budget guard end the run, not the framework's own limit
            usage_limits=UsageLimits(request_limit=None),
        )
        reply = str(result.output)
        await session.final(reply)
        return reply

    async def stopped(self, session: RunSession, stop: RunStop) -> tuple[Any, str, str]:
        """A guard stopped the run: its finish-up request goes to the agent's own model."""
        capability = self._runs.get(session)
        ask = capability.ask_model if capability is not None and capability._model is not None else None
        return await finish_up(session, stop, self.name, ask)


# -- a pydantic-ai model backed by any tether Model ---------------------------------------
def tether_function_model(model: Model, *, name: str | None = None) -> Any:
    """A pydantic-ai ``FunctionModel`` that asks a tether :class:`~tether.models.Model`
    (a scripted double, a calibration policy, a provider adapter): runs pydantic-ai
    agents offline and deterministically."""
    from pydantic_ai.models.function import FunctionModel

    async def fn(messages: list[pm.ModelMessage], info: Any) -> pm.ModelResponse:
        specs = [s for s in _specs(info.function_tools) if s.name != ASK_USER]
        request = ModelRequest(messages=to_tether_messages(messages, instructions=info.instructions), tools=specs)
        response = await model.request(request)
        return response_of(response.decision, response.usage)

    return FunctionModel(fn, model_name=name or getattr(model, "name", "tether-model"))
