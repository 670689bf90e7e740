"""The three calibration policies and :func:`make_policy`.

Each is a :class:`~tether.models.Model` that behaves like a tool-using LLM
with one temperament, through rules that never look at case ids or texts:

* ``policy:stubborn`` repeats a failing call (or restarts a tool chain whose
  data is insufficient) and asks again when the user refuses: forever.
* ``policy:quitter`` gives up at the first error or empty result.
* ``policy:steady`` retries once (twice for transient failures), rewords,
  falls back to web search, stops after repeated failures and explains,
  and asks the user when information is missing (at most until two refusals).

They are stateless and deterministic: each request is answered from its
messages and tool specs alone, so one object can serve concurrent runs.
"""

from __future__ import annotations

from datetime import date

from ...errors import UsageError
from ...messages import Decision
from ...models._base import ModelRequest, ModelResponse
from ...models.doubles import _estimate_usage
from ._extract import DEFAULT_TODAY, parse_task
from ._finish import finish_up, is_finish_up
from ._planner import tool_infos
from ._program import QUITTER, STEADY, STUBBORN, Finish, Program
from ._transcript import Emit, Replay, read_conversation


class _Policy:
    mode: str = STEADY

    def __init__(self, *, today: date = DEFAULT_TODAY, name: str | None = None):
        self.today = today
        self.name = name or f"policy:{self.mode}"

    def decide(self, request: ModelRequest) -> Decision:
        conv = read_conversation(request.messages)
        task = parse_task(conv.request, tuple(conv.replies))
        if is_finish_up(request.tools, conv):
            # a guard stopped the run: whatever the temperament, explain like steady does
            return Decision.final(finish_up(self.mode, task, conv, request.messages, request.step, self.today))
        program = Program(self.mode, task, tool_infos(request.tools), Replay(conv.events, request.step), self.today)
        try:
            program.run()
        except Emit as emit:
            return emit.decision
        except Finish as done:
            return Decision.final(done.text)
        raise AssertionError("the policy program ended without a decision")  # pragma: no cover

    async def request(self, request: ModelRequest) -> ModelResponse:
        decision = self.decide(request)
        return ModelResponse(decision=decision, usage=_estimate_usage(request, decision))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(today={self.today.isoformat()})"


class StubbornPolicy(_Policy):
    """Repeats a failing call and never gives up (the step cap ends it)."""

    mode = STUBBORN


class QuitterPolicy(_Policy):
    """Gives up at the first error or empty result, with no retry."""

    mode = QUITTER


class SteadyPolicy(_Policy):
    """Retries once, rewords, falls back, stops after repeated failures and explains."""

    mode = STEADY


POLICIES: dict[str, type[_Policy]] = {"stubborn": StubbornPolicy, "quitter": QuitterPolicy, "steady": SteadyPolicy}
POLICY_NAMES: tuple[str, ...] = tuple(POLICIES)


def make_policy(name: str, *, today: date = DEFAULT_TODAY):
    """``make_policy("steady")`` (the part after ``policy:`` in a spec string): a
    calibration policy, or one of the null agents (mute, echo, inventor)."""
    from ._null import NULL_POLICIES

    key = name.strip().lower().removeprefix("policy:")
    cls = POLICIES.get(key)
    if cls is not None:
        return cls(today=today)
    if key in NULL_POLICIES:
        return NULL_POLICIES[key]()
    raise UsageError(f"unknown policy {name!r}; known policies: {', '.join(POLICY_NAMES + tuple(NULL_POLICIES))}")
