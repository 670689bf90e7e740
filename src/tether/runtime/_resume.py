"""What a session does beyond recording: keep its lease alive while a tool runs,
and re-reach a recorded run by replay (a resumed framework agent).

:class:`Replaying` is mixed into :class:`~tether.runtime.session.RunSession`;
docs/durable.md says when a run resumes by replay and what it guarantees.
"""

from __future__ import annotations

import collections
import threading
from typing import Any

from ..errors import ResumeDiverged
from ..events import ModelDecisionEvent, ModelRequestEvent, RunResumed, ToolCallEvent, ToolResultEvent
from ..messages import Decision, ToolCallRequest, canonical_json
from ..models import ModelResponse
from ..tools import ToolResult


class LeaseHeartbeat:
    """Renews a run's lease from a thread while a tool runs: a tool may block the
    event loop (a synchronous tool) for longer than the lease lives. ``lost`` says
    that a renewal found the lease held by someone else (the session then stops
    before it writes anything)."""

    def __init__(self, store: Any, run_id: str, holder: str, ttl: float):
        self.store, self.run_id, self.holder, self.ttl = store, run_id, holder, ttl
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name=f"tether-lease-{run_id}")

    def _beat(self) -> None:
        ttl = self.ttl
        while not self._stop.wait(ttl / 3):
            try:
                if not self.store.renew_lease(self.run_id, self.holder, ttl):
                    self.lost = True
                    return
            except Exception:  # noqa: BLE001 - a busy store: the next renewal (or checkpoint) decides
                continue

    def __enter__(self) -> "LeaseHeartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class Replaying:
    """The replay half of a session (its attributes are set by RunSession.__init__)."""

    _replay: "collections.deque | None"
    _resumed: RunResumed | None
    _resumed_user: Any

    def begin_replay(self, events: list, resumed: RunResumed, user_state: Any = None) -> None:
        """Re-reach a recorded run: the agent runs again from the start; its model
        requests are answered with the recorded responses (:meth:`replayed_response`),
        its tool calls with the recorded results, and each event it makes is matched
        with the recorded one instead of being written again. When the record is
        used up the run goes live (``resumed`` is written there)."""
        self._replay = collections.deque(events)
        self._resumed, self._resumed_user = resumed, user_state
        if not self._replay:
            self._go_live()

    def replayed_response(self) -> ModelResponse | None:
        """While replaying: the agent's recorded response to the request just made
        (an adapter hands it to the framework instead of asking the model); None when live."""
        if self._replay is None:
            return None
        nxt = self._replay[0] if self._replay else None
        if isinstance(nxt, ModelDecisionEvent) and nxt.role == "agent":
            return ModelResponse(decision=Decision(kind=nxt.kind, tool_calls=list(nxt.tool_calls), text=nxt.text),
                                 usage=nxt.usage)
        self._go_live()
        return None

    def _replayed(self, event: Any) -> Any:
        """Match ``event`` with the next recorded one; the recorded event (kept as it was)."""
        replay = self._replay
        while replay and isinstance(replay[0], RunResumed):       # an earlier resume of the run
            self.trajectory.append(replay.popleft())
        if not replay:
            self._go_live()
            return None
        recorded = replay[0]
        same = recorded.type == event.type
        if same and isinstance(event, ToolCallEvent):
            same = (recorded.tool, recorded.arguments) == (event.tool, event.arguments)
        if not same:
            what = f"{event.type}" + (f" {event.tool}({canonical_json(event.arguments)})"
                                      if isinstance(event, ToolCallEvent) else "")
            raise ResumeDiverged(f"run {self.run_id}: resuming by replay, the agent did not repeat its record at "
                                 f"event {recorded.seq}: recorded {recorded.type}, now {what}; an agent resumed "
                                 "by replay must make the same requests and calls given the same answers")
        replay.popleft()
        self.trajectory.append(recorded)
        if not replay:
            self._go_live()
        return recorded

    def _replayed_result(self, call: ToolCallRequest) -> ToolResult | None:
        """The recorded result of ``call`` (gate events before it re-reached as recorded);
        None when the record has none to give (the run goes live for this call)."""
        replay = self._replay
        while replay and not (isinstance(replay[0], ToolResultEvent) and replay[0].call_id == call.id):
            if isinstance(replay[0], (ToolCallEvent, ModelDecisionEvent, ModelRequestEvent)):
                break
            self.trajectory.append(replay.popleft())
        if replay and isinstance(replay[0], ToolResultEvent) and replay[0].call_id == call.id:
            r = replay[0]
            if r.error_type != "awaiting_approval":
                return ToolResult(ok=r.ok, data=r.data, error=r.error, error_type=r.error_type, source=r.source)
            # a call paused for a human: the record ends there; it is asked again, live
            while replay:
                self.trajectory.append(replay.popleft())
            self._go_live()
            self.add(ToolCallEvent(step=self.state.step, call_id=call.id, tool=call.name, arguments=call.arguments))
            return None
        while replay:
            self.trajectory.append(replay.popleft())
        self._go_live()
        return None

    def _go_live(self) -> None:
        if self._replay is None:
            return
        self._replay = None
        load_user = getattr(self.user, "load_state", None)
        if self._resumed_user is not None and callable(load_user):
            load_user(self._resumed_user)
        if self._resumed is not None:
            resumed, self._resumed = self._resumed, None
            resumed.step = self.state.step
            self.add(resumed)
