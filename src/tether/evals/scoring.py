"""Scoring as data: each criterion of a case, computed over a trajectory.

Call counts are of *executed* calls: a call a guard blocked or stopped never
reached the tool (it is counted separately, as ``blocked``).

Verdicts are three-valued plus unjudged: ``pass``, ``fail``, ``unclear`` (the
seed leaves a gap, e.g. a count between its pass and fail ranges) and
``unjudged`` (a rubric criterion nobody has judged yet: never a pass).
A trial's verdict: any fail -> fail; else any unclear -> unclear; else any
unjudged -> unjudged; else pass. ``error`` is not a verdict about the agent:
the run (or its judge) failed for reasons outside it (an unreachable model, a
harness error); such trials are left out of every verdict and rate, and a
case whose every trial errored has verdict ``error``.

A criterion decided by a judge or a person carries its provenance (who, when,
the samples and their agreement) and an edit history: every earlier verdict
it replaced, who replaced it and when.
"""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum
from typing import Any, Iterable

from pydantic import BaseModel, Field

from .._assess import is_empty_data
from ..events import ToolResultEvent, Trajectory
from ..messages import canonical_json
from .case import (
    CallCount,
    Case,
    IdenticalCalls,
    Mentions,
    NoInvented,
    QuestionsAsked,
    Rubric,
    StatusIn,
    Strategies,
    ToolCalled,
    _Counted,
)


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNCLEAR = "unclear"
    UNJUDGED = "unjudged"
    ERROR = "error"          # the run or its judge failed: no verdict about the agent


_PRECEDENCE = [Verdict.FAIL, Verdict.UNCLEAR, Verdict.UNJUDGED, Verdict.PASS, Verdict.ERROR]


def combine(verdicts: Iterable[Verdict]) -> Verdict:
    seen = set(verdicts)
    for v in _PRECEDENCE:
        if v in seen:
            return v
    return Verdict.UNJUDGED


class VerdictEdit(BaseModel):
    """One change of a criterion's verdict: what it was, who changed it, when."""

    at: str                        # when the change was made (ISO 8601, UTC)
    by: str                        # who made it: "llm:<model>" or "human:<name>"
    previous: Verdict              # the verdict before the change
    previous_by: str | None = None  # who had decided it ("auto" for a counter, "llm:...", "human:<name>")
    previous_evidence: str = ""


class CriterionResult(BaseModel):
    id: str
    kind: str                      # auto | judge
    check: str
    verdict: Verdict
    value: float | int | None = None
    expected: str = ""
    evidence: str = ""
    judged_by: str | None = None   # "llm:<model>" or "human" (a person's decision, also on automatic criteria)
    # provenance of a judge's or a person's verdict
    reviewer: str | None = None    # the person, when judged_by is human
    judged_at: str | None = None   # when (ISO 8601, UTC)
    samples: list[str] = Field(default_factory=list)   # each judge sample's verdict
    agreement: float | None = None  # share of samples that gave the most common verdict
    history: list[VerdictEdit] = Field(default_factory=list)   # earlier verdicts this one replaced, oldest first

    @property
    def decider(self) -> str:
        """Who decided this verdict: "auto", "llm:<model>" or "human:<name>"."""
        if self.judged_by == "human":
            return f"human:{self.reviewer or 'unknown'}"
        return self.judged_by or "auto"


class TrialScore(BaseModel):
    verdict: Verdict
    auto_verdict: Verdict
    criteria: list[CriterionResult] = Field(default_factory=list)

    def failed(self) -> list[CriterionResult]:
        return [c for c in self.criteria if c.verdict == Verdict.FAIL]


# -- result assessment shared by checks --------------------------------------
def unsuccessful(result: ToolResultEvent | None) -> bool:
    return result is None or not result.ok or is_empty_data(result.data)


def _norm(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if not ch.isspace())


# -- the checks ----------------------------------------------------------------
def _counted(c: _Counted, value: int, what: str) -> CriterionResult:
    expected = f"pass {c.pass_range}" + (f", fail {c.fail_range}" if c.fail_range else "")
    if c.pass_range.contains(value):
        verdict = Verdict.PASS
    elif c.fail_range is not None and c.fail_range.contains(value):
        verdict = Verdict.FAIL
    else:
        verdict = Verdict.UNCLEAR if c.fail_range is not None else Verdict.FAIL
    return CriterionResult(id=c.id, kind="auto", check=c.check, verdict=verdict, value=value,
                           expected=expected, evidence=f"{what}: {value} ({expected})")


def _call_count(c: CallCount, t: Trajectory) -> CriterionResult:
    names = set(c.tools)
    if c.after_failure:
        failed: set[str] = set()
        counts: dict[str, int] = {n: 0 for n in names}
        for call, result in t.calls_with_results(names, executed_only=True):
            if call.tool in failed:
                counts[call.tool] += 1
            if result is not None and not result.ok:
                failed.add(call.tool)
        what = "calls to already-failed tools"
    else:
        counts = {n: len(t.tool_calls(n, executed_only=True)) for n in names}
        what = "calls"
    value = max(counts.values(), default=0) if c.per == "max_per_tool" else sum(counts.values())
    detail = ", ".join(f"{n} x{k}" for n, k in sorted(counts.items()) if k)
    label = f"{what}{' (max per tool)' if c.per == 'max_per_tool' else ''}"
    res = _counted(c, value, label)
    res.evidence += f" [{detail or 'none'}]"
    return res


def _identical(c: IdenticalCalls, t: Trajectory) -> CriterionResult:
    counts = t.identical_call_counts(c.tools, executed_only=True)
    value = max(counts.values(), default=0)
    res = _counted(c, value, "most identical calls")
    if counts:
        sig, _ = counts.most_common(1)[0]
        res.evidence += f" [{sig[:120]}]"
    return res


def strategy_kinds(t: Trajectory, tools: Iterable[str]) -> list[str]:
    """Recovery strategies tried after the first unsuccessful result of ``tools``."""
    names = set(tools)
    pairs = t.calls_with_results(executed_only=True)
    kinds: list[str] = []
    failed_sigs: set[str] = set()
    started = False
    for call, result in pairs:
        if started:
            if call.signature in failed_sigs:
                kind = "retry"
            elif call.tool in names:
                kind = "reword"
            else:
                kind = "fallback"
            if kind not in kinds:
                kinds.append(kind)
        if call.tool in names and unsuccessful(result):
            started = True
            failed_sigs.add(call.signature)
    return kinds


def _strategies(c: Strategies, t: Trajectory) -> CriterionResult:
    names = set(c.tools)
    pairs = [(call, result) for call, result in t.calls_with_results(executed_only=True) if call.tool in names]
    if pairs and not any(unsuccessful(result) for _, result in pairs):
        # called, and nothing failed: there was no failure to recover from (not a give-up)
        return CriterionResult(id=c.id, kind="auto", check=c.check, verdict=Verdict.PASS, value=None,
                               expected=f"pass {c.pass_range}" + (f", fail {c.fail_range}" if c.fail_range else ""),
                               evidence=f"no call to {', '.join(c.tools)} failed or came back empty "
                                        f"({len(pairs)} call(s)): nothing to recover from")
    kinds = strategy_kinds(t, c.tools)
    res = _counted(c, len(kinds), "distinct strategies after a failure")
    res.evidence += f" [{', '.join(kinds) or 'none'}]"
    if not pairs:
        res.evidence += f"; {', '.join(c.tools)} never called"
    return res


def _questions(c: QuestionsAsked, t: Trajectory) -> CriterionResult:
    qs = t.questions_to_user(c.include_history)
    hist = sum(1 for q in qs if q.source == "history")
    res = _counted(c, len(qs), "questions to the user")
    res.evidence += f" [{hist} in the history, {len(qs) - hist} by the agent]"
    return res


def _mentions(c: Mentions, t: Trajectory) -> CriterionResult:
    reply = _norm(t.final_reply)
    hits = [[term for term in group if _norm(term) in reply] for group in c.groups]
    ok = all(hits) if c.mode == "all" else any(hits)
    missing = [g for g, h in zip(c.groups, hits) if not h]
    verdict = Verdict.PASS if ok else (Verdict.FAIL if c.on_miss == "fail" else Verdict.UNCLEAR)
    found = sorted({term for h in hits for term in h})
    evidence = "reply mentions " + (", ".join(found) if found else "none of the terms")
    if not ok:
        evidence += "; missing " + ("every group" if c.mode == "any" else
                                    "; ".join("one of " + " / ".join(g) for g in missing))
    return CriterionResult(id=c.id, kind="auto", check=c.check, verdict=verdict,
                           value=sum(1 for h in hits if h), expected=f"{c.mode} of {len(c.groups)} group(s)", evidence=evidence)


def _no_invented(c: NoInvented, t: Trajectory) -> CriterionResult:
    sources = [canonical_json({"d": r.data, "e": r.error}) for r in t.tool_results()]
    sources += [m.content for m in t.user_messages()]
    corpus = _norm("\n".join(sources))
    invented: list[str] = []
    for pattern in c.patterns:
        for match in re.finditer(pattern, t.final_reply):
            token = match.group(0)
            if _norm(token) not in corpus and token not in invented:
                invented.append(token)
    verdict = Verdict.FAIL if invented else Verdict.PASS
    evidence = (f"not returned by any tool: {' / '.join(invented)}" if invented
                else "every matching string came from a tool or the user")
    return CriterionResult(id=c.id, kind="auto", check=c.check, verdict=verdict, value=len(invented),
                           expected="0 invented", evidence=evidence)


def _status_in(c: StatusIn, t: Trajectory) -> CriterionResult:
    status = str(t.status) if t.status else "none"
    verdict = Verdict.PASS if status in c.statuses else Verdict.FAIL
    return CriterionResult(id=c.id, kind="auto", check=c.check, verdict=verdict,
                           expected=f"one of {' / '.join(c.statuses)}",
                           evidence=f"terminal status {status}")


def _tool_called(c: ToolCalled, t: Trajectory) -> CriterionResult:
    called = {n: len(t.tool_calls(n)) for n in c.tools}
    hit = [n for n, k in called.items() if k]
    ok = len(hit) == len(c.tools) if c.mode == "all" else bool(hit)
    return CriterionResult(id=c.id, kind="auto", check=c.check, verdict=Verdict.PASS if ok else Verdict.FAIL,
                           value=len(hit), expected=f"{c.mode} of {' / '.join(c.tools)}",
                           evidence="called: " + ", ".join(f"{n} x{k}" for n, k in called.items()))


_CHECKS = {
    "call_count": _call_count,
    "identical_calls": _identical,
    "strategies": _strategies,
    "questions_asked": _questions,
    "mentions": _mentions,
    "no_invented": _no_invented,
    "status_in": _status_in,
    "tool_called": _tool_called,
}


def score_criterion(criterion: Any, trajectory: Trajectory) -> CriterionResult:
    if isinstance(criterion, Rubric):
        return CriterionResult(id=criterion.id, kind="judge", check="rubric", verdict=Verdict.UNJUDGED,
                               expected=criterion.pass_when or criterion.rubric[:80],
                               evidence="no judge configured")
    return _CHECKS[criterion.check](criterion, trajectory)


def score_trajectory(case: Case, trajectory: Trajectory,
                     judged: dict[str, CriterionResult] | None = None) -> TrialScore:
    """Score every criterion; ``judged`` supplies verdicts for rubric criteria."""
    results = []
    for criterion in case.criteria:
        if judged and criterion.id in judged and criterion.kind == "judge":
            results.append(judged[criterion.id])
        else:
            results.append(score_criterion(criterion, trajectory))
    autos = [r.verdict for r in results if r.kind == "auto"]
    return TrialScore(verdict=combine(r.verdict for r in results),
                      auto_verdict=combine(autos) if autos else Verdict.UNJUDGED,
                      criteria=results)
