"""Recording: a model wrapper and a ToolLayer that capture a run as it happens.

    recorder = Recorder(model, toolset, user=user)
    result = await run_agent(recorder.model, recorder.tools, message=..., user=recorder.user)
    cassette = recorder.cassette(result, message=...)
    cassette.save("cassettes/refund.json")         # redacted at write time

or in one call: ``result, cassette = await record_run(model, toolset, message=...)``.

The recording layer sits *outermost* around the tools, so it captures what the
agent saw, including results that case intercepts, mocks or fault layers made.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from datetime import datetime, timezone
from typing import Any, Sequence

from ..events import Trajectory
from ..messages import ToolSpec
from ..models import Model, ModelRequest, ModelResponse
from ..runtime import RunConfig, RunResult, Turn, run_agent
from ..runtime.runner import SimulatedUser
from ..tools import CallNext, ToolLayer, ToolResult, ToolSet
from .canonicalize import Canon, canonical_request, tool_schema_hash
from .cassette import (
    Cassette,
    CassetteInput,
    Environment,
    Expected,
    HistoryTurn,
    Interaction,
    ModelInteraction,
    RecordedResponse,
    RecordedResult,
    RunSettings,
    ToolInteraction,
    UserInteraction,
    Versions,
)


def outermost(toolset: ToolSet, layer: ToolLayer) -> ToolSet:
    """The same tools with ``layer`` in front of every existing layer."""
    return ToolSet(toolset.tools.values(), [layer, *toolset.layers])


def _plain(value: Any) -> Any:
    """A detached, JSON-only copy (later mutation by the agent cannot change the record)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def prompt_hash(system_prompt: str | None) -> str:
    return hashlib.sha256(system_prompt.encode("utf-8")).hexdigest()[:16] if system_prompt else ""


@functools.cache
def code_version(cwd: str | None = None) -> str:
    """``git:<describe>`` of the project being tested, else ``tether <version>``."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], capture_output=True, text=True,
                             timeout=5, cwd=cwd or os.getcwd(), check=False)
        if out.returncode == 0 and out.stdout.strip():
            return "git:" + out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    from .. import __version__
    return f"tether {__version__}"


def local_timezone() -> str:
    tz = datetime.now().astimezone().tzinfo
    return str(tz) if tz is not None else "UTC"


class Recorder:
    """Captures model, tool and simulated-user interactions of one run.

    ``recorder.model`` wraps the model, ``recorder.layer`` is the ToolLayer,
    ``recorder.tools`` the toolset with the layer outermost, ``recorder.user``
    the wrapped simulated user (or None). ``episode`` tags what is recorded.
    """

    def __init__(self, model: Model, tools: ToolSet, *, user: SimulatedUser | None = None,
                 canon: Canon = Canon(), episode: int = 1):
        self.canon = canon
        self.episode = episode
        self.step = 0
        self.interactions: list[Interaction] = []
        self.specs: list[ToolSpec] = tools.specs()
        self.model_name = getattr(model, "name", type(model).__name__)
        self.model = RecordingModel(model, self)
        self.layer = RecordingTools(self)
        self.tools = outermost(tools, self.layer)
        self.user = RecordingUser(user, self) if user is not None else None

    # -- capture ------------------------------------------------------------
    def add_model(self, request: ModelRequest, response: ModelResponse) -> None:
        doc = _plain(canonical_request(request))
        self.interactions.append(ModelInteraction(
            step=request.step, request=doc, request_hash=self.canon.hash(doc, "model_request"),
            response=RecordedResponse.model_validate(_plain(response.model_dump(mode="json", exclude_none=True))), episode=self.episode))

    def add_tool(self, name: str, arguments: dict[str, Any], result: ToolResult) -> None:
        self.interactions.append(ToolInteraction(
            step=self.step, tool=name, arguments=_plain(arguments),
            result=RecordedResult(ok=result.ok, data=_plain(result.data), error=result.error,
                                  error_type=result.error_type, source=result.source),
            episode=self.episode))

    def add_user(self, question: str, reply: str | None) -> None:
        self.interactions.append(UserInteraction(step=self.step, question=question, reply=reply, episode=self.episode))

    # -- the cassette ---------------------------------------------------------
    def cassette(self, result: RunResult, *, message: str | None = None, history: Sequence[Turn] = (),
                 config: RunConfig = RunConfig(), case_id: str | None = None,
                 environment: Environment | None = None, versions: Versions | None = None) -> Cassette:
        """The run as a cassette (not yet redacted: :meth:`Cassette.save` does that)."""
        t: Trajectory = result.trajectory
        finished = t.finished
        return Cassette(
            case_id=case_id,
            recorded_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            input=CassetteInput(message=message,
                                history=[HistoryTurn(role=h.role, content=h.content, question=h.question) for h in history]),
            environment=environment or Environment(timezone=local_timezone()),
            run=RunSettings(system_prompt=config.system_prompt, max_steps=config.max_steps,
                            guards=config.guards_label, simulated_user=self.user is not None),
            versions=versions or Versions(
                prompt_hash=prompt_hash(config.system_prompt), code_version=code_version(),
                tool_schema_hash=tool_schema_hash(self.specs), model=self.model_name, tether=_tether_version()),
            canon=self.canon,
            tools=list(self.specs),
            interactions=list(self.interactions),
            events=[e.model_dump(mode="json") for e in t.events],
            expected=Expected(status=str(result.status), reply=result.reply,
                              steps=finished.steps if finished else 0, reason=finished.reason if finished else "",
                              tools=t.tool_order()),
        )


def _tether_version() -> str:
    from .. import __version__
    return __version__


class RecordingModel:
    """Forwards to the real model and records request and response."""

    def __init__(self, inner: Model, recorder: Recorder):
        self.inner = inner
        self.recorder = recorder
        self.name = getattr(inner, "name", type(inner).__name__)

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.recorder.step = request.step
        response = await self.inner.request(request)
        self.recorder.add_model(request, response)
        return response


class RecordingTools:
    """A ToolLayer: lets the call through, records arguments and result."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder

    async def __call__(self, name: str, arguments: dict[str, Any], call_next: CallNext) -> ToolResult:
        result = await call_next(name, arguments)
        self.recorder.add_tool(name, arguments, result)
        return result


class RecordingUser:
    """Wraps a simulated user and records each question and reply."""

    def __init__(self, inner: SimulatedUser, recorder: Recorder):
        self.inner = inner
        self.recorder = recorder

    async def reply(self, question: str, trajectory: Trajectory) -> str | None:
        answer = await self.inner.reply(question, trajectory)
        self.recorder.add_user(question, answer)
        return answer


async def record_run(model: Model, tools: ToolSet, *, message: str | None = None, history: Sequence[Turn] = (),
                     user: SimulatedUser | None = None, config: RunConfig = RunConfig(), case_id: str | None = None,
                     environment: Environment | None = None, canon: Canon = Canon(), run_id: str | None = None,
                     trial: int = 0) -> tuple[RunResult, Cassette]:
    """Run the agent live through a :class:`Recorder`; returns the result and the (unredacted) cassette."""
    recorder = Recorder(model, tools, user=user, canon=canon)
    result = await run_agent(recorder.model, recorder.tools, message=message, history=history, user=recorder.user,
                             config=config, case_id=case_id, run_id=run_id, trial=trial)
    return result, recorder.cassette(result, message=message, history=history, config=config, case_id=case_id,
                                     environment=environment)


__all__ = ["Recorder", "RecordingModel", "RecordingTools", "RecordingUser", "code_version", "outermost",
           "prompt_hash", "record_run"]
