"""The Replayer: one cassette, its players wired together, and the final checks.

    replayer = Replayer(Cassette.load("cassettes/refund.json"))          # strict
    result = await replayer.run()                                         # offline
    result = await replayer.run(tools=live_tools, verify=True)            # tools re-run, results compared
    result = await replayer.run(model=new_model)                          # a live model against recorded tools

:meth:`Replayer.run` raises the first mismatch: a departure during the run
(model request, tool name, arguments, call count, tool result, user reply),
then the ending (terminal status, semantic check of the reply), then, in
strict mode, recorded interactions the run never played.
"""

from __future__ import annotations

from typing import Any, Callable, Literal

from ..errors import UsageError
from ..events import Trajectory
from ..models import Model, ModelRequest, ModelResponse
from ..runtime import RunConfig, RunResult, Turn, run_agent
from ..runtime.runner import SimulatedUser
from ..tools import ToolSet
from .canonicalize import Canon
from .cassette import Cassette
from .mismatch import Mismatch, ModelRequestMismatch, TerminalStateMismatch, ToolCallCountMismatch
from .player import (
    KeyArgs,
    MatchMode,
    ReplayModel,
    ReplayState,
    ReplayTools,
    ReplayUser,
    UserReplyMismatch,
    VerifyTools,
)
from .record import Recorder, outermost
from .semantic import Exact, SemanticCheck, check_reply

Semantic = SemanticCheck | Callable[[str], "bool | str | None"] | Literal["auto"] | None


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

    ``match``: ``strict`` (recorded order, every interaction must be played)
    or ``loose`` (model requests by canonical hash, tool calls by name and
    ``key_args``, in any order; leftovers allowed unless ``require_all``).
    ``canon`` overrides the cassette's canon. ``recorder`` (new_episodes):
    misses go to the live model / tools and are recorded there.
    """

    def __init__(self, cassette: Cassette, *, match: MatchMode = "strict", key_args: KeyArgs | None = None,
                 canon: Canon | None = None, require_all: bool | None = None, recorder: Recorder | None = None):
        self.cassette = cassette
        self.match = match
        self.canon = canon or cassette.canon
        self.key_args = key_args
        self.require_all = match == "strict" if require_all is None else require_all
        self.state = ReplayState(recorder=recorder)
        self.model = ReplayModel(cassette, match=match, canon=self.canon, state=self.state)
        self.layer = ReplayTools(cassette, match=match, key_args=key_args, canon=self.canon, state=self.state)

    # -- wiring --------------------------------------------------------------
    def tracked(self, model: Model) -> Model:
        """A live model in place of the recording (its requests are not compared)."""
        self.state.check_models = False
        return _TrackedModel(model, self.state)

    def toolset(self, tools: ToolSet | None = None) -> ToolSet:
        """``tools`` (or stubs with the recorded specs) answered from the recording."""
        return outermost(tools if tools is not None else self.cassette.toolset(), self.layer)

    def verifying(self, tools: ToolSet) -> ToolSet:
        """The live ``tools``, each result compared with the recorded one."""
        layer = VerifyTools(self.cassette, match=self.match, key_args=self.key_args, canon=self.canon, state=self.state)
        return outermost(tools, layer)

    def user(self) -> ReplayUser | None:
        if not self.cassette.run.simulated_user:
            return None
        return ReplayUser(self.cassette, match=self.match, canon=self.canon, state=self.state)

    def config(self) -> RunConfig:
        """The recorded run's settings (system prompt, step cap, meta); no guards."""
        started = self.cassette.events[0] if self.cassette.events else {}
        run = self.cassette.run
        return RunConfig(max_steps=run.max_steps, system_prompt=run.system_prompt, guards_label=run.guards,
                         meta=dict(started.get("meta") or {}))

    # -- running --------------------------------------------------------------
    async def run(self, *, model: Model | None = None, tools: ToolSet | None = None, verify: bool = False,
                  user: SimulatedUser | None = None, config: RunConfig | None = None,
                  semantic: Semantic = "auto") -> RunResult:
        """Run the recorded input again and check everything; returns the replayed result.

        ``semantic``: a check of the final reply; ``"auto"`` is :class:`Exact`
        when the model is replayed and nothing when a live model answers.
        """
        c = self.cassette
        if verify and tools is None:
            raise UsageError("Replayer.run(verify=True) needs the live tools to re-run: pass tools=...")
        the_model = self.model if model is None else self.tracked(model)
        toolset = self.verifying(tools) if verify and tools is not None else self.toolset(tools)
        if user is not None:
            self.state.check_users = False
        started = c.events[0] if c.events else {}
        result = await run_agent(
            the_model, toolset, message=c.input.message,
            history=[Turn(h.role, h.content, h.question) for h in c.input.history],
            user=user if user is not None else self.user(), config=config or self.config(), case_id=c.case_id,
            run_id=c.run_id, trial=int(started.get("trial") or 0))
        self.raise_pending()
        if semantic == "auto":
            semantic = Exact(c.expected.reply) if model is None else None
        self.check_outcome(result, semantic=semantic)
        self.assert_complete()
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
        """Recorded interactions the run never played: (step, kind, interaction)."""
        st, c = self.state, self.cassette
        out: list[tuple[int, str, Any]] = []
        if st.check_models:
            out += [(r.step, "model", r) for i, r in enumerate(c.model_interactions()) if i not in st.model_used]
        out += [(r.step, "tool", r) for i, r in enumerate(c.tool_interactions()) if i not in st.tool_used]
        if st.check_users and c.run.simulated_user:
            out += [(r.step, "user", r) for i, r in enumerate(c.user_interactions()) if i not in st.user_used]
        return sorted(out, key=lambda x: (x[0], {"tool": 0, "user": 1, "model": 2}[x[1]]))

    def assert_complete(self) -> None:
        """Fail on departures recorded so far, then (strict) on interactions never played."""
        self.raise_pending()
        if not self.require_all:
            return
        left = self.unplayed()
        if not left:
            return
        step, kind, _ = left[0]
        c, st = self.cassette, self.state
        same = [x for x in left if x[1] == kind]
        rule = "strict replay: every recorded interaction must be played"
        if kind == "tool":
            n = len(c.tool_interactions())
            names = ", ".join(f"{r.tool} at step {r.step}" for _, _, r in same[:5])
            raise ToolCallCountMismatch(step, n, len(st.tool_used), rule=rule,
                                        detail=f"{len(same)} recorded tool call(s) never made: {names}")
        if kind == "user":
            n = len(c.user_interactions())
            raise UserReplyMismatch(step, n, len(st.user_used), rule=rule,
                                    detail=f"{len(same)} recorded simulated-user reply(ies) never asked for")
        n = len(c.model_interactions())
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
                     semantic: Semantic = "auto") -> RunResult:
    """``Replayer(cassette, ...).run(...)`` in one call."""
    return await Replayer(cassette, match=match, key_args=key_args).run(
        model=model, tools=tools, verify=verify, user=user, config=config, semantic=semantic)


__all__ = ["Replayer", "replay_run"]
