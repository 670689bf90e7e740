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
from typing import Any

from ..messages import Decision, Message, ToolCallRequest, ToolSpec, Usage
from ..models import Model, ModelRequest, ModelResponse
from ..errors import ModelFailure
from ..runtime import AgentTask, RunSession
from ._common import ASK_USER, decision_from, require
from ._guarded import Failed, GuardOptions, GuardedRun, attach, find_in

_EXTRA = "openai-agents"
require("agents", _EXTRA)


from agents import Agent, FunctionTool, ModelSettings, RunConfig as SdkRunConfig  # noqa: E402
from agents.models.interface import Model as SdkModel, ModelTracing  # noqa: E402
from agents.run import AgentRunner  # noqa: E402

__all__ = ["OpenAIAgentsAgent", "TetherRunner", "GuardedModel", "guard_runs", "harness_tools", "to_tether_messages",
           "from_tether_messages",
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


# -- the production line: a runner that guards every run ------------------------------------
def _provider(model: Any) -> str | None:
    module = type(model).__module__
    if module.startswith("agents.models.openai") or "openai" in type(model).__name__.lower():
        return "openai"
    name = getattr(model, "model", None)
    return name.split("/", 1)[0] if isinstance(name, str) and "/" in name else None


def _message_output(text: str) -> Any:
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    return ResponseOutputMessage(id="msg_tether_finish_up", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


class GuardedModel(SdkModel):
    """The agent's own model, every request through the run's guards and record."""

    def __init__(self, inner: Any, run: GuardedRun):
        self.inner = inner
        self.run = run
        self.model = getattr(inner, "model", None) or type(inner).__name__

    async def _ask(self, request: ModelRequest) -> ModelResponse:
        response = await self.inner.get_response(
            None, from_tether_messages(request.messages), ModelSettings(), [], None, [], ModelTracing.DISABLED,
            previous_response_id=None, conversation_id=None, prompt=None)
        decision, _ = decision_of(response, [])
        return ModelResponse(decision=decision, usage=_usage(response))

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any) -> Any:
        from agents.items import ModelResponse as SdkResponse
        from agents.usage import Usage as SdkUsage

        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        specs = [ToolSpec(name=t.name, description=t.description, parameters=t.params_json_schema)
                 for t in tools if isinstance(t, FunctionTool)]
        request = ModelRequest(messages=to_tether_messages(items, instructions=system_instructions), tools=specs)

        async def send(pinned: list[str], hints: list[str]) -> Any:
            instructions = system_instructions
            extra = items
            if pinned:
                instructions = "\n".join([*pinned, system_instructions] if system_instructions else pinned)
            if hints:
                extra = [*items, *[{"role": "system", "content": h} for h in hints]]
            return await self.inner.get_response(instructions, extra, model_settings, tools, output_schema, handoffs,
                                                 tracing, **kwargs)

        def read(response: Any) -> tuple[Decision, Usage, list[str | None]]:
            decision, ids = decision_of(response, specs, self.run.session.state.step)
            return decision, _usage(response), list(ids)

        def render(decision: Decision, usage: Usage) -> Any:
            from openai.types.responses import ResponseFunctionToolCall

            output: list[Any] = [_message_output(decision.text)] if decision.text else []
            if decision.kind == "question":
                output = [ResponseFunctionToolCall(type="function_call", call_id=f"ask_{self.run.session.state.step}",
                                                   name=ASK_USER, arguments=json.dumps({"question": decision.text},
                                                                                       ensure_ascii=False))]
            output += [ResponseFunctionToolCall(type="function_call", call_id=c.id, name=c.name,
                                                arguments=json.dumps(c.arguments, ensure_ascii=False))
                       for c in decision.tool_calls]
            return SdkResponse(output=output, usage=SdkUsage(input_tokens=usage.input_tokens,
                                                             output_tokens=usage.output_tokens,
                                                             total_tokens=usage.input_tokens + usage.output_tokens),
                               response_id=None)

        turn = await self.run.model_call(request, send, read, model=str(self.model), provider=_provider(self.inner),
                                         asker=self._ask, render=render)
        if turn.final is not None:
            return SdkResponse(output=[_message_output(turn.final)], usage=SdkUsage(), response_id=None)
        return turn.response

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        from ..errors import UsageError

        raise UsageError("streamed runs are not guarded yet: use Runner.run or Runner.run_sync")


def _guarded_tool(tool: Any, run: GuardedRun) -> Any:
    """The agent's own FunctionTool, its calls through ``run.tool_call``; its
    failure handler still writes what the model reads."""
    import dataclasses

    from agents.tool import maybe_invoke_function_tool_failure_error_function

    original = tool.on_invoke_tool
    impl = getattr(original, "_invoke_tool_impl", None)

    async def invoke(ctx: Any, args_json: str) -> Any:
        async def call() -> Any:
            if impl is None:
                return await original(ctx, args_json)
            try:
                return await impl(ctx, args_json)
            except Exception as exc:
                text = await maybe_invoke_function_tool_failure_error_function(function_tool=tool, context=ctx,
                                                                                 error=exc)
                if text is None:
                    raise
                return Failed(text, f"{type(exc).__name__}: {exc}")

        raw, value, _ = await run.tool_call(ctx.tool_call_id, tool.name, args_json or "{}", call)
        return value

    return dataclasses.replace(tool, on_invoke_tool=invoke)


class _MCPGuardedAgent(Agent):
    """An ``Agent`` whose MCP servers' tools go through the run (``get_mcp_tools`` wrapped)."""

    _tether_run: Any = None

    async def get_mcp_tools(self, run_context: Any) -> Any:
        tools = await super().get_mcp_tools(run_context)
        run = self._tether_run
        return [_guarded_tool(t, run) if run is not None and isinstance(t, FunctionTool) else t for t in tools]


def harness_tools(run: GuardedRun) -> list[FunctionTool]:
    """The harness's tools (an eval's case tools, ask_user) as FunctionTools beside the agent's own."""
    out = []
    for spec in run.harness_specs():
        async def invoke(ctx: Any, args_json: str, _name: str = spec.name) -> Any:
            raw, value, _ = await run.tool_call(ctx.tool_call_id, _name, args_json or "{}", lambda: None)
            return value

        out.append(FunctionTool(name=spec.name, description=spec.description, params_json_schema=spec.parameters,
                                on_invoke_tool=invoke, strict_json_schema=False))
    return out


def _resolve_model(agent: Any, run_config: Any) -> Any:
    model = agent.model
    if model is None or isinstance(model, str):
        provider = getattr(run_config, "model_provider", None) if run_config is not None else None
        if run_config is not None and getattr(run_config, "model", None) is not None:
            model = run_config.model
            if not isinstance(model, str):
                return model
        from agents.models.multi_provider import MultiProvider

        return (provider or MultiProvider()).get_model(model)
    return model


class TetherRunner(AgentRunner):
    """The Agents SDK's runner with tether around every run (see :func:`guard_runs`)."""

    def __init__(self, guard: GuardOptions, *, ask_user: bool = True):
        super().__init__()
        self.guard = guard
        self.ask_user = ask_user

    def prepare(self, agent: Any, run: GuardedRun, run_config: Any) -> Any:
        """A clone of the agent: its model and tools through the run, the harness's tools beside them."""
        model = _resolve_model(agent, run_config)
        if not isinstance(model, GuardedModel):
            model = GuardedModel(model, run)
        tools = [_guarded_tool(t, run) if isinstance(t, FunctionTool) else t for t in agent.tools]
        own = agent.instructions if isinstance(agent.instructions, str) else None
        prompt = run.system_prompt(own) if not callable(agent.instructions) else agent.instructions
        clone = agent.clone(model=model, tools=[*tools, *harness_tools(run)],
                            instructions=prompt if prompt is not None else agent.instructions)
        if getattr(agent, "mcp_servers", None) and type(agent) is Agent:   # its MCP servers' tools, guarded too
            clone.__class__ = _MCPGuardedAgent
            clone._tether_run = run
        return clone

    async def run(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        model = starting_agent.model
        name = model if isinstance(model, str) else getattr(model, "model", None)
        run = self.guard.open(framework="openai-agents", model_name=str(name or starting_agent.name),
                              message=input if isinstance(input, str) else None)
        if run.depth:        # a run inside a guarded run (run_sync calls run): already guarded
            run.depth -= 1
            return await super().run(starting_agent, input, **kwargs)
        agent = self.prepare(starting_agent, run, kwargs.get("run_config"))
        try:
            result = await super().run(agent, input, **kwargs)
        except BaseException as exc:
            await run.close(error=exc)     # a replay's departure is raised from here as itself
            raise
        await run.close(reply=str(result.final_output if result.final_output is not None else ""))
        return result


    def run_streamed(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        from ..errors import UsageError

        raise UsageError("tether's guard_runs() does not guard Runner.run_streamed yet (the run would go "
                         "unguarded and unrecorded): use Runner.run or Runner.run_sync")


def guard_runs(guards: Any = "on", *, store: Any = None, side_effects: Any = (), approvals: Any = None,
               name: str | None = None) -> TetherRunner:
    """tether for every ``Runner.run`` / ``Runner.run_sync`` of this process, one line::

        guard_runs()

    Each run is a run in the store (``$TETHER_STORE`` or ``.tether/tether.db``);
    every model request and every function tool call of the agent goes through
    the guard stack and the gates (options: :class:`tether.adapters._guarded.GuardOptions`).
    A stop ends the run with the finish-up answer as its ``final_output``. It
    installs a :class:`TetherRunner` as the SDK's default runner (``set_default_agent_runner``)."""
    from agents.run import set_default_agent_runner

    runner = TetherRunner(GuardOptions(guards=guards, store=store, side_effects=tuple(side_effects), approvals=approvals,
                                name=name))
    set_default_agent_runner(runner)
    return runner


# -- the agent under test ---------------------------------------------------------------
class OpenAIAgentsAgent:
    """An Agents SDK ``Agent`` as a tether agent under test (``tether eval --agent``):
    it runs unchanged (its own instructions, ``--system-prompt``; its own tools,
    the case's beside them) through :class:`TetherRunner`, joined to the eval's run.
    ``run_config`` is the SDK RunConfig to run with."""

    def __init__(self, agent: Any, *, name: str | None = None, run_config: SdkRunConfig | None = None,
                 ask_user: bool = True):
        self.agent = agent
        self.run_config = run_config or SdkRunConfig()
        self.ask_user = ask_user
        self.name = name or f"openai-agents:{getattr(agent, 'name', 'agent')}"

    async def run(self, session: RunSession, task: AgentTask) -> Any:
        run = attach(session, task, framework="openai-agents", ask_user=self.ask_user)
        items: list[dict[str, Any]] = [{"role": "user" if t.role == "user" else "assistant", "content": t.content}
                                       for t in task.history]
        if task.message is not None:
            items.append({"role": "user", "content": task.message})
        runner = TetherRunner(GuardOptions(guards="off", store=False), ask_user=self.ask_user)
        try:
            result = await runner.run(self.agent, items, run_config=self.run_config, max_turns=task.max_steps + 5)
        except Exception as exc:
            failure = find_in(exc, ModelFailure)
            if failure is not None:
                raise failure from None
            ended = run.ending_after_stop(exc)
            if ended is not None:
                return ended
            raise
        return await run.ending(str(result.final_output or ""))


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



