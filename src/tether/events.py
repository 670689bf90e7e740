"""The event spine: everything that happens in a run, in one ordered stream.

Guards read events, the store persists them, scorers compute over them,
replay and diffs compare them, the cassette and the checkpoint are built
from them. A trace file is JSON Lines: one event per line, UTF-8 as is, the
first line a ``run_started`` event carrying the format ``version``.

Format version 2 makes the record complete (docs/events.md is the reference,
``tether/schemas/trace.schema.json`` the schema):

* ``run_started`` carries the tool specs offered (once per run) and the run's
  kind (run / eval / replay / cassette / import / mcp) and eval id;
* ``model_request`` carries what the model was sent: the messages as a delta
  against the previous request of the same ``role`` (``keep`` messages kept,
  then ``messages`` appended), the tool names and the request parameters;
* ``model_decision`` carries what came back: decision, usage (tokens, cost),
  latency;
* ``role`` tells the agent's own requests from the judge's, the simulated
  user's and a drift check's, so their cost is kept apart;
* ``run_finished`` carries an ``error_kind`` (infrastructure, harness,
  misuse, aborted) when the run ended in ``error``.

Format version 3 says how each tool call ended, on its result: ``outcome``
(:class:`Outcome`: executed, mocked, intercepted, injected, failed, blocked,
held, refused, ledger), the one vocabulary results, guards, ``guard-check``,
diff and the report read. Older results carry only ``source``; it is mapped
to the outcome on read (:func:`outcome_of`), and such an event is written
back exactly as it was stored (its digest does not change).

Version 1 traces (no messages, no specs) still load.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Iterable, Iterator, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, model_serializer, model_validator

from ._vocab import Outcome, outcome_of, trip_name
from .errors import CaseFileError, FileLocation
from .messages import DecisionKind, Message, ToolCallRequest, ToolSpec, Usage, canonical_json
from .status import TerminalStatus

TRACE_VERSION = 3


RequestRole = Literal["agent", "judge", "user", "drift", "review"]
RunKind = Literal["run", "eval", "replay", "cassette", "import", "mcp", "plan", "gateway"]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int = 0          # position in the stream, set by the recorder
    at_ms: float = 0.0    # milliseconds since the run started (injectable clock)


class RunStarted(_Event):
    type: Literal["run_started"] = "run_started"
    version: int = TRACE_VERSION
    run_id: str
    model: str
    case_id: str | None = None
    trial: int = 0
    tools: list[str] = Field(default_factory=list)
    guards: str = "off"
    meta: dict[str, Any] = Field(default_factory=dict)
    kind: RunKind = "run"
    eval_id: str | None = None
    tool_specs: list[ToolSpec] = Field(default_factory=list)   # what the model is offered, once per run


class UserMessage(_Event):
    type: Literal["user_message"] = "user_message"
    content: str
    source: Literal["input", "history", "simulator"] = "input"


class AgentMessage(_Event):
    """Text the agent said to the user (a question, or a turn from the history)."""

    type: Literal["agent_message"] = "agent_message"
    content: str
    kind: Literal["question", "final", "text"] = "text"
    source: Literal["model", "history"] = "model"
    step: int | None = None


class ModelRequestEvent(_Event):
    """What the model was sent. The full message list is the previous request's
    (same ``role``) first ``keep`` messages followed by ``messages``
    (:meth:`Trajectory.request_messages` rebuilds it)."""

    type: Literal["model_request"] = "model_request"
    step: int
    message_count: int
    tools: list[str] = Field(default_factory=list)
    request_hash: str = ""
    role: RequestRole = "agent"
    model: str = ""
    keep: int = 0
    messages: list[Message] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)


class ModelDecisionEvent(_Event):
    type: Literal["model_decision"] = "model_decision"
    step: int
    kind: DecisionKind
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    text: str = ""
    usage: Usage = Field(default_factory=Usage)
    role: RequestRole = "agent"
    latency_ms: float = 0.0
    finish_reason: str | None = None
    truncated: bool = False
    queued_ms: float = 0.0
    attempts: list[dict[str, Any]] = Field(default_factory=list)


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    step: int
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @property
    def signature(self) -> str:
        """Tool name plus canonical arguments: what 'identical call' means."""
        return f"{self.tool}:{canonical_json(self.arguments)}"


class ToolResultEvent(_Event):
    type: Literal["tool_result"] = "tool_result"
    step: int
    call_id: str
    tool: str
    ok: bool
    data: Any = None
    error: str | None = None
    error_type: str | None = None
    # Who answered, free-form: a case mock or intercept, the scenario world, a
    # real tool, the runner itself (unknown tool, bad arguments), the ledger...
    source: str = "tool"
    duration_ms: float = 0.0
    # How the call ended (format 3); an older event's is read from its source.
    outcome: Outcome = Outcome.EXECUTED
    _inferred: bool = PrivateAttr(default=False)

    @model_validator(mode="wrap")
    @classmethod
    def _read_outcome(cls, data: Any, handler: Any) -> "ToolResultEvent":
        if isinstance(data, dict) and data.get("outcome") is None:
            event = handler({**data, "outcome": outcome_of(str(data.get("source", "tool")), data.get("error_type"))})
            event._inferred = "outcome" not in data
            return event
        return handler(data)

    @model_serializer(mode="wrap")
    def _write(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        if self._inferred:              # stored before format 3: written back as it was
            out.pop("outcome", None)
        return out

    @property
    def executed(self) -> bool:
        """The call reached the tools (see :class:`Outcome`)."""
        return self.outcome.executed

    @property
    def took_effect(self) -> bool:
        """The call's effect is there: it reached the tools, or the side-effect ledger
        answers that an earlier attempt of it did (evidence, a 'done' item)."""
        return self.outcome.executed or self.outcome is Outcome.LEDGER


class GuardTripped(_Event):
    type: Literal["guard_tripped"] = "guard_tripped"
    step: int
    guard: str
    rule: str
    verdict: Literal["hint", "block", "stop", "escalate"]
    message: str
    numbers: dict[str, float | int | str] = Field(default_factory=dict)

    @property
    def name(self) -> str:
        """``guard.rule`` as people read it: ``loop.identical``, ``budget.tool_calls``
        (a rule already named after its guard is not prefixed twice)."""
        return trip_name(self.guard, self.rule)


class SideEffectEvent(_Event):
    """The side-effect ledger at work: an intent written before a side-effecting
    call, its outcome after, or a call answered from the ledger instead of re-run."""

    type: Literal["side_effect"] = "side_effect"
    step: int
    call_id: str
    tool: str
    key: str
    status: Literal["intent", "done", "failed", "unknown", "replayed", "resolved", "held"]
    detail: str = ""


class ApprovalEvent(_Event):
    type: Literal["approval"] = "approval"
    step: int
    call_id: str
    tool: str
    approval_id: str
    action: Literal["requested", "approved", "rejected", "modified", "escalated", "terminated", "expired",
                    "consumed", "pending"]
    by: str = ""
    reason: str = ""
    digest: str = ""


class RunResumed(_Event):
    type: Literal["run_resumed"] = "run_resumed"
    checkpoint: int
    step: int
    phase: str
    dropped_events: int = 0


class RunFinished(_Event):
    type: Literal["run_finished"] = "run_finished"
    status: TerminalStatus
    reply: str = ""
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)     # the agent's own requests only
    error: str | None = None
    reason: str = ""
    error_kind: Literal["infrastructure", "model", "harness", "misuse", "aborted"] | None = None


Event = Annotated[
    Union[
        RunStarted,
        UserMessage,
        AgentMessage,
        ModelRequestEvent,
        ModelDecisionEvent,
        ToolCallEvent,
        ToolResultEvent,
        GuardTripped,
        SideEffectEvent,
        ApprovalEvent,
        RunResumed,
        RunFinished,
    ],
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


JUDGE_ROLES = ("judge", "review")


def _judge_record(e: "Event") -> bool:
    return isinstance(e, (ModelRequestEvent, ModelDecisionEvent)) and e.role in JUDGE_ROLES


_PLAIN_SEQ: dict[type, bool] = {}


def _plain_seq(cls: type) -> bool:
    """Whether ``seq`` of a ``cls`` event is a plain stored field (no validation on
    assignment, not frozen): then :meth:`Trajectory.append` stores it directly."""
    plain = _PLAIN_SEQ.get(cls)
    if plain is None:
        config = getattr(cls, "model_config", None) or {}
        field_info = getattr(cls, "model_fields", {}).get("seq")
        plain = (isinstance(config, dict) and not config.get("validate_assignment") and not config.get("frozen")
                 and field_info is not None and not field_info.frozen
                 and getattr(cls, "__setattr__", None) is BaseModel.__setattr__)
        if len(_PLAIN_SEQ) < 256:
            _PLAIN_SEQ[cls] = plain
    return plain


class Trajectory:
    """An ordered event stream with the helpers scorers and guards need."""

    def __init__(self, events: Iterable[Event] = ()):
        self.events: list[Event] = list(events)

    # -- building ---------------------------------------------------------
    def append(self, event: Event) -> Event:
        seq = len(self.events)
        if _plain_seq(type(event)):
            # what pydantic's __setattr__ does for a field that is neither validated on
            # assignment nor frozen, without its dispatch (a third of an append's cost;
            # a run appends several events per tool call)
            event.__dict__["seq"] = seq
            event.__pydantic_fields_set__.add("seq")
        else:
            event.seq = seq
        self.events.append(event)
        return event

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    # -- views ------------------------------------------------------------
    def of_type(self, cls: type) -> list:
        return [e for e in self.events if isinstance(e, cls)]

    @property
    def started(self) -> RunStarted | None:
        found = self.of_type(RunStarted)
        return found[0] if found else None

    @property
    def finished(self) -> RunFinished | None:
        found = self.of_type(RunFinished)
        return found[-1] if found else None

    @property
    def status(self) -> TerminalStatus | None:
        return self.finished.status if self.finished else None

    @property
    def final_reply(self) -> str:
        return self.finished.reply if self.finished else ""

    def _paired(self) -> list[tuple[ToolCallEvent, ToolResultEvent | None]]:
        """Each call with its result: the first later result with the same call id
        (a call re-attempted after a pause reuses its id, so pairing is positional)."""
        pairs: list[tuple[ToolCallEvent, ToolResultEvent | None]] = []
        open_calls: dict[str, list[int]] = {}
        for event in self.events:
            if isinstance(event, ToolCallEvent):
                open_calls.setdefault(event.call_id, []).append(len(pairs))
                pairs.append((event, None))
            elif isinstance(event, ToolResultEvent) and open_calls.get(event.call_id):
                i = open_calls[event.call_id].pop(0)
                pairs[i] = (pairs[i][0], event)
        return pairs

    def calls_with_results(self, tool: str | Iterable[str] | None = None, *,
                           executed_only: bool = False) -> list[tuple[ToolCallEvent, ToolResultEvent | None]]:
        """Calls (optionally of ``tool``) with their results. ``executed_only``
        keeps the calls that reached the tools (:attr:`Outcome.executed`) and
        calls whose result is not recorded (a run cut off mid-call)."""
        names = _names(tool)
        return [(c, r) for c, r in self._paired()
                if (names is None or c.tool in names)
                and not (executed_only and r is not None and not r.executed)]

    def tool_calls(self, tool: str | Iterable[str] | None = None, *, executed_only: bool = False) -> list[ToolCallEvent]:
        """Calls the model made (see :meth:`calls_with_results` for ``executed_only``)."""
        return [c for c, _ in self.calls_with_results(tool, executed_only=executed_only)]

    def tool_results(self, tool: str | Iterable[str] | None = None) -> list[ToolResultEvent]:
        names = _names(tool)
        return [e for e in self.of_type(ToolResultEvent) if names is None or e.tool in names]

    def outcome_counts(self) -> dict[str, int]:
        """Tool calls by outcome (every outcome, zeros included; ``unfinished``: no result recorded)."""
        counts = {o.value: 0 for o in Outcome}
        counts["unfinished"] = 0
        for _, r in self._paired():
            counts[r.outcome.value if r is not None else "unfinished"] += 1
        return counts

    def truncated_decisions(self, role: str | None = "agent") -> list[ModelDecisionEvent]:
        """Decisions of ``role`` (None: all) whose reply was cut by the output token limit."""
        return [e for e in self.of_type(ModelDecisionEvent) if e.truncated and (role is None or e.role == role)]

    def tool_order(self) -> list[str]:
        return [c.tool for c in self.tool_calls()]

    def identical_call_counts(self, tool: str | Iterable[str] | None = None, *,
                              executed_only: bool = False) -> Counter[str]:
        """How often each exact call (tool + canonical arguments) was made."""
        return Counter(c.signature for c in self.tool_calls(tool, executed_only=executed_only))

    def max_identical_calls(self, tool: str | Iterable[str] | None = None, *, executed_only: bool = False) -> int:
        counts = self.identical_call_counts(tool, executed_only=executed_only)
        return max(counts.values(), default=0)

    def questions_to_user(self, include_history: bool = True) -> list[AgentMessage]:
        return [
            e for e in self.of_type(AgentMessage)
            if e.kind == "question" and (include_history or e.source != "history")
        ]

    def user_messages(self) -> list[UserMessage]:
        return self.of_type(UserMessage)

    def guard_trips(self, guard: str | None = None) -> list[GuardTripped]:
        return [e for e in self.of_type(GuardTripped) if guard is None or e.guard == guard]

    def usage(self, role: str | None = "agent") -> Usage:
        """Usage of the requests of ``role`` (``None``: every request)."""
        total = Usage()
        for d in self.of_type(ModelDecisionEvent):
            if role is None or d.role == role:
                total = total + d.usage
        return total

    def request_messages(self, request: ModelRequestEvent) -> list[Message]:
        """The full message list of a recorded request, rebuilt from the deltas."""
        previous: dict[str, list[Message]] = {}
        for e in self.events:
            if isinstance(e, ModelRequestEvent):
                full = previous.get(e.role, [])[:e.keep] + list(e.messages)
                if e is request:
                    return full
                previous[e.role] = full
        raise ValueError("that request is not in this trajectory")

    def requests(self, role: str | None = "agent") -> list[tuple[ModelRequestEvent, list[Message]]]:
        """Every request of ``role`` with its full message list."""
        out: list[tuple[ModelRequestEvent, list[Message]]] = []
        previous: dict[str, list[Message]] = {}
        for e in self.events:
            if isinstance(e, ModelRequestEvent):
                full = previous.get(e.role, [])[:e.keep] + list(e.messages)
                previous[e.role] = full
                if role is None or e.role == role:
                    out.append((e, full))
        return out

    def after_finish(self) -> list[Event]:
        """Events after the first ``run_finished`` that are not judge records (the
        judge's requests and decisions ``tether score --judge`` appends). A run's
        own record ends with ``run_finished``: anything here was added later by
        someone else, and ``score``, ``diff`` and ``report`` refuse the run."""
        end = next((i for i, e in enumerate(self.events) if isinstance(e, RunFinished)), None)
        if end is None:
            return []
        return [e for e in self.events[end + 1:] if not _judge_record(e)]

    def digest(self) -> str:
        """sha256 of the canonical events of the run: every event but the judge
        records appended after ``run_finished`` (re-judging does not change it;
        any other event, wherever it is, does): what results and exports pin a run by."""
        end = next((i for i, e in enumerate(self.events) if isinstance(e, RunFinished)), len(self.events) - 1)
        own = [*self.events[:end + 1], *self.after_finish()]
        return events_digest(e.model_dump(mode="json") for e in own)

    # -- files ------------------------------------------------------------
    def to_jsonl(self) -> str:
        return "".join(
            json.dumps(e.model_dump(mode="json"), ensure_ascii=False) + "\n" for e in self.events
        )

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        if path.exists() and not path.is_file():      # a device or a pipe: write to it, never replace it
            with path.open("w", encoding="utf-8") as fh:
                fh.write(self.to_jsonl())
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(self.to_jsonl(), encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def from_jsonl(cls, text: str, *, path: str = "<trace>") -> "Trajectory":
        """Events from JSON Lines; every problem with its line (reading stops after
        :data:`tether.inputs.MAX_PROBLEMS` of them: a file that is not a trace says so early)."""
        from .inputs import MAX_PROBLEMS, loads_json

        events: list[Event] = []
        problems: list[tuple[FileLocation, str]] = []
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            if len(problems) >= MAX_PROBLEMS:
                problems.append((FileLocation(path, lineno), f"stopped reading after {MAX_PROBLEMS} problems: "
                                                             "is this a trace (JSON Lines of tether events)?"))
                break
            try:
                raw = loads_json(line, path, line=lineno)
            except CaseFileError as exc:
                problems.extend(exc.problems)
                continue
            try:
                event = EVENT_ADAPTER.validate_python(raw)
            except Exception as exc:  # pydantic.ValidationError
                problems.append((FileLocation(path, lineno), _short_validation(exc)))
                continue
            if isinstance(event, RunStarted) and event.version > TRACE_VERSION:
                problems.append((FileLocation(path, lineno, field="version"),
                                 f"trace format version {event.version} is newer than this tether ({TRACE_VERSION})"))
            events.append(event)
        if problems:
            raise CaseFileError(problems)
        return cls(events)

    @classmethod
    def load(cls, path: str | Path) -> "Trajectory":
        """A trace file (bounded, UTF-8, errors naming the file: :func:`tether.inputs.read_text`)."""
        from .inputs import read_text

        return cls.from_jsonl(read_text(path, "trace file"), path=str(path))


def events_digest(events: Iterable[dict[str, Any]]) -> str:
    h = hashlib.sha256()
    for e in events:
        h.update(canonical_json(e).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def message_delta(previous: list[Message], current: list[Message]) -> tuple[int, list[Message]]:
    """(messages of ``previous`` kept as a prefix, messages appended after them)."""
    keep = 0
    for a, b in zip(previous, current):
        if a is not b and a != b:      # the same objects, request after request, in a growing conversation
            break
        keep += 1
    return keep, list(current[keep:])


def _names(tool: str | Iterable[str] | None) -> set[str] | None:
    if tool is None:
        return None
    if isinstance(tool, str):
        return {tool}
    return set(tool)


def _short_validation(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        parts = []
        for err in errors()[:3]:
            loc = ".".join(str(p) for p in err.get("loc", ()))
            parts.append(f"{loc}: {err.get('msg')}")
        return "; ".join(parts)
    return str(exc)
