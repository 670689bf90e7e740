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
after that (a new user message) is a new run, ``<id>-2``. A conversation whose
agent never comes back for its tool calls' answer ends, when the gateway
shuts down (or stops following it), as ``error`` with error kind ``aborted``:
abandoned, which is not the agent's doing.

Only what is new in a request is read: the messages after those of the
previous request, each converted, redacted and hashed once, so a long
conversation costs what it adds, not its whole history again. The record is
written by the gateway's store thread (:mod:`._writer`): a conversation's
session only queues its writes. A store locked by another process, or a
PostgreSQL server restarting, delays a response (it goes back once its record
is in) rather than losing the record: the writer tries again, connects again,
for up to ``RETRY_LOCKED_S``, as it does for the MCP gateway's windows.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import RunStop
from ..events import ToolCallEvent, ToolResultEvent, outcome_of
from ..guards import Intervention
from ..guards._base import Trip
from ..guards.budget import BudgetGuard
from ..ids import check_id
from ..messages import Decision, Message, ToolSpec, Usage, canonical_json
from ..models import ModelRequest, ModelResponse
from ..replay.redact import RedactionRules, Redactor
from ..runtime import RunConfig, RunSession
from ..status import TerminalStatus
from ..tools import ToolSet
from ._writer import RETRY_LOCKED_S, DeferredStore, StoreWriter
from .openai_format import messages_from, opening, tools_of

MAX_CONVERSATIONS = 10_000
# Text that may hold a secret (tether.replay.redact's patterns start with one of these);
# text without any is recorded as is, without running every pattern over it.
_MAYBE_SECRET = re.compile(r"(?i)sk-|[rs]k_|key|token|secret|passw|bearer|basic\s|eyj|akia|asia|gh[pousr]_|github_pat|"
                           r"xox|aiza|-----begin|authoriz|cookie")
_ERROR_START = ("error", "exception", "traceback", "failed", "failure", "fatal")
ABANDONED = "aborted"     # the error kind of a conversation its agent did not come back to


def looks_failed(content: str) -> bool:
    """A tool message that reports a failure (chat messages have no error flag)."""
    head = content.lstrip()[:200]
    if head.startswith("{"):
        try:
            obj = orjson.loads(content)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            return bool(obj.get("error")) or obj.get("is_error") is True or obj.get("ok") is False
    return head.casefold().startswith(_ERROR_START)


def opening_key(kind: str, items: Sequence[Any]) -> str:
    """The conversation's name when the client gives none: its opening messages
    (the history's system messages up to its first user message, and that one)."""
    digest = hashlib.blake2b("\x00".join(opening(kind, items)).encode("utf-8", "replace"), digest_size=8).hexdigest()
    return f"gw-{digest}"


class RequestHasher:
    """``ModelRequest.canonical_hash`` of a growing conversation, kept up to date:
    each message is serialised once, when it first appears (the canonical JSON of
    a request is its messages, in order, then its tools)."""

    def __init__(self) -> None:
        self.reset([])

    def reset(self, messages: Sequence[Message]) -> None:
        self._hash = hashlib.sha256(b'{"messages":[')
        self._count = 0
        self.extend(messages)

    def extend(self, messages: Sequence[Message]) -> None:
        for m in messages:
            self._hash.update(self._item(m, self._count))
            self._count += 1

    @staticmethod
    def _item(m: Message, index: int) -> bytes:
        text = canonical_json(m.model_dump(mode="json", exclude_defaults=True))
        return (("," if index else "") + text).encode("utf-8")

    def hexdigest(self, extra: Sequence[Message], tools_json: str) -> str:
        """The hash of the messages so far, then ``extra``, then the tools (their canonical JSON)."""
        h = self._hash.copy()
        count = self._count
        for m in extra:
            h.update(self._item(m, count))
            count += 1
        h.update(('],"tools":' + tools_json + "}").encode("utf-8"))
        return h.hexdigest()[:16]


@dataclass
class Decided:
    """What the gateway does with one request."""

    action: str                      # "forward" | "stop"
    hints: list[str] = field(default_factory=list)
    stop: RunStop | None = None
    conversation: Conversation | None = None


class Conversation:
    def __init__(self, run_id: str, key: str, *, guards: Sequence[Any], label: str, store: Any, model: str,
                 meta: dict, n: int = 1):
        self.n = n                               # 1 for the conversation's first run, 2 for its continuation...
        self.key = key
        config = RunConfig(guards=tuple(guards), guards_label=label, store=store, max_steps=10**9, kind="gateway",
                           meta=meta, checkpoints=False)
        self.session: RunSession | None = RunSession.start(model_name=model or "gateway-client", tools=ToolSet([]),
                                                           config=config, run_id=run_id)
        self.run_id = run_id
        self.redactor = Redactor(RedactionRules(pii=False))
        self.seen_calls: set[str] = set()        # "message index:call id" of the results read
        self.used_ids: set[str] = set()          # call ids in the record
        self.calls: dict[str, Any] = {}          # tool call id -> ToolCallRequest, from the history
        self.recorded: list[Message] = []        # the history so far, redacted
        self.hasher = RequestHasher()            # ... and its canonical hash, kept up to date
        self.length = 0                          # items in the history of the last request
        self.final_text: str | None = None       # the stop's answer, repeated to a client that asks again
        self.finished = False
        self.last = time.monotonic()
        self.stopped: RunStop | None = None
        self.pending_stop: RunStop | None = None
        self._tools_raw: Any = None              # the last request's tools as sent, and as read
        self._tools: list[ToolSpec] = []
        self._tools_json = "[]"

    def tools(self, kind: str, request: dict[str, Any]) -> list[ToolSpec]:
        """The request's tools (read again only when they change)."""
        raw = request.get("tools")
        if raw != self._tools_raw or self._tools_raw is None:
            self._tools_raw = raw
            self._tools = tools_of(kind, request)
            self._tools_json = canonical_json([t.model_dump(mode="json") for t in self._tools])
        return self._tools

    def _tools_json_of(self, tools: list[ToolSpec]) -> str:
        if tools is self._tools:
            return self._tools_json
        return canonical_json([t.model_dump(mode="json") for t in tools])

    def _live(self) -> RunSession:
        assert self.session is not None, "a finished conversation records nothing more"
        return self.session

    def _redact(self, m: Message) -> Message:
        if not _MAYBE_SECRET.search(m.content) and not any(_MAYBE_SECRET.search(json.dumps(c.arguments))
                                                           for c in m.tool_calls):
            return m
        return Message.model_validate(self.redactor.redact(m.model_dump(mode="json")))

    def _text(self, text: str) -> str:
        return self.redactor.text(text) if _MAYBE_SECRET.search(text) else text

    async def before(self, kind: str, items: list[Any], tools: list[ToolSpec], model: str, *,
                     delta: bool = False) -> Decided:
        """Read what is new in the history (``items``, as sent) and ask the guards about this
        request (``delta``: the request carries only what is new, after a previous response)."""
        self.last = time.monotonic()
        if self.stopped is not None:
            return Decided("stop", stop=self.stopped, conversation=self)
        session = self._live()
        if tools:
            session.specs = tools
        extends = (len(items) >= self.length or delta) and bool(self.recorded)
        fresh = items if delta or not extends else items[self.length:]
        self.length = self.length + len(items) if delta else len(items)
        new = messages_from(kind, fresh)
        first = len(self.recorded) if extends else 0
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
        if extends:
            self.recorded = [*self.recorded, *redacted]
            self.hasher.extend(redacted)
        else:
            self.recorded = redacted
            self.hasher.reset(redacted)
        if stop is None and tools:
            stop = self._no_more_calls()
        if stop is None:
            session.state.step += 1
            request = ModelRequest.model_construct(messages=self.recorded, tools=tools, step=session.state.step)
            verdict = await session.ask("before_model", request)
            if verdict is not None:
                stop = session.stop(verdict)
        if stop is not None:
            return Decided("stop", stop=stop, conversation=self)
        return Decided("forward", hints=session.take_hints(), conversation=self)

    def _no_more_calls(self) -> RunStop | None:
        """The agent, not the gateway, runs the tools: a request that offers tools once the
        tool-call budget is spent would let the model ask for one more, so it is stopped."""
        session = self._live()
        made = session.state.tool_calls
        for guard in session.chain.guards:
            limit = guard.budget.max_tool_calls if isinstance(guard, BudgetGuard) else None
            if limit is not None and made >= limit:
                verdict = Intervention("stop", "budget.tool_calls",
                                  f"tool calls budget exhausted: {made} made, limit {limit}; no further call is "
                                  "offered to the model", {"dimension": "tool_calls", "projected": made + 1,
                                                          "limit": limit},
                                  status=TerminalStatus.BUDGET_EXCEEDED, finish_up=True)
                session.record_trip(Trip(guard, verdict))
                session.stopped_by = guard
                return session.stop(verdict)
        return None

    async def _tool(self, call: Any, content: str) -> RunStop | None:
        session = self._live()
        s = session.state
        arguments = call.arguments
        if arguments and _MAYBE_SECRET.search(json.dumps(arguments, ensure_ascii=False)):
            arguments = self.redactor.redact(arguments)
        session.add(ToolCallEvent(step=s.step, call_id=call.id, tool=call.name, arguments=arguments))
        verdict = await session.ask("before_tool", call)
        if verdict is not None and verdict.action != "block":
            session.add(ToolResultEvent(step=s.step, call_id=call.id, tool=call.name, ok=False,
                                        error=f"ran, but the guards would have stopped it: {verdict.message}",
                                        error_type="guard_stopped", source="guard"))
            return session.stop(verdict)
        failed = looks_failed(content)
        text = self._text(content[:65536])
        error_type = "tool_error" if failed else None
        event = session.add(ToolResultEvent(step=s.step, call_id=call.id, tool=call.name, ok=not failed,
                                            data=None if failed else text, error=text if failed else None,
                                            error_type=error_type, source="tool",
                                            outcome=outcome_of("tool", error_type)))
        s.tool_calls += 1
        after = await session.ask("after_tool", call, event)
        if after is not None and after.action != "block":
            return session.stop(after)
        return None

    def record_request(self, tools: list[ToolSpec], model: str, params: dict[str, Any], hints: list[str]) -> None:
        session = self._live()
        extra = [Message(role="system", content="\n".join(hints))] if hints else []
        messages = [*self.recorded, *extra] if extra else self.recorded
        request = ModelRequest.model_construct(messages=messages, tools=tools, step=session.state.step)
        session.record_request(request, model=model, params=params,
                               request_hash=self.hasher.hexdigest(extra, self._tools_json_of(tools)))

    def record_response(self, decision: Decision, usage: Usage, latency_ms: float) -> None:
        session = self._live()
        for call in decision.tool_calls:      # a stateful client (previous_response_id) sends back only the outputs
            self.calls.setdefault(call.id, call)
        if decision.text:
            decision = decision.model_copy(update={"text": self._text(decision.text)})
        session.record_response(ModelResponse(decision=decision, usage=usage), latency_ms=latency_ms)
        if not decision.tool_calls:
            self.finish(TerminalStatus.COMPLETED, decision.text, "final answer (no tool calls)")

    def record_finish_up(self, decision: Decision, usage: Usage, latency_ms: float) -> None:
        from ..messages import DecisionKind

        decision = decision.model_copy(update={"text": self.redactor.text(decision.text), "kind": DecisionKind.FINAL})
        self._live().record_response(ModelResponse(decision=decision, usage=usage), latency_ms=latency_ms)

    def finish_stopped(self, stop: RunStop, text: str) -> None:
        self.stopped = stop
        self.final_text = text
        reply = text
        session = self._live()
        if stop.verdict is not None and session.stopped_by is not None:    # the budget's done / not-done ledger
            reply = session.stopped_by.on_stop(session.ctx(), stop.verdict, reply)
        self.finish(stop.status, self.redactor.text(reply), stop.reason)

    def finish(self, status: TerminalStatus, reply: str, reason: str, *, error_kind: str | None = None) -> None:
        """End the run (its writes are queued) and let go of what only a live run needs."""
        if self.finished or self.session is None:
            return
        self.session.finish(status, reply, reason, error_kind=error_kind)
        self.finished = True
        self.session = None
        self.recorded, self.calls, self.seen_calls, self.used_ids = [], {}, set(), set()
        self.hasher = RequestHasher()

    def abandon(self, reason: str) -> None:
        """The agent never came back for this conversation's answer: not its doing, not a completion."""
        self.finish(TerminalStatus.ERROR, "", f"abandoned: {reason}", error_kind=ABANDONED)

    def flush(self) -> None:
        """Queue the events recorded since the last flush (one chunk)."""
        if self.session is not None:
            self.session.flush()


class Conversations:
    """Every conversation the gateway has seen (the newest MAX_CONVERSATIONS)."""

    def __init__(self, *, guards: Callable[[], Sequence[Any]], label: str, store: Any, upstream: str):
        self.make_guards = guards
        self.label = label
        self.upstream = upstream
        self.writer = StoreWriter(store, retry_locked_s=RETRY_LOCKED_S) if store is not None else None
        self.store = DeferredStore(self.writer) if self.writer is not None else None
        self.open: OrderedDict[str, Conversation] = OrderedDict()
        self.by_response: OrderedDict[str, str] = OrderedDict()     # Responses API id -> conversation key

    async def get(self, key: str | None, kind: str, items: list[Any], model: str,
                  previous: str | None = None) -> Conversation:
        if key is not None:
            key = check_id(key, "X-Tether-Run")
        elif previous is not None and previous in self.by_response:
            key = self.by_response[previous]
        else:
            key = opening_key(kind, items)
        conv = self.open.get(key)
        if conv is not None:
            self.open.move_to_end(key)
            if not conv.finished or (conv.stopped is not None and len(items) <= conv.length):
                return conv          # going on, or asking a stopped conversation again
        n = 1 if conv is None else conv.n + 1
        run_id = key if n == 1 else f"{key}-{n}"
        while self.writer is not None and await self.writer.call(self.writer.store.get_run, run_id) is not None:
            n += 1
            run_id = f"{key}-{n}"
        again = self.open.get(key)
        if again is not conv and again is not None and not again.finished:
            return again             # the same new conversation's other request made it meanwhile
        meta = {"gateway": "llm", "upstream": self.upstream, "conversation": key}
        if conv is not None:
            meta["continues"] = conv.run_id
        conv = Conversation(run_id, key, guards=self.make_guards(), label=self.label, store=self.store, model=model,
                            meta=meta, n=n)
        self.open[key] = conv
        self.open.move_to_end(key)
        if len(self.open) > MAX_CONVERSATIONS:
            _, old = self.open.popitem(last=False)
            old.abandon(f"the gateway stopped following this conversation (it follows the newest "
                        f"{MAX_CONVERSATIONS})")
        return conv

    def remember_response(self, response_id: str, conv: Conversation) -> None:
        if self.open.get(conv.key) is conv:
            self.by_response[response_id] = conv.key
            if len(self.by_response) > MAX_CONVERSATIONS:
                self.by_response.popitem(last=False)

    async def commit(self, conv: Conversation | None = None) -> None:
        """Write what ``conv`` recorded and wait until it is in the store."""
        if conv is not None:
            conv.flush()
        if self.writer is not None:
            await self.writer.commit()

    def close(self, reason: str) -> None:
        """End every conversation still waiting for its agent, then write everything out."""
        for conv in self.open.values():
            conv.abandon(reason)
        if self.writer is not None:
            self.writer.close(timeout=None)      # exiting: what is queued waits for a locked store (RETRY_LOCKED_S)
            if self.writer.failures:
                print(f"tether gateway: {self.writer.failures} write(s) to the store failed; see above",
                      file=sys.stderr)
