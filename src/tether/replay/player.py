"""Players: serve a cassette back to a run and say exactly where it departs.

* :class:`ReplayModel` serves recorded decisions; it checks each request
  against the recorded one under the cassette's canon.
* :class:`ReplayTools` (a ToolLayer) serves recorded tool results; it checks
  the tool name, the arguments and the number of calls.
* :class:`VerifyTools` (a ToolLayer) runs the live tools and compares each
  result with the recorded one.
* :class:`ReplayUser` serves the simulated user's recorded replies.

``strict`` replay expects every interaction in recorded order and, at
:meth:`Replayer.assert_complete`, fails on recorded interactions never
played. ``loose`` replay matches model requests by canonical hash and tool
calls by name and key arguments, in any order, and tolerates leftovers.

The run loop turns a model's or a tool layer's exception into an ``error``
ending, except misuse (:class:`~tether.errors.UsageError`) and
:class:`~tether.errors.RunAborted` signals, which it records and re-raises.
A mismatch is a RunAborted signal, so ``pytest.raises(ToolArgumentsMismatch)``
works around ``run_agent``. A tool layer cannot raise through the tool seam, so it records
the mismatch, answers with a ``replay_mismatch`` error result, and the next
model request (or the final check) raises it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from ..events import Trajectory
from ..messages import canonical_json
from ..models import ModelRequest, ModelResponse
from ..tools import CallNext, ToolResult
from .canonicalize import Canon, canonical_request, describe_difference, normalize_text
from .cassette import Cassette, ToolInteraction
from .mismatch import (
    Mismatch,
    ModelRequestMismatch,
    ToolCallCountMismatch,
    ToolArgumentsMismatch,
    ToolNameMismatch,
    ToolResultMismatch,
)
from .record import Recorder
from .redact import Redactor

MatchMode = Literal["strict", "loose"]
KeyArgs = Mapping[str, "Sequence[str] | Literal['all']"]


class UserReplyMismatch(Mismatch):
    """The agent asked the simulated user more often, or something else, than recorded."""

    kind = "UserReply"


def _plain(value: Any) -> Any:
    return json.loads(canonical_json(value))


@dataclass
class ReplayState:
    """What the players share: the current step, what was played, what departed."""

    step: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    model_used: list[int] = field(default_factory=list)
    tool_used: list[int] = field(default_factory=list)
    user_used: list[int] = field(default_factory=list)
    check_models: bool = True     # False when a live model answers instead of the recording
    check_users: bool = True
    recorder: Recorder | None = None  # new_episodes: misses go live and are recorded here

    def fail(self, m: Mismatch) -> Mismatch:
        self.mismatches.append(m)
        return m

    def raise_pending(self) -> None:
        if self.mismatches:
            raise (self.mismatches[0])

    def set_step(self, step: int) -> None:
        self.step = step
        if self.recorder is not None:
            self.recorder.step = step


class ReplayModel:
    """Serves recorded decisions; a request the recording does not have fails."""

    def __init__(self, cassette: Cassette, *, match: MatchMode = "strict", canon: Canon | None = None,
                 state: ReplayState | None = None):
        self.cassette = cassette
        self.match = match
        self.canon = canon or cassette.canon
        self.state = state or ReplayState()
        self.recorded = cassette.model_interactions()
        self._keys = [self.canon.key(r.request, "model_request") for r in self.recorded]
        self.name = cassette.versions.model or "replay"
        self.requests: list[ModelRequest] = []

    @property
    def rule(self) -> str:
        how = "requests in recorded order" if self.match == "strict" else "requests matched by canonical hash, any order"
        return f"{self.match} replay, {how}; {self.canon.describe('model_request')}"

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        st = self.state
        st.set_step(request.step)
        st.raise_pending()
        live = _plain(canonical_request(request))
        index, mismatch = self._find(request.step, live)
        if index is None:
            if st.recorder is not None:      # new_episodes: ask the live model, record it
                return await st.recorder.model.request(request)
            raise (st.fail(mismatch or self._beyond(request.step, live, len(st.model_used))))
        st.model_used.append(index)
        rec = self.recorded[index]
        return ModelResponse(decision=rec.response.decision, usage=rec.response.usage)

    def _find(self, step: int, live: dict[str, Any]) -> tuple[int | None, Mismatch | None]:
        used, n = self.state.model_used, len(self.recorded)
        key = self.canon.key(live, "model_request")
        if self.match == "strict":
            pos = len(used)
            if pos >= n:
                return None, self._beyond(step, live, pos)
            if self._keys[pos] == key:
                return pos, None
            return None, self._differs(step, pos, live, f"model request {pos + 1} of {n}")
        unused = [i for i in range(n) if i not in used]
        for i in unused:
            if self._keys[i] == key:
                return i, None
        if not unused:
            return None, self._beyond(step, live, len(used))
        return None, self._differs(step, unused[0], live, "no unused recorded request has this canonical hash; "
                                                         f"nearest is model request {unused[0] + 1} of {n}")

    def _beyond(self, step: int, live: dict[str, Any], pos: int) -> Mismatch:
        n = len(self.recorded)
        last = live["messages"][-1] if live["messages"] else None
        return ModelRequestMismatch(
            step, f"(no request: the recording ends after {n} model request(s))", last,
            detail=f"model request {pos + 1} at step {step} is beyond the recording ({n} recorded)", rule=self.rule)

    def _differs(self, step: int, index: int, live: dict[str, Any], where: str) -> Mismatch:
        exp = self.canon.apply(self.recorded[index].request, "model_request")
        act = self.canon.apply(live, "model_request")
        em, am = exp.get("messages", []), act.get("messages", [])
        for i in range(max(len(em), len(am))):
            e = em[i] if i < len(em) else "(no message)"
            a = am[i] if i < len(am) else "(no message)"
            if canonical_json(e) == canonical_json(a):
                continue
            role = (a if isinstance(a, dict) else e)["role"]
            detail = (f"{where}: message {i + 1} (role {role}) differs; the request has {len(am)} message(s), "
                      f"the recording {len(em)}")
            if isinstance(e, dict) and isinstance(a, dict):
                hint = describe_difference(e, a, f"$.messages[{i}]")
                detail += f"; {hint}" if hint else ""
            return ModelRequestMismatch(step, e, a, detail=detail, rule=self.rule)
        detail = (f"{where}: the tools offered differ (tool-schema hash {exp.get('tools_hash')} recorded, "
                  f"{act.get('tools_hash')} now)")
        pick = ("tools", "tools_hash")
        return ModelRequestMismatch(step, {k: exp.get(k) for k in pick}, {k: act.get(k) for k in pick},
                                    detail=detail, rule=self.rule)


class ReplayTools:
    """A ToolLayer serving recorded results; checks name, arguments and count."""

    def __init__(self, cassette: Cassette, *, match: MatchMode = "strict", key_args: KeyArgs | None = None,
                 canon: Canon | None = None, state: ReplayState | None = None):
        self.cassette = cassette
        self.match = match
        self.key_args = dict(key_args or {})
        self.canon = canon or cassette.canon
        self.state = state or ReplayState()
        self.recorded: list[ToolInteraction] = cassette.tool_interactions()
        self._taken: set[int] = set(self.state.tool_used)
        self._indexes: dict[str, dict[str, list[int]]] = {}

    def rule(self, tool: str) -> str:
        if self.match == "strict":
            how = "tool calls in recorded order, all arguments compared"
        else:
            keys = self.key_args.get(tool, "all")
            how = f"{tool} matched by name and {'all arguments' if keys == 'all' else 'key arguments ' + ', '.join(keys)}, any order"
        return f"{self.match} replay, {how}; {self.canon.describe('tool_arguments', tool)}"

    async def __call__(self, name: str, arguments: dict[str, Any], call_next: CallNext) -> ToolResult:
        st = self.state
        index, mismatch = self._find(name, _plain(arguments))
        if index is None or mismatch is not None:
            if st.recorder is not None:      # new_episodes: call the live tool, record it
                return await st.recorder.layer(name, arguments, call_next)
            m = st.fail(mismatch or ToolCallCountMismatch(st.step, len(self.recorded), len(st.tool_used) + 1))
            return ToolResult.failure(f"replay mismatch ({m.kind}) at step {m.step}: {m.detail}",
                                      "replay_mismatch", source="replay")
        st.tool_used.append(index)
        self._taken.add(index)
        return await self._answer(index, name, arguments, call_next)

    def _index(self, name: str, keys: Any) -> dict[str, list[int]]:
        """Recorded calls of ``name`` by their matched arguments (built once per tool)."""
        if name not in self._indexes:
            index: dict[str, list[int]] = {}
            for i, rec in enumerate(self.recorded):
                if rec.tool == name:
                    index.setdefault(canonical_json(self._args(name, rec.arguments, keys)), []).append(i)
            self._indexes[name] = index
        return self._indexes[name]

    async def _answer(self, index: int, name: str, arguments: dict[str, Any], call_next: CallNext) -> ToolResult:
        return self.recorded[index].result.to_result()

    def _args(self, name: str, arguments: dict[str, Any], keys: Sequence[str] | str = "all") -> Any:
        args = self.canon.apply(arguments, "tool_arguments", name)
        return args if keys == "all" else {k: args[k] for k in keys if k in args}

    def _find(self, name: str, args: dict[str, Any]) -> tuple[int | None, Mismatch | None]:
        step, used, n = self.state.step, self.state.tool_used, len(self.recorded)
        if self.match == "strict":
            pos = len(used)
            if pos >= n:
                return None, ToolCallCountMismatch(
                    step, n, pos + 1, rule=self.rule(name),
                    detail=f"{name} {canonical_json(args)} is tool call {pos + 1}; the recording has only {n}")
            rec = self.recorded[pos]
            if rec.tool != name:
                return None, ToolNameMismatch(
                    step, rec.tool, name, rule=self.rule(name),
                    detail=f"tool call {pos + 1} of {n}: the recording called {rec.tool} (at step {rec.step}), "
                           f"the run called {name}")
            exp, act = self._args(name, rec.arguments), self._args(name, args)
            if canonical_json(exp) != canonical_json(act):
                return None, ToolArgumentsMismatch(
                    step, exp, act, rule=self.rule(name),
                    detail=f"{name} (tool call {pos + 1} of {n}) was called with other arguments than recorded")
            return pos, None
        keys = self.key_args.get(name, "all")
        act = self._args(name, args, keys)
        # The hot path: an index of recorded calls by tool and matched arguments.
        for i in self._index(name, keys).get(canonical_json(act), ()):
            if i not in self._taken:
                return i, None
        same_tool = [i for i in range(n) if self.recorded[i].tool == name]
        unused = [i for i in same_tool if i not in self._taken]
        if not same_tool:
            names = sorted({r.tool for r in self.recorded})
            return None, ToolNameMismatch(step, names, name, rule=self.rule(name),
                                          detail=f"the recording never called {name}")
        if not unused:
            return None, ToolCallCountMismatch(
                step, len(same_tool), len(same_tool) + 1, rule=self.rule(name),
                detail=f"{name} called {len(same_tool) + 1} times; the recording has {len(same_tool)}")
        exp = self._args(name, self.recorded[unused[0]].arguments, keys)
        return None, ToolArgumentsMismatch(
            step, exp, act, rule=self.rule(name),
            detail=f"no unused recorded {name} call has these arguments (nearest: the one at step "
                   f"{self.recorded[unused[0]].step})")


class VerifyTools(ReplayTools):
    """A ToolLayer that runs the live tools and compares each result with the recorded one.

    Under a cassette with pseudonyms, the live result is redacted with the
    cassette's rules and pseudonym numbers are ignored on both sides.
    """

    async def _answer(self, index: int, name: str, arguments: dict[str, Any], call_next: CallNext) -> ToolResult:
        live = await call_next(name, arguments)
        rec = self.recorded[index]
        exp = self.canon.apply(rec.result.envelope(), "tool_result", name)
        act = self.canon.apply(_plain(live.for_model()), "tool_result", name)
        if self.cassette.redaction is not None:
            exp, act = self._comparable(exp), self._comparable(Redactor(self.cassette.redaction.rules()).redact(act))
        if canonical_json(exp) != canonical_json(act):
            where = describe_difference(exp, act)
            self.state.fail(ToolResultMismatch(
                self.state.step, exp, act,
                detail=f"{name} {canonical_json(rec.arguments)} answered differently than recorded "
                       f"(tool call {len(self.state.tool_used)}); {where}",
                rule=f"live result vs recorded envelope {{ok, data, error, error_type}}; "
                     f"{self.canon.describe('tool_result', name)}"))
        return live

    def _comparable(self, value: Any) -> Any:
        kinds = [*(["cnid", "email", "phone"] if self.cassette.redaction and self.cassette.redaction.pii else []),
                 *(self.cassette.redaction.ids if self.cassette.redaction else {})]
        if not kinds:
            return value
        pattern = re.compile(rf"(?<![A-Za-z0-9_])({'|'.join(map(re.escape, kinds))})-\d{{3,}}")
        return json.loads(pattern.sub(lambda m: f"{m[1]}-*", canonical_json(value)))


class ReplayUser:
    """Serves the simulated user's recorded replies, in order."""

    def __init__(self, cassette: Cassette, *, match: MatchMode = "strict", canon: Canon | None = None,
                 state: ReplayState | None = None):
        self.recorded = cassette.user_interactions()
        self.match = match
        self.canon = canon or cassette.canon
        self.state = state or ReplayState()

    async def reply(self, question: str, trajectory: Trajectory) -> str | None:
        st, n = self.state, len(self.recorded)
        pos = len(st.user_used)
        rule = f"{self.match} replay of the simulated user's replies, in order"
        if pos >= n:
            raise (st.fail(UserReplyMismatch(
                st.step, f"(no question: the recording has {n} simulated-user reply(ies))", question, rule=rule,
                detail=f"the agent asked the simulated user {pos + 1} time(s); the recording has {n}")))
        rec = self.recorded[pos]
        ws = self.canon.whitespace
        if self.match == "strict" and normalize_text(rec.question, ws) != normalize_text(question, ws):
            raise (st.fail(UserReplyMismatch(
                st.step, rec.question, question, rule=rule,
                detail=f"question {pos + 1} to the simulated user differs from the recording")))
        st.user_used.append(pos)
        return rec.reply


__all__ = [
    "KeyArgs",
    "MatchMode",
    "ReplayModel",
    "ReplayState",
    "ReplayTools",
    "ReplayUser",
    "UserReplyMismatch",
    "VerifyTools",
]
