"""The OpenAI Agents SDK: tether's guards and harness tools inside ``Runner.run``.

``pip install 'tether[openai-agents]'``. Through the SDK's own extension points:

* the harness's tools become ``FunctionTool``s whose ``on_invoke_tool`` calls
  ``session.tool(call)`` (guards, approvals, the side-effect ledger, the
  case's intercepts and mocks, recording). They are built without a
  ``failure_error_function``: a guard's stop (:class:`RunStop`) fails the run
  instead of being turned into a string the model reads; a *blocked* call is
  an ordinary error result the model reads;
* ``RunConfig.call_model_input_filter`` asks the guards before each model call
  (the budget is checked before the request), adds pinned text to the
  instructions and guard hints as system items, and records the request;
* ``RunHooks.on_llm_end`` records the response (decision, usage) and asks the
  guards after it.

The SDK's own ``max_turns`` is set above the case's step cap, so the session's
cap (``step_limit``) ends a runaway run, as in tether's loop.

::

    from agents import Agent
    from tether.adapters.openai_agents import OpenAIAgentsAgent

    def build():
        return OpenAIAgentsAgent(Agent(name="assistant", model="gpt-4.1-mini"))
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from ..messages import Decision, Message, ToolCallRequest, ToolSpec, Usage
from ..models import Model, ModelRequest, ModelResponse
from ..tools import ToolSet
from ..errors import RunStop
from ..runtime import AgentTask, RunSession
from ._common import (ASK_USER, CallIds, check_step_cap, decision_from, finish_up, harness_specs, remember,
                      require, run_tool, split_added)

_EXTRA = "openai-agents"
require("agents", _EXTRA)


from agents import FunctionTool, ModelSettings, RunConfig as SdkRunConfig, RunHooks, Runner  # noqa: E402
from agents.models.interface import ModelTracing  # noqa: E402

__all__ = ["OpenAIAgentsAgent", "TetherHooks", "harness_tools", "to_tether_messages", "from_tether_messages",
           "tether_responder", "request_from_chat_body"]


def _plain(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True) if dump else dict(item)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(_plain(c).get("text", "")) for c in content)
    return "" if content is None else str(content)


# -- messages both ways --------------------------------------------------------------
def to_tether_messages(items: list[Any], *, instructions: str | None = None) -> list[Message]:
    """Responses-API input items as tether messages (ask_user: the agent's question, the user's reply)."""
    out: list[Message] = [Message(role="system", content=instructions)] if instructions else []
    names: dict[str, str] = {}
    asked: set[str] = set()

    def assistant() -> Message:
        if not out or out[-1].role != "assistant":
            out.append(Message(role="assistant"))
        return out[-1]

    for raw in items:
        item = _plain(raw)
        kind, role = item.get("type"), item.get("role")
        if kind == "function_call":
            args = item.get("arguments") or "{}"
            try:
                parsed = json.loads(args) if isinstance(args, str) else dict(args)
            except ValueError:
                parsed = {}
            cid = item.get("call_id") or ""
            names[cid] = item["name"]
            msg = assistant()
            if item["name"] == ASK_USER:
                asked.add(cid)
                msg.content = (msg.content + "\n" if msg.content else "") + str(parsed.get("question", ""))
            else:
                msg.tool_calls.append(ToolCallRequest(id=cid, name=item["name"],
                                                      arguments=parsed if isinstance(parsed, dict) else {}))
        elif kind == "function_call_output":
            cid = item.get("call_id") or ""
            output = _content_text(item.get("output"))
            if cid in asked:
                out.append(Message(role="user", content=output))
            else:
                out.append(Message(role="tool", tool_call_id=cid, name=names.get(cid), content=output))
        elif role in ("system", "developer"):
            out.append(Message(role="system", content=_content_text(item.get("content"))))
        elif role == "user":
            out.append(Message(role="user", content=_content_text(item.get("content"))))
        elif role == "assistant":
            text = _content_text(item.get("content"))
            msg = assistant()
            msg.content = (msg.content + text) if msg.content else text
    return out


def from_tether_messages(messages: list[Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id or "", "output": m.content})
        elif m.role == "assistant":
            if m.content:
                items.append({"role": "assistant", "content": m.content})
            for c in m.tool_calls:
                items.append({"type": "function_call", "call_id": c.id, "name": c.name,
                              "arguments": json.dumps(c.arguments, ensure_ascii=False)})
        else:
            items.append({"role": m.role, "content": m.content})
    return items


def decision_of(response: Any, tools: list[ToolSpec], step: int = 0) -> tuple[Decision, list[str]]:
    """(decision, the SDK's call ids) for an SDK ModelResponse."""
    text, calls = "", []
    for raw in response.output:
        item = _plain(raw)
        if item.get("type") == "function_call":
            calls.append((item.get("call_id"), item["name"], item.get("arguments")))
        elif item.get("type") == "message":
            text += _content_text(item.get("content"))
    return decision_from(calls, text, tools, step), [c[0] for c in calls if c[1] != ASK_USER]


def _usage(response: Any) -> Usage:
    u = getattr(response, "usage", None)
    return Usage(input_tokens=getattr(u, "input_tokens", 0) or 0, output_tokens=getattr(u, "output_tokens", 0) or 0)


def _specs(agent: Any) -> list[ToolSpec]:
    return [ToolSpec(name=t.name, description=t.description, parameters=t.params_json_schema)
            for t in getattr(agent, "tools", []) if isinstance(t, FunctionTool)]


# -- tools, the input filter and the hooks ----------------------------------------------------
def harness_tools(session: RunSession, tools: ToolSet, ids: CallIds, *, ask_user: bool = True) -> list[FunctionTool]:
    """The harness's tools as FunctionTools that call the session (no failure_error_function:
    a guard's stop must end the run, not become text)."""
    real_ask = ASK_USER in tools
    lock = asyncio.Lock()        # calls of one turn may run concurrently; guards see them in order
    out = []
    for spec in harness_specs(tools.specs(), ask_user=ask_user):
        async def invoke(ctx: Any, args_json: str, _name: str = spec.name) -> str:
            async with lock:
                return await run_tool(session, ids.get(ctx.tool_call_id, f"call_{_name}"), _name, args_json or "{}",
                                      real_ask_user=real_ask)

        out.append(FunctionTool(name=spec.name, description=spec.description, params_json_schema=spec.parameters,
                                on_invoke_tool=invoke, strict_json_schema=False))
    return out


class TetherHooks(RunHooks):
    """Records each model response and asks the guards after it (``on_llm_end``);
    :meth:`input_filter` is the ``call_model_input_filter`` that asks them before."""

    def __init__(self, session: RunSession, ids: CallIds, *, max_steps: int = 30):
        self.session = session
        self.ids = ids
        self.max_steps = max_steps
        self._request: ModelRequest | None = None
        self._specs: list[ToolSpec] = []
        self._step = 0
        self._t0 = 0.0

    async def input_filter(self, data: Any) -> Any:
        s = self.session
        model_data = data.model_data
        self._specs = _specs(data.agent)
        request = ModelRequest(messages=to_tether_messages(model_data.input, instructions=model_data.instructions),
                               tools=self._specs)
        check_step_cap(s, self.max_steps)
        sent = await s.before_model(request)
        self._request = request
        self._step = sent.step
        pinned, hints = split_added(request.messages, sent.messages)
        if pinned or hints:
            instructions = "\n".join([*pinned, model_data.instructions] if model_data.instructions else pinned)
            model_data = type(model_data)(input=[*model_data.input, *[{"role": "system", "content": h} for h in hints]],
                                          instructions=instructions or None)
        s.record_request(sent, model=_model_name(getattr(data.agent, "model", None)), params={})
        self._t0 = time.perf_counter()
        return model_data

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        decision, sdk_ids = decision_of(response, self._specs, self._step)
        tether_response = ModelResponse(decision=decision, usage=_usage(response))
        recorded = self.session.record_response(tether_response,
                                                latency_ms=round((time.perf_counter() - self._t0) * 1000, 3))
        self.ids.learn(sdk_ids, recorded)
        if self._request is not None:
            remember(self.session, self._request, recorded)
        await self.session.after_model(tether_response)


def _model_name(model: Any) -> str:
    if model is None or isinstance(model, str):
        return model or "default"
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


def _find_stop(exc: BaseException) -> RunStop | None:
    """The SDK may wrap an exception raised in a tool or hook: find our RunStop."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, RunStop):
            return e
        stack += [x for x in (e.__cause__, e.__context__) if x is not None]
        stack += list(getattr(e, "exceptions", ()))
    return None


# -- the agent under test ---------------------------------------------------------------
class OpenAIAgentsAgent:
    """An Agents SDK ``Agent`` as a tether agent under test. The harness's tools
    are added to (a clone of) the agent for each run; ``run_config`` is the
    SDK RunConfig to start from (its input filter and max turns are set here)."""

    def __init__(self, agent: Any, *, name: str | None = None, run_config: SdkRunConfig | None = None,
                 ask_user: bool = True):
        self.agent = agent
        self.run_config = run_config or SdkRunConfig()
        self.ask_user = ask_user
        self.name = name or f"openai-agents:{getattr(agent, 'name', 'agent')}"
        self._model_obj: Any = None

    def _model(self) -> Any:
        model = self.agent.model
        if model is None or isinstance(model, str):
            return self.run_config.model_provider.get_model(model)
        return model

    async def ask_model(self, request: ModelRequest) -> ModelResponse:
        """The agent's own model, asked directly with no tools (a guard's finish-up)."""
        if self._model_obj is None:
            self._model_obj = self._model()
        response = await self._model_obj.get_response(
            None, from_tether_messages(request.messages), ModelSettings(), [], None, [], ModelTracing.DISABLED,
            previous_response_id=None, conversation_id=None, prompt=None)
        decision, _ = decision_of(response, [])
        return ModelResponse(decision=decision, usage=_usage(response))

    async def stopped(self, session: RunSession, stop: RunStop) -> tuple[Any, str, str]:
        """A guard stopped the run: its finish-up request goes to the agent's own model."""
        return await finish_up(session, stop, self.name, self.ask_model)

    async def run(self, session: RunSession, task: AgentTask) -> str:
        import dataclasses

        ids = CallIds()
        hooks = TetherHooks(session, ids, max_steps=task.max_steps)
        agent = self.agent.clone(tools=[*self.agent.tools, *harness_tools(session, task.tools, ids,
                                                                            ask_user=self.ask_user)],
                                 instructions=task.system_prompt or self.agent.instructions)
        items: list[dict[str, Any]] = [{"role": "user" if t.role == "user" else "assistant", "content": t.content}
                                       for t in task.history]
        if task.message is not None:
            items.append({"role": "user", "content": task.message})
        config = dataclasses.replace(self.run_config, call_model_input_filter=hooks.input_filter)
        try:
            result = await Runner.run(agent, items, hooks=hooks, run_config=config, max_turns=task.max_steps + 5)
        except RunStop:
            raise
        except Exception as exc:
            stop = _find_stop(exc)
            if stop is not None:
                raise stop from None
            raise
        reply = str(result.final_output or "")
        await session.final(reply)
        return reply


# -- serving a tether Model as an OpenAI chat-completions endpoint (offline runs) ----------------
def request_from_chat_body(body: dict[str, Any]) -> ModelRequest:
    """An OpenAI chat-completions request body as a tether ModelRequest (the
    ask_user pseudo-tool read back as a question and its answer)."""
    messages: list[Message] = []
    asked: set[str] = set()
    names: dict[str, str] = {}
    for m in body.get("messages", []):
        role = m.get("role")
        content = _content_text(m.get("content"))
        if role in ("system", "developer"):
            messages.append(Message(role="system", content=content))
        elif role == "user":
            messages.append(Message(role="user", content=content))
        elif role == "assistant":
            calls = []
            for c in m.get("tool_calls") or []:
                fn = c.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                names[c.get("id", "")] = fn.get("name", "")
                if fn.get("name") == ASK_USER:
                    asked.add(c.get("id", ""))
                    content = (content + "\n" if content else "") + str(args.get("question", ""))
                else:
                    calls.append(ToolCallRequest(id=c.get("id", ""), name=fn.get("name", ""),
                                                 arguments=args if isinstance(args, dict) else {}))
            messages.append(Message(role="assistant", content=content, tool_calls=calls))
        elif role == "tool":
            cid = m.get("tool_call_id", "")
            if cid in asked:
                messages.append(Message(role="user", content=content))
            else:
                messages.append(Message(role="tool", tool_call_id=cid, name=names.get(cid), content=content))
    tools = [ToolSpec(name=t["function"]["name"], description=t["function"].get("description", ""),
                      parameters=t["function"].get("parameters", {}))
             for t in body.get("tools") or [] if t.get("function", {}).get("name") != ASK_USER]
    return ModelRequest(messages=messages, tools=tools)


def tether_responder(model: Model):
    """A :class:`~tether.testing.fake_openai.FakeOpenAIServer` responder that
    answers every chat-completions request with a tether Model's decision (a
    question is rendered as an ``ask_user`` call): point the SDK's OpenAI client
    at the loopback server and the agent runs offline, deterministically."""

    def respond(recorded: Any) -> Decision:
        request = request_from_chat_body(recorded.body or {})
        response = asyncio.run(model.request(request))   # a server thread: its own event loop
        # call ids as a provider makes them: unique per answer (the SDK skips a call whose id it has answered)
        calls = [c.model_copy(update={"id": f"call_{len(request.messages)}_{i}_{c.id}"})
                 for i, c in enumerate(response.decision.tool_calls)]
        return response.decision.model_copy(update={"tool_calls": calls})

    return respond



