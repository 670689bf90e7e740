"""The LLM gateway's runs: one per conversation.

A conversation is named by the client (``X-Tether-Run``) or by its opening
messages (the first system and user messages, hashed). Each request carries
the whole history; what is new since the last request is read from it: the
tool calls the agent's code ran and their results go through the guards
(``before_tool`` then ``after_tool``, as if the gateway had run them), then
``before_model`` decides about the request itself. The outcome is one of:

* forward as is;
* forward with the guards' hints as one more system message;
* stop: the gateway answers, without forwarding, with a finish-up.

A final answer (no tool calls) finishes the run; a conversation that goes on
after that (a new user message) is a new run, ``<id>-2``.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import RunStop
from ..events import ToolCallEvent, ToolResultEvent
from ..guards import Intervention
from ..guards._base import Trip
from ..guards.budget import BudgetGuard
from ..ids import check_id
from ..messages import Decision, Message, ToolSpec, Usage
from ..models import ModelRequest, ModelResponse
from ..replay.redact import RedactionRules, Redactor
from ..runtime import RunConfig, RunSession
from ..status import TerminalStatus
from ..tools import ToolSet

MAX_CONVERSATIONS = 10_000
# Text that may hold a secret (tether.replay.redact's patterns start with one of these);
# text without any is recorded as is, without running every pattern over it.
_MAYBE_SECRET = re.compile(r"(?i)sk-|[rs]k_|key|token|secret|passw|bearer|basic\s|eyj|akia|asia|gh[pousr]_|github_pat|"
                           r"xox|aiza|-----begin|authoriz|cookie")
_ERROR_START = ("error", "exception", "traceback", "failed", "failure", "fatal")


def looks_failed(content: str) -> bool:
    """A tool message that reports a failure (chat messages have no error flag)."""
    head = content.lstrip()[:200]
    if head.startswith("{"):
        try:
            obj = json.loads(content)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            return bool(obj.get("error")) or obj.get("is_error") is True or obj.get("ok") is False
    return head.casefold().startswith(_ERROR_START)


def opening_key(messages: Sequence[Message]) -> str:
    """The conversation's name when the client gives none: its opening messages."""
    opening = []
    for m in messages:
        if m.role in ("system", "user"):
            opening.append(f"{m.role}:{m.content}")
        if m.role == "user":
            break
    digest = hashlib.blake2b("\x00".join(opening).encode("utf-8", "replace"), digest_size=8).hexdigest()
    return f"gw-{digest}"


@dataclass
class Decided:
    """What the gateway does with one request."""

    action: str                      # "forward" | "stop"
    hints: list[str] = field(default_factory=list)
    stop: RunStop | None = None
    conversation: Conversation | None = None


class Conversation:
    def __init__(self, run_id: str, *, guards: Sequence[Any], label: str, store: Any, model: str, meta: dict,
                 n: int = 1):
        self.n = n                               # 1 for the conversation's first run, 2 for its continuation...
        config = RunConfig(guards=tuple(guards), guards_label=label, store=store, max_steps=10**9, kind="gateway",
                           meta=meta)
        self.session = RunSession.start(model_name=model or "gateway-client", tools=ToolSet([]), config=config,
                                        run_id=run_id)
        self.run_id = run_id
        self.redactor = Redactor(RedactionRules(pii=False))
        self.seen_calls: set[str] = set()        # "message index:call id" of the results read
        self.used_ids: set[str] = set()          # call ids in the record
        self.calls: dict[str, Any] = {}          # tool call id -> ToolCallRequest, from the history
        self.recorded: list[Message] = []        # the history so far, redacted
        self.length = 0                          # messages in the last request
        self.final_text: str | None = None       # the stop's answer, repeated to a client that asks again
        self.dirty = True
        self.last = time.monotonic()
        self.stopped: RunStop | None = None
        self.pending_stop: RunStop | None = None

    @property
    def finished(self) -> bool:
        return self.session.finished is not None

    def _redact(self, m: Message) -> Message:
        if not _MAYBE_SECRET.search(m.content) and not any(_MAYBE_SECRET.search(json.dumps(c.arguments))
                                                           for c in m.tool_calls):
            return m
        return Message.model_validate(self.redactor.redact(m.model_dump(mode="json")))

    def _text(self, text: str) -> str:
        return self.redactor.text(text) if _MAYBE_SECRET.search(text) else text

    async def before(self, messages: list[Message], tools: list[ToolSpec], model: str, *,
                     delta: bool = False) -> Decided:
        """Read what is new in the history and ask the guards about this request
        (``delta``: the request carries only what is new, after a previous response)."""
        session = self.session
        self.last = time.monotonic()
        self.dirty = True
        if tools:
            session.specs = tools
        if self.stopped is not None:
            return Decided("stop", stop=self.stopped, conversation=self)
        extends = (len(messages) >= self.length or delta) and bool(self.recorded)
        new = messages if delta else messages[self.length:] if extends else messages
        first = self.length if delta else len(messages) - len(new)
        self.length = self.length + len(messages) if delta else len(messages)
        stop: RunStop | None = self.pending_stop
        for index, m in enumerate(new, first):
            for call in m.tool_calls:
                self.calls[call.id] = call
            key = f"{index}:{m.tool_call_id}"
            if stop is not None or m.role != "tool" or not m.tool_call_id or key in self.seen_calls:
                continue
            call = self.calls.get(m.tool_call_id)
            if call is None:
                continue
            self.seen_calls.add(key)
            if call.id in self.used_ids:        # models may reuse call ids; the record needs them unique
                call = call.model_copy(update={"id": f"{call.id}~{index}"})
            self.used_ids.add(call.id)
            stop = await self._tool(call, m.content)
        redacted = [self._redact(m) for m in new]
        self.recorded = [*self.recorded, *redacted] if extends else redacted
        if stop is None and tools:
            stop = self._no_more_calls()
        if stop is None:
            session.state.step += 1
            request = ModelRequest(messages=self.recorded, tools=tools, step=session.state.step)
            verdict = await session.ask("before_model", request)
            if verdict is not None:
                stop = session.stop(verdict)
        if stop is not None:
            return Decided("stop", stop=stop, conversation=self)
        return Decided("forward", hints=session.take_hints(), conversation=self)

    def _no_more_calls(self) -> RunStop | None:
        """The agent, not the gateway, runs the tools: a request that offers tools once the
        tool-call budget is spent would let the model ask for one more, so it is stopped."""
        session = self.session
        made = session.state.tool_calls
        for guard in session.chain.guards:
            limit = guard.budget.max_tool_calls if isinstance(guard, BudgetGuard) else None
            if limit is not None and made >= limit:
                verdict = Intervention("stop", "budget.tool_calls",
                                  f"tool calls budget exhausted: {made} made, limit {limit}; no further call is "
                                  "offered to the model", {"dimension": "tool_calls", "projected": made + 1,
                                                          "limit": limit},
                                  status=TerminalStatus.BUDGET_EXCEEDED, finish_up=True)
                session._record_trip(Trip(guard, verdict))
                session.stopped_by = guard
                return session.stop(verdict)
        return None

    async def _tool(self, call: Any, content: str) -> RunStop | None:
        session = self.session
        s = session.state
        session.add(ToolCallEvent(step=s.step, call_id=call.id, tool=call.name,
                                  arguments=self.redactor.redact(call.arguments)))
        verdict = await session.ask("before_tool", call)
        if verdict is not None and verdict.action != "block":
            session.add(ToolResultEvent(step=s.step, call_id=call.id, tool=call.name, ok=False,
                                        error=f"ran, but the guards would have stopped it: {verdict.message}",
                                        error_type="guard_stopped", source="guard"))
            return session.stop(verdict)
        failed = looks_failed(content)
        text = self._text(content[:65536])
        event = session.add(ToolResultEvent(step=s.step, call_id=call.id, tool=call.name, ok=not failed,
                                            data=None if failed else text, error=text if failed else None,
                                            error_type="tool_error" if failed else None, source="tool"))
        s.tool_calls += 1
        after = await session.ask("after_tool", call, event)
        if after is not None and after.action != "block":
            return session.stop(after)
        return None

    def record_request(self, tools: list[ToolSpec], model: str, params: dict[str, Any], hints: list[str]) -> None:
        messages = self.recorded + [Message(role="system", content="\n".join(hints))] if hints else self.recorded
        self.session.record_request(ModelRequest(messages=messages, tools=tools, step=self.session.state.step),
                                    model=model, params=params)

    def record_response(self, decision: Decision, usage: Usage, latency_ms: float) -> None:
        for call in decision.tool_calls:      # a stateful client (previous_response_id) sends back only the outputs
            self.calls.setdefault(call.id, call)
        if decision.text:
            decision = decision.model_copy(update={"text": self._text(decision.text)})
        self.session.record_response(ModelResponse(decision=decision, usage=usage), latency_ms=latency_ms)
        self.dirty = True
        if not decision.tool_calls:
            self.session.finish(TerminalStatus.COMPLETED, decision.text, "final answer (no tool calls)")

    def record_finish_up(self, decision: Decision, usage: Usage, latency_ms: float) -> None:
        from ..messages import DecisionKind

        decision = decision.model_copy(update={"text": self.redactor.text(decision.text), "kind": DecisionKind.FINAL})
        self.session.record_response(ModelResponse(decision=decision, usage=usage), latency_ms=latency_ms)

    def finish_stopped(self, stop: RunStop, text: str) -> None:
        self.stopped = stop
        self.final_text = text
        reply = text
        session = self.session
        if stop.verdict is not None and session.stopped_by is not None:    # the budget's done / not-done ledger
            reply = session.stopped_by.on_stop(session.ctx(), stop.verdict, reply)
        session.finish(stop.status, self.redactor.text(reply), stop.reason)


class Conversations:
    """Every conversation the gateway has seen (the newest MAX_CONVERSATIONS)."""

    def __init__(self, *, guards: Callable[[], Sequence[Any]], label: str, store: Any, upstream: str):
        self.make_guards = guards
        self.label = label
        self.store = store
        self.upstream = upstream
        self.open: OrderedDict[str, Conversation] = OrderedDict()
        self.by_response: OrderedDict[str, str] = OrderedDict()     # Responses API id -> conversation key

    def get(self, key: str | None, messages: list[Message], model: str, previous: str | None = None) -> Conversation:
        if key is not None:
            key = check_id(key, "X-Tether-Run")
        elif previous is not None and previous in self.by_response:
            key = self.by_response[previous]
        else:
            key = opening_key(messages)
        conv = self.open.get(key)
        if conv is not None:
            self.open.move_to_end(key)
            if not conv.finished or (conv.stopped is not None and len(messages) <= conv.length):
                return conv          # going on, or asking a stopped conversation again
        n = 1 if conv is None else conv.n + 1
        run_id = key if n == 1 else f"{key}-{n}"
        while self.store is not None and self.store.get_run(run_id) is not None:
            n += 1
            run_id = f"{key}-{n}"
        meta = {"gateway": "llm", "upstream": self.upstream, "conversation": key}
        if conv is not None:
            meta["continues"] = conv.run_id
        conv = Conversation(run_id, guards=self.make_guards(), label=self.label, store=self.store, model=model,
                            meta=meta, n=n)
        self.open[key] = conv
        if len(self.open) > MAX_CONVERSATIONS:
            _, old = self.open.popitem(last=False)
            if not old.finished:
                old.session.finish(TerminalStatus.COMPLETED, "", "the gateway stopped following this conversation")
        return conv

    def remember_response(self, response_id: str, conv: Conversation) -> None:
        key = next((k for k, c in self.open.items() if c is conv), None)
        if key is not None:
            self.by_response[response_id] = key
            if len(self.by_response) > MAX_CONVERSATIONS:
                self.by_response.popitem(last=False)

    def flush(self) -> None:
        """Write what the conversations recorded since the last flush (one batch, off the request path)."""
        if self.store is None:
            return
        for conv in list(self.open.values()):
            if conv.dirty and not conv.finished:
                conv.session.flush()
                conv.dirty = False

    def close(self, reason: str) -> None:
        for conv in self.open.values():
            if not conv.finished:
                conv.session.finish(TerminalStatus.COMPLETED, "", reason)
