"""Players: serve a cassette's events back to a run and say exactly where it departs.

* :class:`ReplayModel` serves the recorded agent decisions; it checks each
  request against the recorded one (the full message list rebuilt from the
  ``model_request`` deltas) under the cassette's canon.
* :class:`ReplayTools` (a ToolLayer) serves the results the tools gave
  (``tool_call`` / ``tool_result`` pairs; results a guard, a gate or the runner
  gave never reached a tool and are not served); it checks the tool name, the
  arguments and the number of calls.
* :class:`VerifyTools` (a ToolLayer) runs the live tools and compares each
  result with the recorded one.
* :class:`ReplayUser` serves the simulated user's recorded answers (an
  ``agent_message`` question, then a ``user_message`` from the simulator).

``strict`` replay expects every recorded request and call in recorded order
and, at :meth:`Replayer.assert_complete`, fails on those never played.
``loose`` replay matches model requests by canonical hash and tool calls by
name and key arguments (an index), in any order, and tolerates leftovers.

The run loop turns a model's or a tool layer's exception into an ``error``
ending, except misuse (:class:`~tether.errors.UsageError`) and
:class:`~tether.errors.RunAborted` signals, which it records and re-raises.
A mismatch is a RunAborted signal, so ``pytest.raises(ToolArgumentsMismatch)``
works around ``run_agent``. A tool layer cannot raise through the tool seam,
so it records the mismatch, answers with a ``replay_mismatch`` error result,
and the next model request (or the final check) raises it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from ..events import Trajectory
from ..messages import Decision, canonical_json
from ..models import Model, ModelRequest, ModelResponse
from ..runtime.session import SimulatedUser
from ..tools import CallNext, ToolResult
from .canonicalize import Canon, canonical_request, describe_difference, normalize_text
from .cassette import Cassette, RecordedCall
from ..mismatch import (
    Mismatch,
    ModelRequestMismatch,
    ToolArgumentsMismatch,
    ToolCallCountMismatch,
    ToolNameMismatch,
    ToolResultMismatch,
    UserReplyMismatch,
)
from .redact import Redactor

MatchMode = Literal["strict", "loose"]
KeyArgs = Mapping[str, "Sequence[str] | Literal['all']"]


def _plain(value: Any) -> Any:
    return json.loads(canonical_json(value))


@dataclass
class ReplayState:
    """What the players share: the current step, what was played, what departed.

    ``live_model`` / ``live_tools`` / ``live_user`` (record mode
    ``new_episodes``): what the recording lacks is asked live instead of failing.
    """

    step: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    model_used: list[int] = field(default_factory=list)
    tool_used: list[int] = field(default_factory=list)
    user_used: list[int] = field(default_factory=list)
    check_models: bool = True     # False when a live model answers instead of the recording
    check_users: bool = True
    live_model: Model | None = None
    live_tools: bool = False
    live_user: SimulatedUser | None = None
    went_live: int = 0            # answers that came from the live model, tools or user

    def fail(self, m: Mismatch) -> Mismatch:
        self.mismatches.append(m)
        return m

    def raise_pending(self) -> None:
        if self.mismatches:
            raise (self.mismatches[0])

    def set_step(self, step: int) -> None:
        self.step = step


class ReplayModel:
    """Serves recorded decisions; a request the recording does not have fails.

    With ``live`` (a scripted double, say) each request is still checked
    against the recording, then ``live`` answers it instead of the recording:
    a script that now decides otherwise departs at the step where it changed.
    """

    def __init__(self, cassette: Cassette, *, match: MatchMode = "strict", canon: Canon | None = None,
                 state: ReplayState | None = None, live: Model | None = None):
        self.cassette = cassette
        self.match = match
        self.canon = canon or cassette.canon
        self.state = state or ReplayState()
        self.live = live
        self.recorded = cassette.recorded_requests()
        self._specs = {s.name: s for s in cassette.tools}
        self._docs: dict[int, dict[str, Any]] = {}
        self._keys: dict[int, str] = {}
        self.name = cassette.versions.model or "replay"
        self.requests: list[ModelRequest] = []

    @property
    def rule(self) -> str:
        how = "requests in recorded order" if self.match == "strict" else "requests matched by canonical hash, any order"
        return f"{self.match} replay, {how}; {self.canon.describe('model_request')}"

    def recorded_request(self, index: int) -> dict[str, Any]:
        """Recorded request ``index`` in canonical form (as :func:`canonical_request` makes it)."""
        if index not in self._docs:
            rec = self.recorded[index]
            specs = [self._specs[n] for n in rec.request.tools if n in self._specs]
            self._docs[index] = canonical_request(ModelRequest(messages=rec.messages, tools=specs))
        return self._docs[index]

    def _key(self, index: int) -> str:
        if index not in self._keys:
            self._keys[index] = self.canon.key(self.recorded_request(index), "model_request")
        return self._keys[index]

    def _same(self, index: int, live: dict[str, Any], live_key: str | None) -> bool:
        """Recorded request ``index`` equals ``live`` under the canon (equal JSON is equal under any canon)."""
        if canonical_json(self.recorded_request(index)) == canonical_json(live):
            return True
        return self._key(index) == (live_key or self.canon.key(live, "model_request"))

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        st = self.state
        st.set_step(request.step)
        st.raise_pending()
        live = canonical_request(request)          # plain JSON values, built afresh
        index, mismatch = self._find(request.step, live)
        if index is None:
            if st.live_model is not None:      # new_episodes: the live model answers what the recording lacks
                st.went_live += 1
                return await st.live_model.request(request)
            raise (st.fail(mismatch or self._beyond(request.step, live, len(st.model_used))))
        st.model_used.append(index)
        if self.live is not None:
            return await self.live.request(request)
        d = self.recorded[index].decision
        # the recorded stop reason too: a reply cut by the token limit stays truncated when replayed
        return ModelResponse(decision=Decision(kind=d.kind, tool_calls=d.tool_calls, text=d.text), usage=d.usage,
                             finish_reason=d.finish_reason)

    def _find(self, step: int, live: dict[str, Any]) -> tuple[int | None, Mismatch | None]:
        used, n = self.state.model_used, len(self.recorded)
        if self.match == "strict":
            pos = len(used)
            if pos >= n:
                return None, self._beyond(step, live, pos)
            if self._same(pos, live, None):
                return pos, None
            return None, self._differs(step, pos, live, f"model request {pos + 1} of {n}")
        key = self.canon.key(live, "model_request")
        unused = [i for i in range(n) if i not in used]
        for i in unused:
            if self._key(i) == key:
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
        exp = self.canon.apply(self.recorded_request(index), "model_request")
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
        self.recorded: list[RecordedCall] = cassette.recorded_calls()
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
            if st.live_tools:                # new_episodes: the live tools answer what the recording lacks
                st.went_live += 1
                return await call_next(name, arguments)
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
        return self.recorded[index].to_result()

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
    cassette's rules and pseudonym numbers are ignored on both sides. When
    the two agree, the run goes on with the recorded result (the
    pseudonymized world the cassette's requests live in); when they differ,
    with the live one, and the mismatch is raised at the next model request.
    """

    async def _answer(self, index: int, name: str, arguments: dict[str, Any], call_next: CallNext) -> ToolResult:
        live = await call_next(name, arguments)
        rec = self.recorded[index]
        exp = self.canon.apply(rec.envelope(), "tool_result", name)
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
        return rec.to_result()

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
        self.recorded = cassette.recorded_replies()
        self.match = match
        self.canon = canon or cassette.canon
        self.state = state or ReplayState()

    async def reply(self, question: str, trajectory: Trajectory) -> str | None:
        st, n = self.state, len(self.recorded)
        pos = len(st.user_used)
        rule = f"{self.match} replay of the simulated user's replies, in order"
        if pos >= n and st.live_user is not None:      # new_episodes: the live simulated user answers
            st.went_live += 1
            return await st.live_user.reply(question, trajectory)
        if pos >= n:
            raise (st.fail(UserReplyMismatch(
                st.step, f"(no question: the recording has {n} simulated-user reply(ies))", question, rule=rule,
                detail=f"the agent asked the simulated user {pos + 1} time(s); the recording has {n}")))
        rec = self.recorded[pos]
        ws = self.canon.whitespace
        asked = rec.question.content
        if self.match == "strict" and normalize_text(asked, ws) != normalize_text(question, ws):
            raise (st.fail(UserReplyMismatch(
                st.step, asked, question, rule=rule,
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
