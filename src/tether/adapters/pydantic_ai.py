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
from typing import Any

from ..messages import Decision, DecisionKind, Message, ToolCallRequest, ToolSpec, Usage
from ..models import Model, ModelRequest, ModelResponse
from ..errors import ModelFailure
from ..runtime import AgentTask, RunSession, current_session
from ._common import ASK_USER, decision_from, require
from ._guarded import _ATTACHED, GuardOptions, GuardedRun, attach, attached, find_in

_EXTRA = "pydantic-ai"
require("pydantic_ai", _EXTRA)

from pydantic_ai import messages as pm  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.models import ModelRequestParameters  # noqa: E402
from pydantic_ai.tools import Tool as PaiTool  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402
from pydantic_ai.usage import RequestUsage, UsageLimits  # noqa: E402

__all__ = ["PydanticAIAgent", "TetherGuard", "harness_toolset", "to_tether_messages", "from_tether_messages",
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


# -- the capability: the production line -----------------------------------------------
def harness_toolset(specs: list[ToolSpec]) -> FunctionToolset:
    """The harness's tools (an eval's case tools) as a pydantic-ai toolset, beside the
    agent's own. Their calls are answered by :class:`TetherGuard`'s ``wrap_tool_execute``
    through the session; the bodies never run."""
    pai_tools = []
    for spec in specs:
        async def body(ctx: Any, _name: str = spec.name, **kwargs: Any) -> str:
            raise RuntimeError(f"{_name} is answered by TetherGuard")

        pai_tools.append(PaiTool.from_schema(body, spec.name, spec.description, spec.parameters, takes_ctx=True,
                                             sequential=True))
    return FunctionToolset(pai_tools)


class TetherGuard(AbstractCapability[Any]):
    """tether in a pydantic-ai agent, one line::

        agent = Agent(model, instructions=..., tools=[...], capabilities=[TetherGuard()])

    Each run of the agent is a run in the store (``$TETHER_STORE`` or
    ``.tether/tether.db``); every model request and every tool call (the agent's
    own tools, its MCP toolsets) goes through the guard stack and the gates
    (see :class:`tether.adapters._guarded.GuardOptions` for the options). A stop ends
    ``agent.run`` with the finish-up answer as its output. Inside ``tether
    eval`` the capability joins the eval's run and adds the case's tools.
    """

    def __init__(self, guards: Any = "on", *, store: Any = None, side_effects: Any = (), approvals: Any = None,
                 name: str | None = None, ask_user: bool = True, _guard: GuardOptions | None = None):
        self.guard = _guard or GuardOptions(guards=guards, store=store, side_effects=tuple(side_effects),
                                     approvals=approvals, name=name)
        self.ask_user = ask_user
        self.run: GuardedRun | None = None
        self._toolset: Any = None

    async def for_run(self, ctx: Any) -> "TetherGuard":
        copy = TetherGuard(_guard=self.guard, ask_user=self.ask_user)
        session = current_session()
        if session is not None and session.finished is None:
            run = attach(session, framework="pydantic-ai", guard=self.guard) if attached(session) is None \
                else attached(session)
            if not run.owned and not run.harness_given:
                run.harness_given = True
                copy._toolset = harness_toolset(run.harness_specs())
        return copy

    def get_toolset(self) -> Any:
        return self._toolset

    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        model = getattr(ctx, "model", None)
        self.run = self.guard.open(framework="pydantic-ai", model_name=getattr(model, "model_name", None) or "agent",
                                   message=_prompt_text(getattr(ctx, "prompt", None)))
        try:
            result = await handler()
        except BaseException as exc:
            await self.run.close(error=exc)
            raise
        await self.run.close(reply=str(result.output))
        return result

    async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        run = self.run
        if run is None:
            return await handler(request_context)
        model = request_context.model
        specs = _specs(request_context.model_request_parameters.function_tools)
        request = ModelRequest(messages=to_tether_messages(request_context.messages,
                                                           instructions=_instructions(request_context.messages)),
                               tools=specs)

        async def send(pinned: list[str], hints: list[str]) -> Any:
            rc = request_context
            if pinned or hints:
                rc = dataclasses.replace(rc, messages=_with_system(rc.messages, pinned, hints))
            return await handler(rc)

        def read(response: Any) -> tuple[Decision, Usage, list[str | None]]:
            return (decision_of(response, specs, run.session.state.step), _usage(response),
                    [p.tool_call_id for p in response.parts if isinstance(p, pm.ToolCallPart) and p.tool_name != ASK_USER])

        async def ask(req: ModelRequest) -> ModelResponse:
            response = await model.request(from_tether_messages(req.messages), None,
                                           ModelRequestParameters(function_tools=[], allow_text_output=True))
            return ModelResponse(decision=decision_of(response, []), usage=_usage(response))

        turn = await run.model_call(request, send, read, model=getattr(model, "model_name", "") or "agent",
                                    provider=getattr(model, "system", None), asker=ask, render=response_of)
        if turn.final is not None:
            return pm.ModelResponse(parts=[pm.TextPart(content=turn.final)],
                                    model_name=getattr(model, "model_name", None))
        return turn.response

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        run = self.run
        if run is None:
            return await handler(args)
        raw, value, _ = await run.tool_call(call.tool_call_id, call.tool_name, call.args_as_dict(),
                                            lambda: handler(args))
        return value


def _prompt_text(prompt: Any) -> str | None:
    if prompt is None:
        return None
    return prompt if isinstance(prompt, str) else _text(prompt)


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
def _has_guard(agent: Any) -> bool:
    found = []
    try:
        root = getattr(agent, "_root_capability", None) or getattr(agent, "root_capability", None)
        if root is not None:
            root.apply(lambda c: found.append(c) if isinstance(c, TetherGuard) else None)
    except Exception:
        return False
    return bool(found)


class PydanticAIAgent:
    """A pydantic-ai ``Agent`` as a tether agent under test (``tether eval --agent``).

    The agent runs unchanged: its own instructions (``system_prompt_mode``:
    ``agent``, the default; the case's reference prompt only when the agent has
    none; ``case``; ``both``), its own tools, the case's tools beside them. A
    :class:`TetherGuard` it already carries joins the eval's run; without one,
    one is added for the run.
    """

    def __init__(self, agent: Any, *, name: str | None = None, ask_user: bool = True):
        self.agent = agent
        self.ask_user = ask_user
        model = getattr(agent, "model", None)
        self.name = name or f"pydantic-ai:{getattr(model, 'model_name', model) or 'agent'}"

    async def run(self, session: RunSession, task: AgentTask) -> Any:
        history: list[Any] = []
        for turn in task.history:
            if turn.role == "user":
                history.append(pm.ModelRequest(parts=[pm.UserPromptPart(content=turn.content)]))
            else:
                history.append(pm.ModelResponse(parts=[pm.TextPart(content=turn.content)]))
        attach(session, task, framework="pydantic-ai", ask_user=self.ask_user)
        own = _agent_instructions(self.agent)
        mode = task.system_prompt_mode
        extra = None
        if task.system_prompt and (mode == "both" or not own or mode == "case"):
            extra = task.system_prompt
        kwargs: dict[str, Any] = {}
        if not _has_guard(self.agent):
            kwargs["capabilities"] = [TetherGuard("off", store=False, ask_user=self.ask_user)]
        overridden = self.agent.override(instructions=extra) if mode == "case" and extra else None
        try:
            if overridden is not None:
                with overridden:
                    result = await self._go(task, history, kwargs)
            else:
                result = await self._go(task, history, kwargs, extra)
        except Exception as exc:
            failure = find_in(exc, ModelFailure)
            if failure is not None:
                raise failure from None
            run = _ATTACHED.get(session)
            ended = run.ending_after_stop(exc) if run is not None else None
            if ended is not None:
                return ended
            raise
        run = _ATTACHED.get(session)
        return await run.ending(str(result.output)) if run is not None else str(result.output)

    async def _go(self, task: AgentTask, history: list[Any], kwargs: dict[str, Any], extra: str | None = None) -> Any:
        return await self.agent.run(task.message, message_history=history or None, instructions=extra,
                                    # the session's step cap and budget guard end the run, not the framework's limit
                                    usage_limits=UsageLimits(request_limit=None), **kwargs)


def _agent_instructions(agent: Any) -> bool:
    """Whether the agent has its own instructions or system prompt."""
    for attr in ("_instructions", "_system_prompts", "_system_prompt_functions", "_instructions_functions"):
        value = getattr(agent, attr, None)
        if value:
            return True
    return False


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
