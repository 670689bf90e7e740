"""A cassette file under a record mode: record the run, or replay it.

    session = CassetteSession("cassettes/refund.json", mode="once", store=".tether/tether.db")
    result = await session.run(model, tools, message="请帮我退掉订单 A100")

==============  ====================================================================
mode            what ``run`` does
==============  ====================================================================
``none``        replay; a missing file fails (:class:`CassetteNotFound`, naming it)
``once``        record when the file does not exist, else replay
``new_episodes``  replay what matches (loose), send the rest to the live model,
                tools and simulated user, and write the new run as the cassette
``all``         record and overwrite
==============  ====================================================================

The default is ``none`` when the ``CI`` environment variable is set, else
``once``. In replay a scripted double you pass (ScriptedModel, FunctionModel,
MappingModel) answers, and each of its requests is still checked against the
recording, so a test whose script changed fails at the step where it departs;
any other model is not asked (its recorded decisions are served) unless
``live_model=True`` (then its requests are not compared). The tools you pass
give the specs (so a changed schema is caught) but are not called unless
``verify=True``.
The run uses the cassette's (redacted) input; the input you pass must redact
to the same text, else the test and its cassette have drifted apart.

Every run, recorded or replayed, is a new run with its own id and kind
``cassette``; with a ``store`` it is written there, and a recording's
cassette holds the stored run's events.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import TetherError, UsageError
from ..events import Trajectory
from ..models import Model
from ..runtime import RunConfig, RunResult, Turn, run_agent
from ..runtime.runner import SimulatedUser
from ..tools import ToolSet
from .canonicalize import Canon
from .cassette import Cassette, CassetteNotFound, Environment, HistoryTurn, RecordMode, default_record_mode
from ..mismatch import ModelRequestMismatch
from .player import KeyArgs, MatchMode
from .record import record_run, stored_events
from .redact import RedactionRules, Redactor, redact_with
from .replayer import Replayer, Semantic, open_store


def is_double(model: Model) -> bool:
    """A scripted double: deterministic, offline, free to ask again in replay."""
    from ..models.doubles import FunctionModel, MappingModel, ScriptedModel

    return isinstance(model, (ScriptedModel, FunctionModel, MappingModel))


class CassetteSession:
    """One cassette file, one run, recorded or replayed according to ``mode``."""

    def __init__(self, path: str | os.PathLike[str], *, mode: RecordMode | str | None = None,
                 match: MatchMode = "strict", key_args: KeyArgs | None = None, canon: Canon | None = None,
                 redaction: RedactionRules | Mapping[str, Any] | None = None, store: Any = None):
        self.path = Path(path)
        self.mode = RecordMode(mode) if mode else default_record_mode()
        self.match = match
        self.key_args = key_args
        self.canon = canon
        self.rules = redact_with(redaction)
        self.store = open_store(store)
        self.result: RunResult | None = None
        self.trajectory: Trajectory | None = None   # this session's run, also when a mismatch ended it
        self.recorded = False                   # this session wrote the file
        self.replaced_models: list[Model] = []  # models whose decisions came from the cassette instead
        self._replayer: Replayer | None = None

    @property
    def run_id(self) -> str | None:
        """The id of this session's run (recorded or replayed), once it ran (also when a mismatch ended it)."""
        started = self.trajectory.started if self.trajectory is not None else None
        return started.run_id if started is not None else None

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
            self._replayer = self._new_replayer(self.load(), self.match)
        return self._replayer

    def _new_replayer(self, cassette: Cassette, match: MatchMode) -> Replayer:
        return Replayer(cassette, match=match, key_args=self.key_args, canon=self.canon, store=self.store,
                        kind="cassette")

    def assert_complete(self) -> None:
        """Strict replay: fail on departures and on recorded requests, calls or replies never played."""
        if self._replayer is not None:
            self._replayer.assert_complete()

    def _config(self, config: RunConfig, **meta: Any) -> RunConfig:
        """The test's config, kind ``cassette``, on this session's store, ``meta`` added."""
        return dataclasses.replace(config, kind="cassette" if config.kind == "run" else config.kind,
                                   store=config.store if config.store is not None else self.store,
                                   meta={**config.meta, **meta})

    async def run(self, model: Model, tools: ToolSet, *, message: str | None = None, history: Sequence[Turn] = (),
                  user: SimulatedUser | None = None, config: RunConfig = RunConfig(), case_id: str | None = None,
                  environment: Environment | None = None, verify: bool = False, live_model: bool | None = None,
                  semantic: Semantic = "auto") -> RunResult:
        """Record or replay (see the module docstring); raises the first mismatch."""
        if self.result is not None or self.trajectory is not None:
            raise UsageError(f"{self.path}: a cassette holds one run; use another cassette for a second run")
        try:
            self.result = await self._run(model, tools, message=message, history=history, user=user, config=config,
                                          case_id=case_id, environment=environment, verify=verify,
                                          live_model=live_model, semantic=semantic)
        except TetherError as exc:
            self.trajectory = getattr(exc, "trajectory", self.trajectory)
            raise
        self.trajectory = self.result.trajectory
        return self.result

    async def _run(self, model: Model, tools: ToolSet, *, message: str | None, history: Sequence[Turn],
                   user: SimulatedUser | None, config: RunConfig, case_id: str | None,
                   environment: Environment | None, verify: bool, live_model: bool | None,
                   semantic: Semantic) -> RunResult:
        if self.mode == RecordMode.NONE and not self.path.exists():
            raise CassetteNotFound(self.path, self.mode)
        if self.will_record:
            result, cassette = await record_run(model, tools, message=message, history=history, user=user,
                                                config=self._config(config), case_id=case_id,
                                                environment=environment, canon=self.canon or Canon())
            self.trajectory = result.trajectory
            cassette.save(self.path, rules=self.rules)
            self.recorded = True
            return result
        cassette = self.load()
        if self.mode == RecordMode.NEW_EPISODES:
            return await self._new_episodes(cassette, model, tools, message=message, history=history, user=user,
                                            config=config, case_id=case_id, environment=environment)
        self._check_input(cassette, case_id, message, history)
        replayer = self._replayer = self._new_replayer(cassette, self.match)
        double = live_model is None and is_double(model)
        if not (live_model or double):
            self.replaced_models.append(model)
        return await replayer.run(model=model if live_model or double else None, tools=tools, verify=verify,
                                  config=self._config(config, cassette=str(self.path), replay_of=cassette.run_id),
                                  semantic=semantic, check_requests=double)

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
        """Serve what the recording has (loose), ask the live model, tools and user for the rest;
        when anything went live, the new run (its stored events) becomes the cassette."""
        replayer = self._new_replayer(cassette, "loose")
        st = replayer.state
        st.live_model, st.live_tools, st.live_user = model, True, user
        config = self._config(config, replay_of=cassette.run_id)
        result = await run_agent(replayer.model, replayer.toolset(tools), message=message, history=history,
                                 user=replayer._user if user is not None else None, config=config, case_id=case_id)
        if st.went_live:
            fresh = Cassette.from_run(stored_events(result, config.store), config=config,
                                      environment=environment or cassette.environment, canon=cassette.canon,
                                      simulated_user=user is not None)
            fresh = fresh.model_copy(update={"redaction": cassette.redaction})
            fresh.save(self.path, rules=cassette.redaction.rules() if cassette.redaction else self.rules)
            self.recorded = True
        return result


__all__ = ["CassetteSession"]
