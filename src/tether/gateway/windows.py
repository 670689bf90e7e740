"""Guard windows: the MCP gateway's runs.

A desktop client keeps one MCP server for hours, so one process cannot be one
run: guard state would pile up forever and a stop would last forever. The
gateway cuts the client's calls into *windows*: a burst of calls separated
from the next by at least ``idle`` seconds without a call. Each window is a
run of kind ``mcp`` in the store (``<base>-w<n>``) with fresh guards, so a
stop ends that window only; the client's next call after an idle gap opens a
new one.

Tool calls of a window are driven through the window's
:class:`~tether.runtime.RunSession` pieces (record, ``before_tool``, the
upstream call, record, ``after_tool``) rather than ``RunSession.tool``, which
runs calls one at a time: here the upstream call itself runs outside any lock,
so concurrent calls reach the server concurrently.

The record never holds up a message: a window's writes are queued for the
store thread (:class:`~._writer.StoreWriter`) and the call's answer goes back
at once. A store locked by another process (a long ``tether eval`` commit, a
backup, a slow disk) delays when the events land, not the calls; queued writes
are written in order, tried again while the store is locked, and written out
before the gateway exits (client gone, SIGTERM, Ctrl-C, HTTP shutdown).
What is queued when the gateway is killed outright (SIGKILL, power loss) is lost.

A window that ends without a stop (an idle gap, the client gone, the gateway
shutting down) ends ``ended``: the gateway sees tool calls, never the agent's
final answer, so it cannot say the task was completed (``completed`` would count
as a success in ``tether stats``; ``ended`` never does).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import RunStop
from ..events import ToolCallEvent, ToolResultEvent
from ..messages import ToolCallRequest, ToolSpec
from ..runtime import RunConfig, RunSession
from ..status import TerminalStatus
from ..tools import ToolSet
from ._writer import RETRY_LOCKED_S, DeferredStore, StoreWriter

# What the store keeps of one tool result: a result bigger than this is kept as
# its head plus its size and digest (the digest keeps the loop guard's "same
# result?" exact).
RECORD_LIMIT = 64 * 1024

STOP_TEXT = ("tether stopped this window of calls: {reason}. Do not call tools again now: tell the user "
             "what was done, what was not, and why. Calls are accepted again after {idle} without calls.")

# Writes queued and not yet in the store (a store locked for long): past this many a call
# waits for the store before it answers, so memory stays bounded.
MAX_BACKLOG = 10_000
LEASE_TTL_S = 3600.0


@dataclass
class CallAnswer:
    """What the gateway answers one ``tools/call`` with."""

    result: dict[str, Any] | None      # the upstream result (to pass on), or None
    error_text: str | None = None      # a tool error the gateway writes itself (block, stop)
    hints: Sequence[str] = ()


def bounded(text: str) -> str:
    if len(text) <= RECORD_LIMIT:
        return text
    digest = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=12).hexdigest()
    return f"{text[:RECORD_LIMIT]}… [tether kept the first {RECORD_LIMIT} of {len(text)} characters; blake2b {digest}]"


def result_fields(result: dict[str, Any]) -> tuple[bool, Any, str | None]:
    """(ok, data, error) of an MCP ``CallToolResult`` as tether records it."""
    content = result.get("content") if isinstance(result.get("content"), list) else []
    text = "\n".join(c.get("text", "") for c in content
                     if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str))
    others = [c.get("type") for c in content if isinstance(c, dict) and c.get("type") != "text"]
    if others:
        text += ("\n" if text else "") + " ".join(f"[{t}]" for t in others)
    if result.get("isError"):
        return False, None, bounded(text or "tool error")
    structured = result.get("structuredContent")
    if isinstance(structured, dict) and len(text) <= RECORD_LIMIT:     # a big result: its text says it all
        from ..messages import canonical_json

        dumped = canonical_json(structured)
        return True, structured if len(dumped) <= RECORD_LIMIT else bounded(dumped), None
    return True, bounded(text), None


def _fmt_seconds(s: float) -> str:
    return f"{s:g} s" if s < 120 else f"{s / 60:g} min"


class GuardWindows:
    """The windows of one gateway: opens, closes and records them."""

    def __init__(self, *, guards: Callable[[], Sequence[Any]], guards_label: str, store: Any, idle: float,
                 base_id: str | None = None, meta: dict[str, Any] | None = None, model_name: str = "mcp-client",
                 clock: Callable[[], float] = time.monotonic):
        self.make_guards = guards
        self.guards_label = guards_label
        self.store = store
        self.writer = StoreWriter(store, retry_locked_s=RETRY_LOCKED_S) if store is not None else None
        self._deferred = DeferredStore(self.writer) if self.writer is not None else None
        self.idle = idle
        self.base_id = base_id or f"mcp-{uuid.uuid4().hex[:8]}"
        self.meta = dict(meta or {})
        self.model_name = model_name
        self.clock = clock
        self.specs: dict[str, ToolSpec] = {}
        self.session: RunSession | None = None
        self.stopped: RunStop | None = None
        self.last = 0.0
        self.count = 0            # windows opened
        self.calls = 0            # calls in the current window
        self.run_ids: list[str] = []
        self._renewed = 0.0
        if store is not None and base_id is not None:     # a prefix used before (a gateway restarted): go on after it
            self.count = _windows_used(store, self.base_id)

    # -- tools seen in tools/list -----------------------------------------------------
    def learn_tools(self, tools: list[dict[str, Any]]) -> None:
        for t in tools:
            annotations = t.get("annotations") or {}
            side_effect = annotations.get("readOnlyHint") is False or bool(annotations.get("destructiveHint"))
            schema = t.get("inputSchema") if isinstance(t.get("inputSchema"), dict) else {"type": "object"}
            self.specs[t["name"]] = ToolSpec(name=t["name"], description=str(t.get("description") or ""),
                                             parameters=schema, side_effect=side_effect)

    # -- windows ----------------------------------------------------------------------
    def _window(self) -> RunSession:
        now = self.clock()
        if self.session is not None and now - self.last >= self.idle:
            self.close(f"idle for {now - self.last:.0f} s after {self.calls} call(s)")
        self.last = now
        if self.session is None:
            self.count += 1
            self.calls = 0
            self.stopped = None
            run_id = f"{self.base_id}-w{self.count}"
            config = RunConfig(guards=tuple(self.make_guards()), guards_label=self.guards_label,
                               store=self._deferred, max_steps=10**9, kind="mcp", checkpoints=False,
                               meta={**self.meta, "window": self.count, "idle_s": self.idle})
            self.session = RunSession.start(model_name=self.model_name, tools=ToolSet([]), config=config,
                                            run_id=run_id)
            self.session.specs = list(self.specs.values())
            self.run_ids.append(run_id)
            self._renewed = now - LEASE_TTL_S      # the first flush renews the lease for LEASE_TTL_S
        return self.session

    def close(self, reason: str) -> None:
        """Finish the current window (idle gap, client gone, gateway shutting down): ``ended``,
        not ``completed``: no final answer passes through the gateway. Its writes are queued."""
        session, self.session = self.session, None
        if session is None or session.finished is not None:
            return
        session.finish(TerminalStatus.ENDED, "", reason)

    async def settle(self) -> None:
        """Wait until everything queued so far is in the store."""
        if self.writer is not None:
            await self.writer.commit()

    def shutdown(self, reason: str) -> None:
        """Close the window and write out everything queued, however long the store stays
        locked (the process is exiting: nothing queued may be lost). Blocks."""
        self.close(reason)
        if self.writer is not None and self.writer.is_alive():
            self.writer.close(timeout=None)
            if self.writer.failures:
                import sys

                print(f"tether guard mcp: {self.writer.failures} write(s) to the store failed; see above",
                      file=sys.stderr, flush=True)

    # -- one call ---------------------------------------------------------------------
    async def call(self, name: str, arguments: dict[str, Any],
                   forward: Callable[[], Awaitable[dict[str, Any]]]) -> CallAnswer:
        """One ``tools/call`` through the window's guards. ``forward`` makes the
        upstream call and returns its result (it raises on infrastructure failure,
        which is recorded as such and re-raised)."""
        await self._bounded()
        session = self._window()
        if self.stopped is not None:
            return CallAnswer(None, STOP_TEXT.format(reason=self.stopped.reason, idle=_fmt_seconds(self.idle)))
        self.calls += 1
        session.specs = list(self.specs.values())
        call = ToolCallRequest(id=f"mcp_{self.calls}", name=name, arguments=arguments)
        session.add(ToolCallEvent(step=0, call_id=call.id, tool=name, arguments=arguments))
        verdict = await session.ask("before_tool", call)
        if verdict is not None:
            stopping = verdict.action != "block"
            error = f"not executed: {verdict.message}" if stopping else f"blocked by guard: {verdict.message}"
            session.add(ToolResultEvent(step=0, call_id=call.id, tool=name, ok=False, error=error,
                                        error_type="guard_stopped" if stopping else "guard_blocked", source="guard"))
            if stopping:
                return self._stop(session, session.stop(verdict))
            self._flush(session)
            return CallAnswer(None, error)
        started = time.perf_counter()
        try:
            result = await forward()
        except Exception as exc:
            session.add(ToolResultEvent(step=0, call_id=call.id, tool=name, ok=False, error=bounded(str(exc)),
                                        error_type="upstream_unavailable", source="runner",
                                        duration_ms=round((time.perf_counter() - started) * 1000, 3)))
            self._flush(session)
            raise
        if session.finished is not None:       # the window closed while the call ran (another call stopped it)
            return CallAnswer(result)
        ok, data, error = result_fields(result)
        event = session.add(ToolResultEvent(step=0, call_id=call.id, tool=name, ok=ok, data=data, error=error,
                                            error_type=None if ok else "tool_error", source="tool",
                                            duration_ms=round((time.perf_counter() - started) * 1000, 3)))
        session.state.tool_calls += 1
        after = await session.ask("after_tool", call, event)
        if after is not None and after.action != "block":
            out = self._stop(session, session.stop(after))
            return CallAnswer(result, hints=[out.error_text or ""])
        self._flush(session)
        return CallAnswer(result, hints=session.take_hints())

    def _stop(self, session: RunSession, stop: RunStop) -> CallAnswer:
        self.stopped = stop
        reply = stop.reply
        if stop.verdict is not None and session.stopped_by is not None:     # the budget's done / not-done ledger
            reply = session.stopped_by.on_stop(session.ctx(), stop.verdict, reply)
        session.finish(stop.status, reply, stop.reason)
        return CallAnswer(None, STOP_TEXT.format(reason=stop.reason, idle=_fmt_seconds(self.idle)))

    def _flush(self, session: RunSession) -> None:
        """Queue the call's events (the store thread writes them; nothing here waits)."""
        if self._deferred is None:
            return
        session.flush()
        now = self.clock()
        if now - self._renewed > LEASE_TTL_S / 4:
            self._renewed = now
            self._deferred.renew_lease(session.run_id, session.holder, LEASE_TTL_S)

    async def _bounded(self) -> None:
        """A store locked for long: past MAX_BACKLOG queued writes, wait for it (memory stays bounded)."""
        if self.writer is not None and self.writer.backlog() > MAX_BACKLOG:
            await self.writer.commit()


def _windows_used(store: Any, base: str) -> int:
    """How many windows ``base`` already has in the store (``base-w1`` .. ``base-wN`` exist):
    a gateway restarted with the same --run-id numbers its windows on from there, since a
    run is never overwritten. Windows are numbered in order, so a doubling then a halving
    search finds N in a few reads."""
    if store.get_run(f"{base}-w1") is None:
        return 0
    high = 2
    while store.get_run(f"{base}-w{high}") is not None:
        high *= 2
    low = high // 2                  # low exists, high does not
    while high - low > 1:
        mid = (low + high) // 2
        if store.get_run(f"{base}-w{mid}") is not None:
            low = mid
        else:
            high = mid
    return low
