"""A cassette file under a record mode: record the run, or replay it.

    session = CassetteSession("cassettes/refund.json", mode="once")
    result = await session.run(model, tools, message="请帮我退掉订单 A100")

==============  ====================================================================
mode            what ``run`` does
==============  ====================================================================
``none``        replay; a missing file fails (:class:`CassetteNotFound`, naming it)
``once``        record when the file does not exist, else replay
``new_episodes``  replay what matches (loose), send the rest to the live model and
                tools, append those interactions to the file
``all``         record and overwrite
==============  ====================================================================

The default is ``none`` when the ``CI`` environment variable is set, else
``once``. In replay the model you pass is not asked (its recorded decisions
are served) unless ``live_model=True``; the tools you pass give the specs
(so a changed schema is caught) but are not called unless ``verify=True``.
The run uses the cassette's (redacted) input; the input you pass must redact
to the same text, else the test and its cassette have drifted apart.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import UsageError
from ..models import Model
from ..runtime import RunConfig, RunResult, Turn, run_agent
from ..runtime.runner import SimulatedUser
from ..tools import ToolSet
from .canonicalize import Canon
from .cassette import Cassette, CassetteNotFound, Environment, HistoryTurn, RecordMode, default_record_mode
from .mismatch import ModelRequestMismatch
from .player import KeyArgs, MatchMode, ReplayUser
from .record import Recorder, record_run
from .redact import RedactionRules, Redactor, redact_with
from .replayer import Replayer, Semantic


class CassetteSession:
    """One cassette file, one run, recorded or replayed according to ``mode``."""

    def __init__(self, path: str | os.PathLike[str], *, mode: RecordMode | str | None = None,
                 match: MatchMode = "strict", key_args: KeyArgs | None = None, canon: Canon | None = None,
                 redaction: RedactionRules | Mapping[str, Any] | None = None):
        self.path = Path(path)
        self.mode = RecordMode(mode) if mode else default_record_mode()
        self.match = match
        self.key_args = key_args
        self.canon = canon
        self.rules = redact_with(redaction)
        self.result: RunResult | None = None
        self.recorded = False                   # this session wrote the file
        self.replaced_models: list[Model] = []  # models whose decisions came from the cassette instead
        self._replayer: Replayer | None = None

    @property
    def will_record(self) -> bool:
        exists = self.path.exists()
        return self.mode == RecordMode.ALL or (self.mode in (RecordMode.ONCE, RecordMode.NEW_EPISODES) and not exists)

    def load(self) -> Cassette:
        if not self.path.exists():
            raise CassetteNotFound(self.path, self.mode)
        return Cassette.load(self.path)

    def replayer(self) -> Replayer:
        """A Replayer on the file, for wiring players by hand; checked at :meth:`assert_complete`."""
        if self._replayer is None:
            self._replayer = Replayer(self.load(), match=self.match, key_args=self.key_args, canon=self.canon)
        return self._replayer

    def assert_complete(self) -> None:
        """Strict replay: fail on departures and on recorded interactions never played."""
        if self._replayer is not None:
            self._replayer.assert_complete()

    async def run(self, model: Model, tools: ToolSet, *, message: str | None = None, history: Sequence[Turn] = (),
                  user: SimulatedUser | None = None, config: RunConfig = RunConfig(), case_id: str | None = None,
                  environment: Environment | None = None, verify: bool = False, live_model: bool = False,
                  semantic: Semantic = "auto") -> RunResult:
        if self.result is not None:
            raise UsageError(f"{self.path}: a cassette holds one run; use another cassette for a second run")
        if self.mode == RecordMode.NONE and not self.path.exists():
            raise CassetteNotFound(self.path, self.mode)
        if self.will_record:
            self.result, cassette = await record_run(model, tools, message=message, history=history, user=user,
                                                     config=config, case_id=case_id, environment=environment,
                                                     canon=self.canon or Canon())
            cassette.save(self.path, rules=self.rules)
            self.recorded = True
            return self.result
        cassette = self.load()
        if self.mode == RecordMode.NEW_EPISODES:
            self.result = await self._new_episodes(cassette, model, tools, message=message, history=history, user=user,
                                                   config=config, case_id=case_id, environment=environment)
            return self.result
        self._check_input(cassette, case_id, message, history)
        replayer = self._replayer = Replayer(cassette, match=self.match, key_args=self.key_args, canon=self.canon)
        if not live_model:
            self.replaced_models.append(model)
        self.result = await replayer.run(model=model if live_model else None, tools=tools, verify=verify,
                                         config=config, semantic=semantic)
        return self.result

    def _check_input(self, cassette: Cassette, case_id: str | None, message: str | None,
                     history: Sequence[Turn]) -> None:
        """The test's input, redacted like the cassette was, must be the recorded input."""
        rules = cassette.redaction.rules() if cassette.redaction else self.rules
        redactor = Redactor(rules)
        redactor.redact(case_id)
        given = redactor.redact({"message": message,
                                 "history": [HistoryTurn(role=h.role, content=h.content, question=h.question)
                                             .model_dump() for h in history]})
        recorded = cassette.input.model_dump(mode="json")
        if given != recorded:
            raise ModelRequestMismatch(
                1, recorded, given, rule=f"the test's input after redaction ({rules.name} v{rules.version})",
                detail=f"the test's input is not the one recorded in {self.path}; if the change is intended, "
                       "re-record with --tether-record-mode=all")

    async def _new_episodes(self, cassette: Cassette, model: Model, tools: ToolSet, *, message: str | None,
                            history: Sequence[Turn], user: SimulatedUser | None, config: RunConfig,
                            case_id: str | None, environment: Environment | None) -> RunResult:
        episode = max((i.episode for i in cassette.interactions), default=0) + 1
        recorder = Recorder(model, tools, user=user, canon=cassette.canon, episode=episode)
        replayer = Replayer(cassette, match="loose", key_args=self.key_args, canon=self.canon, recorder=recorder)
        the_user = _EpisodeUser(ReplayUser(cassette, match="loose", state=replayer.state), recorder) if user else None
        result = await run_agent(replayer.model, replayer.toolset(tools), message=message, history=history,
                                 user=the_user, config=config, case_id=case_id)
        fresh = recorder.cassette(result, message=message, history=history, config=config, case_id=case_id,
                                  environment=environment or cassette.environment)
        merged = fresh.model_copy(update={"interactions": [*cassette.interactions, *recorder.interactions],
                                          "canon": cassette.canon, "redaction": cassette.redaction})
        merged.save(self.path, rules=cassette.redaction.rules() if cassette.redaction else self.rules)
        self.recorded = bool(recorder.interactions)
        return result


class _EpisodeUser:
    """Recorded replies while they last, then the live simulated user (recorded)."""

    def __init__(self, replay: ReplayUser, recorder: Recorder):
        self.replay = replay
        self.recorder = recorder

    async def reply(self, question: str, trajectory: Any) -> str | None:
        if len(self.replay.state.user_used) < len(self.replay.recorded):
            return await self.replay.reply(question, trajectory)
        live = self.recorder.user
        return None if live is None else await live.reply(question, trajectory)


__all__ = ["CassetteSession"]
