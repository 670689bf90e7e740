"""The Replayer: one cassette, its players wired together, and the final checks.

    replayer = Replayer(Cassette.load("cassettes/refund.json"))          # strict
    result = await replayer.run()                                         # offline
    result = await replayer.run(tools=live_tools, verify=True)            # tools re-run, results compared
    result = await replayer.run(model=new_model)                          # a live model against recorded tools

:meth:`Replayer.run` raises the first mismatch: a departure during the run
(model request, tool name, arguments, call count, tool result, user reply),
then the ending (terminal status, semantic check of the reply), then, in
strict mode, recorded requests, tool calls and replies the run never played.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Literal

from ..errors import UsageError
from ..events import Trajectory
from ..models import Model, ModelRequest, ModelResponse
from ..runtime import RunConfig, RunResult, Turn, run_agent
from ..runtime.runner import SimulatedUser
from ..tools import ToolLayer, ToolSet
from .canonicalize import Canon
from .cassette import Cassette
from ..mismatch import (
    Mismatch,
    ModelRequestMismatch,
    TerminalStateMismatch,
    ToolCallCountMismatch,
    UserReplyMismatch,
)
from .player import KeyArgs, MatchMode, ReplayModel, ReplayState, ReplayTools, ReplayUser, VerifyTools
from .semantic import Exact, SemanticCheck, check_reply

Semantic = SemanticCheck | Callable[[str], "bool | str | None"] | Literal["auto"] | None


def outermost(toolset: ToolSet, layer: ToolLayer) -> ToolSet:
    """The same tools with ``layer`` in front of every existing layer."""
    return ToolSet(toolset.tools.values(), [layer, *toolset.layers])


def open_store(store: Any) -> Any:
    """A store object as is; a path or a postgresql:// URL opens that store."""
    from ..store import open_store as open_any

    return open_any(store)


class _TrackedModel:
    """A live model during replay: keeps the step for the tool players, raises pending mismatches."""

    def __init__(self, inner: Model, state: ReplayState):
        self.inner = inner
        self.state = state
        self.name = getattr(inner, "name", type(inner).__name__)

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.state.set_step(request.step)
        self.state.raise_pending()
        return await self.inner.request(request)


class Replayer:
    """Players sharing one :class:`ReplayState`, plus ending and completeness checks.

    ``match``: ``strict`` (recorded order, every request and call must be
    played) or ``loose`` (model requests by canonical hash, tool calls by name
    and ``key_args``, in any order; leftovers allowed unless ``require_all``).
    ``canon`` overrides the cassette's canon. ``store`` (a store or a path):
    the replay is written there. Every replay is a new run with its own id,
    kind ``replay``, and ``meta["replay_of"]`` naming the recorded run.
    """

    def __init__(self, cassette: Cassette, *, match: MatchMode = "strict", key_args: KeyArgs | None = None,
                 canon: Canon | None = None, require_all: bool | None = None, store: Any = None,
                 kind: str = "replay"):
        self.cassette = cassette
        self.match = match
        self.canon = canon or cassette.canon
        self.key_args = key_args
        self.require_all = match == "strict" if require_all is None else require_all
        self.store = open_store(store)
        self.kind = kind
        self.state = ReplayState()
        self.model = ReplayModel(cassette, match=match, canon=self.canon, state=self.state)
        self.layer = ReplayTools(cassette, match=match, key_args=key_args, canon=self.canon, state=self.state)
        self._user = ReplayUser(cassette, match=match, canon=self.canon, state=self.state)

    # -- wiring --------------------------------------------------------------
    def tracked(self, model: Model) -> Model:
        """A live model in place of the recording (its requests are not compared)."""
        self.state.check_models = False
        return _TrackedModel(model, self.state)

    def checked(self, model: Model) -> Model:
        """``model`` answers in place of the recording, but each request is still
        checked against the recorded one (for deterministic doubles: a changed
        script departs at the step where it changed)."""
        self.model.live = model
        return self.model

    def toolset(self, tools: ToolSet | None = None) -> ToolSet:
        """``tools`` (or stubs with the recorded specs) answered from the recording."""
        return outermost(tools if tools is not None else self.cassette.toolset(), self.layer)

    def verifying(self, tools: ToolSet) -> ToolSet:
        """The live ``tools``, each result compared with the recorded one."""
        layer = VerifyTools(self.cassette, match=self.match, key_args=self.key_args, canon=self.canon, state=self.state)
        return outermost(tools, layer)

    def user(self) -> ReplayUser | None:
        """The recorded simulated user (None when no simulated user answered in the recording)."""
        return self._user if self.cassette.settings.simulated_user else None

    def config(self) -> RunConfig:
        """The recorded run's settings (system prompt, step cap, meta); no guards; this replayer's store."""
        started = self.cassette.started
        s = self.cassette.settings
        meta = {**(started.meta if started else {}), "replay_of": self.cassette.run_id}
        return RunConfig(max_steps=s.max_steps, system_prompt=s.system_prompt, guards_label=s.guards, meta=meta,
                         kind=self.kind, store=self.store)

    def _with_defaults(self, config: RunConfig) -> RunConfig:
        """A caller's config, marked as this replay's kind (naming the recorded run) on this replayer's store."""
        changes: dict[str, Any] = {}
        if config.kind == "run":
            changes["kind"] = self.kind
        if config.store is None and self.store is not None:
            changes["store"] = self.store
        if "replay_of" not in config.meta:
            changes["meta"] = {**config.meta, "replay_of": self.cassette.run_id}
        return dataclasses.replace(config, **changes) if changes else config

    # -- running --------------------------------------------------------------
    async def run(self, *, model: Model | None = None, tools: ToolSet | None = None, verify: bool = False,
                  user: SimulatedUser | None = None, config: RunConfig | None = None,
                  semantic: Semantic = "auto", run_id: str | None = None,
                  check_requests: bool = False) -> RunResult:
        """Run the recorded input again (a new run, a new id) and check everything; returns the replayed result.

        ``model``: a live model answers instead of the recording; its requests
        are compared with the recorded ones only with ``check_requests``.
        ``semantic``: a check of the final reply; ``"auto"`` is :class:`Exact`
        when requests are checked (the model replayed, or ``check_requests``)
        and nothing when a live model answers unchecked.
        """
        c = self.cassette
        if verify and tools is None:
            raise UsageError("Replayer.run(verify=True) needs the live tools to re-run: pass tools=...")
        the_model = self.model if model is None else self.checked(model) if check_requests else self.tracked(model)
        toolset = self.verifying(tools) if verify and tools is not None else self.toolset(tools)
        if user is not None:
            self.state.check_users = False
        started = c.started
        result = await run_agent(
            the_model, toolset, message=c.input.message,
            history=[Turn(h.role, h.content, h.question) for h in c.input.history],
            user=user if user is not None else self.user(),
            config=self._with_defaults(config) if config is not None else self.config(), case_id=c.case_id,
            run_id=run_id, trial=started.trial if started else 0)
        if semantic == "auto":
            semantic = Exact(c.expected.reply) if model is None or check_requests else None
        try:
            self.raise_pending()
            self.check_outcome(result, semantic=semantic)
            self.assert_complete()
        except Mismatch as exc:
            exc.trajectory = result.trajectory  # type: ignore[attr-defined]
            raise
        return result

    # -- checks ----------------------------------------------------------------
    def raise_pending(self) -> None:
        """The first departure recorded during the run, if any."""
        if self.state.mismatches:
            raise self.state.mismatches[0]

    def check_outcome(self, result: RunResult, *, semantic: Semantic = None) -> None:
        """TerminalStateMismatch when the status differs; SemanticOutputMismatch when the reply fails ``semantic``."""
        exp = self.cassette.expected
        finished = result.trajectory.finished
        step = finished.steps if finished else None
        if str(result.status) != exp.status:
            reason = finished.reason if finished else ""
            raise TerminalStateMismatch(
                step, exp.status, str(result.status), rule="terminal status equals the recorded one",
                detail=f"the run ended {result.status} ({reason}); the recording ended {exp.status} ({exp.reason})")
        if semantic is not None and semantic != "auto":
            check_reply(semantic, result.reply, step=step)

    def unplayed(self) -> list[tuple[int, str, Any]]:
        """Recorded requests, calls and replies the run never played: (step, kind, what)."""
        st, c = self.state, self.cassette
        out: list[tuple[int, str, Any]] = []
        if st.check_models:
            used = set(st.model_used)
            out += [(r.step, "model", r) for i, r in enumerate(self.model.recorded) if i not in used]
        used = set(st.tool_used)
        out += [(r.step, "tool", r) for i, r in enumerate(self.layer.recorded) if i not in used]
        if st.check_users and c.settings.simulated_user:
            used = set(st.user_used)
            out += [(r.step, "user", r) for i, r in enumerate(self._user.recorded) if i not in used]
        return sorted(out, key=lambda x: (x[0], {"tool": 0, "user": 1, "model": 2}[x[1]]))

    def assert_complete(self) -> None:
        """Fail on departures recorded so far, then (strict) on recorded requests, calls or replies never played."""
        self.raise_pending()
        if not self.require_all:
            return
        left = self.unplayed()
        if not left:
            return
        step, kind, _ = left[0]
        st = self.state
        same = [x for x in left if x[1] == kind]
        rule = "strict replay: every recorded request, tool call and reply must be played"
        if kind == "tool":
            n = len(self.layer.recorded)
            names = ", ".join(f"{r.tool} at step {r.step}" for _, _, r in same[:5])
            raise ToolCallCountMismatch(step, n, len(st.tool_used), rule=rule,
                                        detail=f"{len(same)} recorded tool call(s) never made: {names}")
        if kind == "user":
            n = len(self._user.recorded)
            raise UserReplyMismatch(step, n, len(st.user_used), rule=rule,
                                    detail=f"{len(same)} recorded simulated-user reply(ies) never asked for")
        n = len(self.model.recorded)
        raise ModelRequestMismatch(step, n, len(st.model_used), rule=rule,
                                   detail=f"the run made {len(st.model_used)} model request(s), the recording has {n}; "
                                          f"first never made: step {step}")

    def mismatches(self) -> list[Mismatch]:
        return list(self.state.mismatches)

    def trajectory(self) -> Trajectory:
        return self.cassette.trajectory()


async def replay_run(cassette: Cassette, *, match: MatchMode = "strict", key_args: KeyArgs | None = None,
                     model: Model | None = None, tools: ToolSet | None = None, verify: bool = False,
                     user: SimulatedUser | None = None, config: RunConfig | None = None,
                     semantic: Semantic = "auto", store: Any = None) -> RunResult:
    """``Replayer(cassette, ...).run(...)`` in one call."""
    return await Replayer(cassette, match=match, key_args=key_args, store=store).run(
        model=model, tools=tools, verify=verify, user=user, config=config, semantic=semantic)


__all__ = ["Replayer", "replay_run"]
