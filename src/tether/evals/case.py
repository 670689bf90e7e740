"""The case schema: one YAML file per case, validated by pydantic.

The seed's tool configs are accepted in its own JSON shapes (``tool_intercept``
and ``tool_mock``). Criteria are data: automatic checks computed from the
trajectory, and rubric criteria for a judge. See ``docs/cases.md``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from datetime import datetime

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from ..ids import ID_RULE, is_id
from ..tools.injection import InjectedResult, MockedCall, ToolConfig, ToolIntercept, ToolMock

CASE_VERSION = 1
MAX_MESSAGE_CHARS = 100_000      # a user message or a history turn (a case file is at most 1 MB)
MAX_STEPS = 1_000                # a case's step cap
MAX_EXAMPLE_CALLS = 1_000        # tool calls in one example (sum of its calls' times)


def _case_id(value: str) -> str:
    if not is_id(value):
        raise ValueError(f"a case id is {ID_RULE}; got {value[:60]!r}")
    return value


def _instant(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"now must be an ISO 8601 date and time such as 2026-04-07T10:00:00+08:00; got {value[:40]!r}") \
            from None
    return value


def _case_version(value: int) -> int:
    if value != CASE_VERSION:
        raise ValueError(f"case format version {value} is unknown to this tether (it reads version {CASE_VERSION})")
    return value


CaseId = Annotated[str, AfterValidator(_case_id)]
Text = Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]

__all__ = ["Case", "InjectedResult", "MockedCall", "ToolConfig", "ToolIntercept", "ToolMock"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- conversation -------------------------------------------------------------
class HistoryTurn(_Strict):
    role: Literal["user", "agent"]
    content: Text
    # For agent turns: is this turn a question to the user (counted by
    # ``questions_asked`` criteria)?
    question: bool = False


class CaseInput(_Strict):
    message: Text | None = None
    history: list[HistoryTurn] = Field(default_factory=list)
    # The fixed "now" of the scenario world, for relative dates (下周五, 明天).
    now: Annotated[str, AfterValidator(_instant)] = "2026-04-07T10:00:00+08:00"


class Persona(_Strict):
    """A simulated user: what it knows, what it refuses, how long it stays.

    ``replies`` are used in order, one per agent question; after the last one,
    ``then`` says what happens: ``repeat_last`` keeps saying the last reply,
    ``stop`` ends the conversation. ``reveals`` maps topic keywords to facts
    the user gives when a question mentions that keyword (checked before
    ``replies``; each fact is given once). ``refusals`` are topic keywords the
    user will not talk about (answered from ``refusal_replies``); ``withheld``
    maps refused topics to facts the user knows but never gives. ``patience``
    is how many agent questions (counting those in the case's history) the user
    tolerates: the next one gets ``closing`` (if any) and the conversation
    ends. ``max_rounds`` caps the user's replies. See docs/cases.md.
    """

    description: str = ""
    goal: str = ""
    replies: list[str] = Field(default_factory=list)
    then: Literal["repeat_last", "stop"] = "stop"
    reveals: dict[str, str] = Field(default_factory=dict)
    # Said when a question matches no ``reveals`` keyword and ``replies`` is empty.
    default_reply: str | None = None
    max_rounds: int = 20
    refusals: list[str] = Field(default_factory=list)
    # Said (in order, then the last one again) when a question touches a refused topic.
    refusal_replies: list[str] = Field(default_factory=list)
    withheld: dict[str, str] = Field(default_factory=dict)
    patience: int | None = Field(default=None, ge=0)
    # The curt last line when patience runs out (none: the user just stops answering).
    closing: str | None = None

    @property
    def refused_topics(self) -> list[str]:
        """``refusals`` plus the keywords of ``withheld`` facts, in order, once each."""
        return list(dict.fromkeys([*self.refusals, *self.withheld]))


# -- criteria -------------------------------------------------------------------
class Range(_Strict):
    """An inclusive range; either end may be open."""

    min: int | None = None
    max: int | None = None

    def contains(self, n: int) -> bool:
        return (self.min is None or n >= self.min) and (self.max is None or n <= self.max)

    def __str__(self) -> str:
        if self.min is not None and self.max is not None:
            return f"{self.min}..{self.max}" if self.min != self.max else str(self.min)
        if self.min is not None:
            return f">={self.min}"
        if self.max is not None:
            return f"<={self.max}"
        return "any"


class _Criterion(_Strict):
    id: str
    description: str = ""
    # What the seed's 判定标准 says, verbatim, for reports and the judge.
    seed_text: str = ""
    # Failure attribution used when this criterion fails (seed: 失败归因).
    failure_type: Literal["loop", "deadlock", "abandonment", "irrational_abandonment",
                          "hallucination", "dropped_item", "other"] = "other"
    fix_suggestion: str = ""


class _Counted(_Criterion):
    """A count compared with a pass range and a fail range; in neither: unclear."""

    pass_range: Range = Field(alias="pass")
    fail_range: Range | None = Field(default=None, alias="fail")
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class CallCount(_Counted):
    """Number of calls to ``tools`` (all calls, or only ``after_failure``:
    calls made to a tool that had already returned an error)."""

    kind: Literal["auto"] = "auto"
    check: Literal["call_count"]
    tools: list[str]
    per: Literal["total", "max_per_tool"] = "total"
    after_failure: bool = False


class IdenticalCalls(_Counted):
    """Largest number of identical calls (tool + canonical arguments)."""

    kind: Literal["auto"] = "auto"
    check: Literal["identical_calls"]
    tools: list[str] | None = None


class Strategies(_Counted):
    """Distinct recovery strategies tried after an unsuccessful result of
    ``tools``: ``retry`` (same call again), ``reword`` (same tool, other
    arguments), ``fallback`` (another tool)."""

    kind: Literal["auto"] = "auto"
    check: Literal["strategies"]
    tools: list[str]


class QuestionsAsked(_Counted):
    """Questions the agent asked the user, counting those in the history."""

    kind: Literal["auto"] = "auto"
    check: Literal["questions_asked"]
    include_history: bool = True


class Mentions(_Criterion):
    """The final reply mentions terms. ``groups``: every group must be hit
    by at least one of its terms (``any`` of the groups when ``mode: any``)."""

    kind: Literal["auto"] = "auto"
    check: Literal["mentions"]
    groups: list[list[str]]
    mode: Literal["all", "any"] = "all"
    # When the reply misses: fail (default) or unclear (a wording check that
    # cannot rule a reply out on its own).
    on_miss: Literal["fail", "unclear"] = "fail"


class NoInvented(_Criterion):
    """Strings in the final reply that match ``patterns`` (regular expressions,
    e.g. flight numbers) must appear in some tool result or user message."""

    kind: Literal["auto"] = "auto"
    check: Literal["no_invented"]
    patterns: list[str]


class StatusIn(_Criterion):
    kind: Literal["auto"] = "auto"
    check: Literal["status_in"]
    statuses: list[str]


class ToolCalled(_Criterion):
    """Each of ``tools`` was called at least once (with ``mode: any``, one of them)."""

    kind: Literal["auto"] = "auto"
    check: Literal["tool_called"]
    tools: list[str]
    mode: Literal["all", "any"] = "all"


class Rubric(_Criterion):
    """A criterion only a judge (LLM or human) can decide."""

    kind: Literal["judge"]
    check: Literal["rubric"] = "rubric"
    rubric: str
    pass_when: str = ""
    fail_when: str = ""


AutoCriterion = Annotated[
    Union[CallCount, IdenticalCalls, Strategies, QuestionsAsked, Mentions, NoInvented, StatusIn, ToolCalled],
    Field(discriminator="check"),
]


def _criterion_discriminator(value: Any) -> str:
    if isinstance(value, dict):
        return "judge" if value.get("kind") == "judge" else "auto"
    return "judge" if getattr(value, "kind", None) == "judge" else "auto"


Criterion = Annotated[
    Union[Annotated[AutoCriterion, Tag("auto")], Annotated[Rubric, Tag("judge")]],
    Discriminator(_criterion_discriminator),
]


# A dimension is an open label (a suite declares which way its rates are
# better, see tether.plugins.Suite); the C4 suite uses LD, DR, PA and AR.
Dimension = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")]


class MockToolSpec(_Strict):
    """A tool declared by schema alone: the case's ``tool_mock`` / ``tool_intercept``
    answer it; a call no mock matches gets a ``not_found`` error."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    side_effect: bool = False


# -- examples: scripted behaviours with the verdicts they should get ---------------------
class ExampleStep(_Strict):
    """One step of an example: a tool call (``call`` with ``args``, ``times``
    identical calls; its result is what the case's tools answer unless
    ``result`` or ``error`` gives it), a question to the user (``ask``, with the
    user's ``answer`` if any), or the final reply (``reply``)."""

    call: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    times: int = Field(default=1, ge=1, le=100)
    result: Any = None
    error: str | None = None
    ask: Text | None = None
    answer: Text | None = None
    reply: Text | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "ExampleStep":
        kinds = [k for k in ("call", "ask", "reply") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("a step is one of call: TOOL (with args), ask: QUESTION or reply: FINAL TEXT"
                             + (f"; this one has {' and '.join(kinds)}" if kinds else ""))
        return self


ExpectedVerdict = Literal["pass", "fail", "unclear"]


class Example(_Strict):
    """A scripted behaviour and the verdict it should get per criterion
    (``tether case test`` runs it without a model)."""

    name: str = Field(min_length=1, max_length=120)
    description: str = ""
    steps: list[ExampleStep] = Field(min_length=1)
    status: Literal["completed", "awaiting_user", "failed", "needs_human", "step_limit", "rejected",
                    "loop_aborted", "budget_exceeded"] | None = None
    expect: dict[str, ExpectedVerdict] = Field(min_length=1)

    @model_validator(mode="after")
    def _bounded(self) -> "Example":
        calls = sum(step.times for step in self.steps if step.call is not None)
        if calls > MAX_EXAMPLE_CALLS:
            raise ValueError(f"an example makes at most {MAX_EXAMPLE_CALLS} tool calls (this one: {calls})")
        return self


class Case(_Strict):
    version: Annotated[int, AfterValidator(_case_version)] = CASE_VERSION
    id: CaseId
    title: str
    suite: str = ""          # set from the suite the file was loaded from when empty
    dimension: Dimension
    difficulty: Literal["easy", "medium", "hard"] = "hard"
    context_type: Literal["synthetic", "organic"] = "synthetic"
    failure_injection: bool = False
    skill_enabled: bool = False
    scoring: list[Literal["auto", "judge", "human"]] = Field(default_factory=lambda: ["auto"])
    input: CaseInput
    tools: list[str] = Field(default_factory=list, description="the tools the agent sees, by name (from the "
                             "world, the toolset factory or mock_tools); empty with a toolset: all of its tools")
    world: str | None = Field(default=None, description="the registered world (tool catalog) tools come from; "
                              "default: the one world that has every named tool")
    toolset: str | None = Field(default=None, description="'package.module:factory' returning a ToolSet of your "
                                "own tools")
    mock_tools: list[MockToolSpec] = Field(default_factory=list, description="tools declared by schema, answered "
                                           "only by this case's tool_mock / tool_intercept")
    tool_config: list[ToolConfig] = Field(default_factory=list)
    persona: Persona | None = None
    max_steps: int = Field(default=30, ge=1, le=MAX_STEPS)
    language: Literal["zh", "en"] | None = Field(default=None, description="the language of what the model reads "
                                                 "from tether (hints, the budget's ledger, finish-up requests); "
                                                 "default: zh when the title or input has Chinese characters, else en")
    expected_behavior: list[str] = Field(default_factory=list)
    pass_description: str = ""
    fail_description: str = ""
    criteria: list[Criterion] = Field(min_length=1)
    examples: list[Example] = Field(default_factory=list, description="scripted behaviours with the verdicts "
                                    "they should get; tether case test runs them without a model")
    notes: str = ""

    @property
    def run_language(self) -> str:
        """``language``, else detected from the case's text (tether.i18n)."""
        from ..i18n import detect_language

        return self.language or detect_language(self.title, self.input.message,
                                                *(t.content for t in self.input.history))

    @model_validator(mode="before")
    @classmethod
    def _single_config(cls, data: Any) -> Any:
        # The seed gives one config object per case; accept it without a list.
        if isinstance(data, dict) and isinstance(data.get("tool_config"), dict):
            data = {**data, "tool_config": [data["tool_config"]]}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> "Case":
        if not self.input.message and not self.input.history:
            raise ValueError("input needs a message or a history")
        ids = [c.id for c in self.criteria]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"duplicate criterion ids: {sorted(dupes)}")
        return self

    @property
    def configured_tools(self) -> set[str]:
        names: set[str] = set()
        for cfg in self.tool_config:
            if isinstance(cfg, ToolIntercept):
                names.update(cfg.tools)
            else:
                names.update(m.tool for m in cfg.mocked_calls)
        return names

    @property
    def auto_criteria(self) -> list:
        return [c for c in self.criteria if c.kind == "auto"]

    @property
    def judge_criteria(self) -> list[Rubric]:
        return [c for c in self.criteria if c.kind == "judge"]


def case_json_schema() -> dict[str, Any]:
    return Case.model_json_schema(by_alias=True)
