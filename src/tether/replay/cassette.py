"""The cassette: one recorded run as readable, versioned JSON (never pickle).

Seed 004 section 7: a recording keeps facts, not a summary. A cassette holds
the case id and input, the environment (time zone, fixed "now", seed), the
versions (system-prompt hash, code version, tool-schema hash, model id), the
canon it matches under, the redaction rules it was written with, the tool
specs, every interaction in the order it happened (model request + response,
tool call + result envelope, simulated-user reply), the trajectory events,
and the expected ending (terminal status and final reply).

Files are UTF-8 JSON written with ``ensure_ascii=False`` and indentation, so
Chinese text stays readable and diffs stay small. :meth:`Cassette.save`
redacts (secrets removed, personal data pseudonymized) and then scans its own
output; it refuses to write anything that still looks like a key.
"""

from __future__ import annotations

import json
import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import CaseFileError, FileLocation, UsageError
from ..events import EVENT_ADAPTER, Trajectory
from ..messages import Decision, ToolSpec, Usage
from ..tools import Tool, ToolResult, ToolSet
from .canonicalize import Canon
from .redact import RedactionRecord, RedactionRules, Redactor, scan_for_secrets

CASSETTE_FORMAT = "tether.cassette"
CASSETTE_VERSION = 1


class RecordMode(StrEnum):
    """VCR's record modes, for whole runs."""

    NONE = "none"                  # replay only: a missing cassette or an unmatched request fails
    ONCE = "once"                  # record when the file does not exist, else replay
    NEW_EPISODES = "new_episodes"  # replay what matches, record the rest and append it
    ALL = "all"                    # always record, overwrite


def default_record_mode(environ: Mapping[str, str] = os.environ) -> RecordMode:
    """``none`` when the ``CI`` environment variable is set (and not 0/false), else ``once``."""
    ci = environ.get("CI", "").strip().lower()
    return RecordMode.NONE if ci and ci not in ("0", "false", "no") else RecordMode.ONCE


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HistoryTurn(_Strict):
    role: str
    content: str
    question: bool = False


class CassetteInput(_Strict):
    message: str | None = None
    history: list[HistoryTurn] = Field(default_factory=list)


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


class RecordedResponse(_Strict):
    decision: Decision
    usage: Usage = Field(default_factory=Usage)


class ModelInteraction(_Strict):
    kind: Literal["model"] = "model"
    step: int
    request: dict[str, Any]       # canonical_request(): messages, tool names, tools_hash
    request_hash: str = ""        # under the cassette's canon, for reading; recomputed when matching
    response: RecordedResponse
    episode: int = 1


class RecordedResult(_Strict):
    ok: bool
    data: Any = None
    error: str | None = None
    error_type: str | None = None
    source: str = "tool"

    def envelope(self) -> dict[str, Any]:
        """What the model saw (``source`` excluded), as compared by VerifyTools."""
        return {"ok": self.ok, "data": self.data, "error": self.error, "error_type": self.error_type}

    def to_result(self) -> ToolResult:
        return ToolResult(ok=self.ok, data=self.data, error=self.error, error_type=self.error_type, source=self.source)


class ToolInteraction(_Strict):
    kind: Literal["tool"] = "tool"
    step: int
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: RecordedResult
    episode: int = 1


class UserInteraction(_Strict):
    kind: Literal["user"] = "user"
    step: int
    question: str
    reply: str | None             # None: the simulated user ended the conversation
    episode: int = 1


Interaction = Annotated[Union[ModelInteraction, ToolInteraction, UserInteraction], Field(discriminator="kind")]


class Expected(_Strict):
    status: str
    reply: str = ""
    steps: int = 0
    reason: str = ""
    tools: list[str] = Field(default_factory=list)   # tool order of the recorded run


class Cassette(_Strict):
    format: Literal["tether.cassette"] = CASSETTE_FORMAT
    version: int = CASSETTE_VERSION
    case_id: str | None = None
    recorded_at: str = ""
    input: CassetteInput = Field(default_factory=CassetteInput)
    environment: Environment = Field(default_factory=Environment)
    run: RunSettings = Field(default_factory=RunSettings)
    versions: Versions = Field(default_factory=Versions)
    canon: Canon = Field(default_factory=Canon)
    redaction: RedactionRecord | None = None     # None until written
    tools: list[ToolSpec] = Field(default_factory=list)
    interactions: list[Interaction] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)
    expected: Expected

    # -- views ------------------------------------------------------------
    def model_interactions(self) -> list[ModelInteraction]:
        return [i for i in self.interactions if isinstance(i, ModelInteraction)]

    def tool_interactions(self) -> list[ToolInteraction]:
        return [i for i in self.interactions if isinstance(i, ToolInteraction)]

    def user_interactions(self) -> list[UserInteraction]:
        return [i for i in self.interactions if isinstance(i, UserInteraction)]

    def trajectory(self) -> Trajectory:
        """The recorded run's events."""
        return Trajectory(EVENT_ADAPTER.validate_python(e) for e in self.events)

    def toolset(self) -> ToolSet:
        """Tools with the recorded specs and no implementation, for pure replay."""
        return ToolSet(Tool(s.name, s.description, s.parameters, None, side_effect=s.side_effect) for s in self.tools)

    @property
    def run_id(self) -> str | None:
        first = self.events[0] if self.events else {}
        return first.get("run_id") if first.get("type") == "run_started" else None

    # -- files --------------------------------------------------------------
    def redacted(self, rules: RedactionRules | None = None) -> "Cassette":
        """A copy with secrets removed and personal data pseudonymized.

        Walk order is fixed (case id, input, environment, run, interactions,
        events, expected) so numbering is reproducible; pseudonyms already in
        the cassette are kept and numbering continues after them.
        """
        rules = rules or (self.redaction.rules() if self.redaction else RedactionRules())
        doc = self.model_dump(mode="json")
        redactor = Redactor(rules)
        redactor.learn({k: doc[k] for k in _REDACTED_SECTIONS})
        for key in _REDACTED_SECTIONS:
            doc[key] = redactor.redact(doc[key], skip_keys=("request_hash", "tools_hash"))
        doc["redaction"] = redactor.record().model_dump(mode="json")
        out = Cassette.model_validate(doc)
        for inter in out.model_interactions():
            inter.request_hash = out.canon.hash(inter.request, "model_request")
        return out

    def to_json(self) -> str:
        """The file text. Each model request stores only the messages added since
        the previous request (``messages_before`` says how many it shares)."""
        doc = self.model_dump(mode="json")
        _share_prefixes(doc["interactions"])
        return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"

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
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CaseFileError([(FileLocation(path, exc.lineno, exc.colno), f"not JSON: {exc.msg}")]) from None
        if not isinstance(raw, dict) or raw.get("format") != CASSETTE_FORMAT:
            raise CaseFileError([(FileLocation(path, field="format"), f"not a tether cassette (format must be {CASSETTE_FORMAT!r})")])
        if isinstance(raw.get("version"), int) and raw["version"] > CASSETTE_VERSION:
            raise CaseFileError([(FileLocation(path, field="version"),
                                  f"cassette version {raw['version']} is newer than this tether ({CASSETTE_VERSION})")])
        try:
            _restore_prefixes(raw.get("interactions"))
        except ValueError as exc:
            raise CaseFileError([(FileLocation(path, field="interactions"), str(exc))]) from None
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            problems = [(FileLocation(path, field=".".join(str(p) for p in e["loc"])), e["msg"]) for e in exc.errors()[:10]]
            raise CaseFileError(problems) from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Cassette":
        path = Path(path)
        return cls.from_json(path.read_text(encoding="utf-8"), path=str(path))


def _share_prefixes(interactions: list[dict[str, Any]]) -> None:
    previous: list[Any] = []
    for inter in interactions:
        if inter.get("kind") != "model":
            continue
        messages = inter["request"]["messages"]
        k = 0
        while k < min(len(previous), len(messages)) and previous[k] == messages[k]:
            k += 1
        if k:
            inter["request"] = {"messages_before": k, **{**inter["request"], "messages": messages[k:]}}
        previous = messages


def _restore_prefixes(interactions: Any) -> None:
    previous: list[Any] = []
    for n, inter in enumerate(interactions if isinstance(interactions, list) else []):
        if not isinstance(inter, dict) or inter.get("kind") != "model" or not isinstance(inter.get("request"), dict):
            continue
        request = inter["request"]
        k = request.pop("messages_before", 0)
        if not isinstance(k, int) or k > len(previous):
            raise ValueError(f"interaction {n}: messages_before={k!r} but the previous request has "
                             f"{len(previous)} message(s)")
        request["messages"] = previous[:k] + list(request.get("messages", []))
        previous = request["messages"]


_REDACTED_SECTIONS = ("case_id", "input", "environment", "run", "interactions", "events", "expected")


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
    "ModelInteraction",
    "RecordMode",
    "RecordedResponse",
    "RecordedResult",
    "RunSettings",
    "ToolInteraction",
    "UserInteraction",
    "Versions",
    "default_record_mode",
]
