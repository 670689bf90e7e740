"""The cassette: one recorded run plus its environment, as readable, versioned JSON.

A cassette is the run's own record, the trace format v2 events
(:mod:`tether.events`: ``run_started`` with the tool specs, every model
request with what the model was sent, every decision, tool call and result,
the simulated user's answers, ``run_finished``), validated through
:data:`~tether.events.EVENT_ADAPTER`, plus what the record cannot say by
itself: the environment (time zone, fixed "now", seed), the run's settings
(system prompt, step cap, guard label, whether a simulated user answered),
the versions (system-prompt hash, code version, tool-schema hash, model id),
the canon it matches under, the redaction record and the expected ending.

There is one recorder, the runtime's: record a run by running it
(:func:`~tether.runtime.run_agent` or a :class:`~tether.runtime.RunSession`)
and take :meth:`Cassette.from_run`. The players read the events back.

Files are UTF-8 JSON written with ``ensure_ascii=False``, the header indented
and one event per line, so Chinese text stays readable and diffs stay small.
:meth:`Cassette.save` redacts (secrets removed, personal data pseudonymized)
and then scans its own output; it refuses to write anything that still looks
like a key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import CaseFileError, FileLocation, UsageError
from ..events import (
    AgentMessage,
    Event,
    ModelDecisionEvent,
    ModelRequestEvent,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
    UserMessage,
)
from ..messages import Message, ToolSpec
from ..tools import Tool, ToolResult, ToolSet
from .canonicalize import Canon
from .redact import RedactionRecord, RedactionRules, Redactor, scan_for_secrets

CASSETTE_FORMAT = "tether.cassette"
CASSETTE_VERSION = 2

# Results that never reached a tool: a guard or an approval answered, the runner
# refused bad input, the side-effect ledger answered from an earlier call, a
# replay answered a departing call (a recording of a failed replay).


class RecordMode(StrEnum):
    """VCR's record modes, for whole runs."""

    NONE = "none"                  # replay only: a missing cassette or an unmatched request fails
    ONCE = "once"                  # record when the file does not exist, else replay
    NEW_EPISODES = "new_episodes"  # replay what matches, send the rest live, write the new run
    ALL = "all"                    # always record, overwrite


def default_record_mode(environ: Mapping[str, str] = os.environ) -> RecordMode:
    """``none`` when the ``CI`` environment variable is set (and not 0/false), else ``once``."""
    ci = environ.get("CI", "").strip().lower()
    return RecordMode.NONE if ci and ci not in ("0", "false", "no") else RecordMode.ONCE


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Environment(_Strict):
    timezone: str | None = None
    now: str | None = None        # the fixed "now" (ISO 8601) the tools were given, if any
    seed: int | None = None


class RunSettings(_Strict):
    system_prompt: str | None = None
    max_steps: int = 30
    guards: str = "off"
    simulated_user: bool = False


class Versions(_Strict):
    prompt_hash: str = ""         # sha256 of the system prompt ("" when none)
    code_version: str = ""        # git describe of the project, else the package version
    tool_schema_hash: str = ""    # sha256 of the canonical tool specs
    model: str = ""               # the model id (its name)
    tether: str = ""


class Expected(_Strict):
    status: str
    reply: str = ""
    steps: int = 0
    reason: str = ""
    tools: list[str] = Field(default_factory=list)   # tool order of the recorded run


class HistoryTurn(_Strict):
    role: str
    content: str
    question: bool = False


class CassetteInput(_Strict):
    """The conversation the run started from (a view of its first events)."""

    message: str | None = None
    history: list[HistoryTurn] = Field(default_factory=list)


# -- what the players read: views over the events (not stored) ------------------------
@dataclass(frozen=True)
class RecordedRequest:
    """An agent request with its full message list and the decision that answered it."""

    request: ModelRequestEvent
    messages: list[Message]
    decision: ModelDecisionEvent

    @property
    def step(self) -> int:
        return self.request.step


@dataclass(frozen=True)
class RecordedCall:
    """A tool call and the result the tools gave (results from guards, gates or the runner are not here)."""

    call: ToolCallEvent
    result: ToolResultEvent

    @property
    def step(self) -> int:
        return self.call.step

    @property
    def tool(self) -> str:
        return self.call.tool

    @property
    def arguments(self) -> dict[str, Any]:
        return self.call.arguments

    def envelope(self) -> dict[str, Any]:
        """What the model saw (``source`` excluded), as compared by VerifyTools."""
        r = self.result
        return {"ok": r.ok, "data": r.data, "error": r.error, "error_type": r.error_type}

    def to_result(self) -> ToolResult:
        r = self.result
        return ToolResult(ok=r.ok, data=r.data, error=r.error, error_type=r.error_type, source=r.source)


@dataclass(frozen=True)
class RecordedReply:
    """A question the agent asked and the simulated user's answer (None: the user said nothing more)."""

    question: AgentMessage
    reply: str | None

    @property
    def step(self) -> int:
        return self.question.step or 0


class Cassette(_Strict):
    format: Literal["tether.cassette"] = CASSETTE_FORMAT
    version: int = CASSETTE_VERSION
    recorded_at: str = ""
    environment: Environment = Field(default_factory=Environment)
    settings: RunSettings = Field(default_factory=RunSettings)
    versions: Versions = Field(default_factory=Versions)
    canon: Canon = Field(default_factory=Canon)
    redaction: RedactionRecord | None = None     # None until written
    expected: Expected
    events: list[Event] = Field(default_factory=list)

    # -- building -----------------------------------------------------------------
    @classmethod
    def from_run(cls, run: Any, *, environment: Environment | None = None, config: Any = None,
                 canon: Canon | None = None, simulated_user: bool | None = None,
                 versions: Versions | None = None) -> "Cassette":
        """A recorded run as a cassette (not yet redacted: :meth:`save` does that).

        ``run`` is a :class:`~tether.runtime.RunResult` or a
        :class:`~tether.events.Trajectory` (a stored run: ``load_run(store, id)``).
        ``config`` is the run's :class:`~tether.runtime.RunConfig` (system
        prompt, step cap, guard label); without it they are read off the record.
        """
        from .record import code_version, local_timezone, prompt_hash, tether_version
        from .canonicalize import tool_schema_hash

        t: Trajectory = run.trajectory if hasattr(run, "trajectory") else run
        started, finished = t.started, t.finished
        if started is None or finished is None:
            raise UsageError("a cassette records a finished run: the record needs run_started and run_finished")
        prompt = config.system_prompt if config is not None else _system_prompt(t)
        steps = config.max_steps if config is not None else (
            finished.steps if finished.status == "step_limit" else max(30, finished.steps))
        if simulated_user is None:
            simulated_user = any(isinstance(e, UserMessage) and e.source == "simulator" for e in t) or \
                finished.reason == "the simulated user ended the conversation"
        return cls(
            recorded_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            environment=environment or Environment(timezone=local_timezone()),
            settings=RunSettings(system_prompt=prompt, max_steps=steps,
                                 guards=config.guards_label if config is not None else started.guards,
                                 simulated_user=simulated_user),
            versions=versions or Versions(prompt_hash=prompt_hash(prompt), code_version=code_version(),
                                          tool_schema_hash=tool_schema_hash(started.tool_specs), model=started.model,
                                          tether=tether_version()),
            canon=canon or Canon(),
            expected=Expected(status=str(finished.status), reply=finished.reply, steps=finished.steps,
                              reason=finished.reason, tools=t.tool_order()),
            events=list(t.events),
        )

    # -- views ----------------------------------------------------------------------
    @property
    def started(self) -> RunStarted | None:
        first = self.events[0] if self.events else None
        return first if isinstance(first, RunStarted) else None

    @property
    def run_id(self) -> str | None:
        """The recorded run's id (a replay runs under a new one)."""
        return self.started.run_id if self.started else None

    @property
    def case_id(self) -> str | None:
        return self.started.case_id if self.started else None

    @property
    def tools(self) -> list[ToolSpec]:
        """The tool specs the model was offered (from ``run_started``)."""
        return list(self.started.tool_specs) if self.started else []

    @property
    def input(self) -> CassetteInput:
        """The user message and the prior history the run started from."""
        message, history = None, []
        for e in self.events:
            if isinstance(e, UserMessage) and e.source == "input":
                message = e.content
            elif isinstance(e, UserMessage) and e.source == "history":
                history.append(HistoryTurn(role="user", content=e.content))
            elif isinstance(e, AgentMessage) and e.source == "history":
                history.append(HistoryTurn(role="agent", content=e.content, question=e.kind == "question"))
            elif isinstance(e, (ModelRequestEvent, RunFinished)):
                break
        return CassetteInput(message=message, history=history)

    def trajectory(self) -> Trajectory:
        """The recorded run's events."""
        return Trajectory(self.events)

    def toolset(self) -> ToolSet:
        """Tools with the recorded specs and no implementation, for pure replay."""
        return ToolSet(Tool(s.name, s.description, s.parameters, None, side_effect=s.side_effect) for s in self.tools)

    def recorded_requests(self) -> list[RecordedRequest]:
        """The agent's requests that got a decision, with their full message lists, in order."""
        full = {id(ev): msgs for ev, msgs in self.trajectory().requests(role="agent")}
        out: list[RecordedRequest] = []
        pending: ModelRequestEvent | None = None
        for e in self.events:
            if isinstance(e, ModelRequestEvent) and e.role == "agent":
                pending = e
            elif isinstance(e, ModelDecisionEvent) and e.role == "agent" and pending is not None:
                out.append(RecordedRequest(pending, full[id(pending)], e))
                pending = None
        return out

    def recorded_calls(self) -> list[RecordedCall]:
        """Tool calls with the results the tools gave, in order."""
        return [RecordedCall(c, r) for c, r in self.trajectory().calls_with_results()
                if r is not None and r.executed]

    def recorded_replies(self) -> list[RecordedReply]:
        """The agent's questions with the simulated user's answers, in order."""
        out: list[RecordedReply] = []
        open_q: AgentMessage | None = None
        for e in self.events:
            if isinstance(e, AgentMessage) and e.kind == "question" and e.source == "model":
                if open_q is not None:
                    out.append(RecordedReply(open_q, None))
                open_q = e
            elif isinstance(e, UserMessage) and e.source == "simulator" and open_q is not None:
                out.append(RecordedReply(open_q, e.content))
                open_q = None
            elif open_q is not None and (isinstance(e, RunFinished) or (
                    isinstance(e, ModelRequestEvent) and e.role == "agent")):
                out.append(RecordedReply(open_q, None))
                open_q = None
        if open_q is not None:
            out.append(RecordedReply(open_q, None))
        return out

    # -- files ------------------------------------------------------------------------
    def redacted(self, rules: RedactionRules | None = None) -> "Cassette":
        """A copy with secrets removed and personal data pseudonymized.

        The case id and the input are walked first (so a test's input redacts
        to the same pseudonyms on its own), then the environment, the
        settings, the expected ending and the events; pseudonyms already in
        the cassette are kept and numbering continues after them.
        """
        rules = rules or (self.redaction.rules() if self.redaction else RedactionRules())
        doc = self.model_dump(mode="json")
        redactor = Redactor(rules)
        redactor.learn({k: doc[k] for k in _REDACTED_SECTIONS})
        redactor.redact(self.case_id)
        redactor.redact(self.input.model_dump(mode="json"))
        for key in _REDACTED_SECTIONS:
            doc[key] = redactor.redact(doc[key], skip_keys=_NOT_REDACTED)
        doc["redaction"] = redactor.record().model_dump(mode="json")
        return Cassette.model_validate(doc)

    def to_json(self) -> str:
        """The file text: the header indented, then one event per line."""
        doc = self.model_dump(mode="json")
        events = doc.pop("events")
        head = json.dumps(doc, ensure_ascii=False, indent=2)
        lines = ",\n".join("    " + json.dumps(e, ensure_ascii=False) for e in events)
        return head[:-2] + ',\n  "events": [\n' + lines + ("\n" if lines else "") + "  ]\n}\n"

    def save(self, path: str | os.PathLike[str], *, rules: RedactionRules | None = None) -> Path:
        """Redact, check, write atomically. Returns the path written."""
        path = Path(path)
        text = self.redacted(rules).to_json()
        leaks = scan_for_secrets(text)
        if leaks:
            listing = "\n".join(f"  {f}" for f in leaks[:10])
            raise UsageError(f"refusing to write {path}: redaction left {len(leaks)} key-like string(s):\n{listing}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def from_json(cls, text: str, *, path: str = "<cassette>") -> "Cassette":
        from ..inputs import loads_json

        raw = loads_json(text, path)         # bounded: depth, NaN, numbers too long; errors name the file
        if not isinstance(raw, dict) or raw.get("format") != CASSETTE_FORMAT:
            raise CaseFileError([(FileLocation(path, field="format"), f"not a tether cassette (format must be {CASSETTE_FORMAT!r})")])
        version = raw.get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise CaseFileError([(FileLocation(path, field="version"), f"version must be a whole number, got "
                                                                       f"{type(version).__name__}")])
        if version > CASSETTE_VERSION:
            raise CaseFileError([(FileLocation(path, field="version"),
                                  f"cassette version {version} is newer than this tether ({CASSETTE_VERSION})")])
        if version == 1:
            raise CaseFileError([(FileLocation(path, field="version"),
                                  "cassette version 1 (interactions recorded beside the events) is no longer read; "
                                  "re-record it: pytest --tether-record-mode=all, or CassetteSession(path, mode='all')")])
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            problems = [(FileLocation(path, field=".".join(str(p) for p in e["loc"])), e["msg"]) for e in exc.errors()[:10]]
            raise CaseFileError(problems) from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Cassette":
        """Read a cassette file: a missing file, a folder or a device (/dev/zero), a file
        too large, text that is not UTF-8 or not a cassette: each a clear error naming it."""
        from ..inputs import read_text

        path = Path(path)
        return cls.from_json(read_text(path, "cassette"), path=str(path))


def _system_prompt(t: Trajectory) -> str | None:
    requests = t.requests(role="agent")
    if requests and requests[0][1] and requests[0][1][0].role == "system":
        return requests[0][1][0].content
    return None


_REDACTED_SECTIONS = ("environment", "settings", "expected", "events")
# Ids and hashes: they leak nothing, and the cassette's run id stays the stored run's.
_NOT_REDACTED = ("run_id", "call_id", "request_hash", "tools_hash", "tool_specs")


class CassetteNotFound(UsageError):
    """Replay-only mode and no cassette file."""

    def __init__(self, path: Path, mode: RecordMode):
        self.path = path
        self.mode = mode
        why = " (the default when the CI environment variable is set)" if mode == RecordMode.NONE else ""
        super().__init__(
            f"no cassette at {path}, and record mode {mode.value!r}{why} only replays: record it once "
            f"with --tether-record-mode=once (or mode='once'), check the file in, and run again")


__all__ = [
    "CASSETTE_FORMAT",
    "CASSETTE_VERSION",
    "Cassette",
    "CassetteInput",
    "CassetteNotFound",
    "Environment",
    "Expected",
    "HistoryTurn",
    "RecordMode",
    "RecordedCall",
    "RecordedReply",
    "RecordedRequest",
    "RunSettings",
    "Versions",
    "default_record_mode",
]
