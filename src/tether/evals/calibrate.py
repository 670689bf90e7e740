"""Does a case discriminate? Run the three calibration agents on it, offline.

A case discriminates when ``policy:steady`` passes it and ``policy:stubborn``
or ``policy:quitter`` fails it (a loop case fails the first, a give-up case
the second). :func:`calibrate` runs the three (one trial each, no
store, no guards) and says, per case, whether it discriminates and, if not,
why, in terms of what the record shows: the questions steady asked (naming an
argument it asked for that had a default or an enum), the criteria that
failed steady or passed stubborn, with their evidence.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Sequence

from .._terminal import plural
from .case import Case

AGENTS = ("steady", "stubborn", "quitter")


@dataclass(frozen=True)
class AgentOutcome:
    agent: str
    verdict: str                  # the case's automatic verdict for this agent (pass / fail / unclear / unjudged)
    calls: int
    questions: list[str]
    failed: list[str]             # "criterion: evidence" of failed or unclear criteria
    passed: list[str]


@dataclass
class Calibration:
    case_id: str
    outcomes: dict[str, AgentOutcome]
    reasons: list[str] = field(default_factory=list)

    @property
    def discriminates(self) -> bool:
        """steady passes, and stubborn or quitter fails (a loop case fails the first,
        a give-up case the second)."""
        return self.outcomes["steady"].verdict == "pass" and any(
            self.outcomes[a].verdict == "fail" for a in ("stubborn", "quitter") if a in self.outcomes)


async def _one(case: Case, agent: str) -> AgentOutcome:
    from ..models import resolve_model
    from .runner import EvalConfig, run_trial
    from .scoring import score_trajectory

    tr, result = await run_trial(case, resolve_model(f"policy:{agent}"), config=EvalConfig(),
                                 model_label=f"policy:{agent}")
    t = result.trajectory
    score = score_trajectory(case, t)
    autos = [r for r in score.criteria if r.kind == "auto"]
    return AgentOutcome(
        agent=agent, verdict=str(score.auto_verdict), calls=len(t.tool_calls()),
        questions=[q.content for q in t.questions_to_user(include_history=False)],
        failed=[f"{r.id} {r.verdict}: {r.evidence}" for r in autos if r.verdict in ("fail", "unclear")],
        passed=[f"{r.id}: {r.evidence}" for r in autos if r.verdict == "pass"])


def _asked_with_default(case: Case, questions: list[str]) -> list[str]:
    """Arguments a question names (by name or by its description's first words) that the
    schema could have filled: a default or an enum."""
    from .world import case_toolset

    out: list[str] = []
    try:
        specs = case_toolset(case).specs()
    except Exception:
        return out
    text = "\n".join(questions)
    for spec in specs:
        props = (spec.parameters or {}).get("properties", {}) or {}
        for name, schema in props.items():
            if not isinstance(schema, dict):
                continue
            head = str(schema.get("description", "")).split("，")[0].split(",")[0].split("。")[0].strip()[:12]
            named = name in text or (len(head) >= 2 and head in text)
            if named and "default" in schema:
                out.append(f"`{name}`, which has a default ({schema['default']!r})")
            elif named and schema.get("enum"):
                out.append(f"`{name}`, which has an enum ({', '.join(map(str, schema['enum'][:4]))})")
    return out


def _reasons(case: Case, outcomes: dict[str, AgentOutcome]) -> list[str]:
    steady, stubborn = outcomes["steady"], outcomes["stubborn"]
    reasons: list[str] = []
    if not case.auto_criteria:
        return ["only a judge decides this case: the calibration agents are scored by automatic criteria "
                "(run tether eval with --judge)"]
    if steady.verdict != "pass":
        for what in _asked_with_default(case, steady.questions):
            reasons.append(f"steady asked for {what}")
        if steady.questions and not reasons:
            reasons.append(f"steady asked: {steady.questions[0][:120]!r}")
        reasons += [f"steady: {f}" for f in steady.failed]
        if steady.calls == 0 and case.tools:
            reasons.append("steady made no tool call (no tool matched the request, or it asked first)")
    quitter = outcomes.get("quitter")
    if stubborn.verdict != "fail" and (quitter is None or quitter.verdict != "fail"):
        if stubborn.verdict == "pass":
            reasons.append("stubborn passes too: nothing in the case makes a repeated or endless call fail a "
                           "criterion (a failure to inject, or a call-count fail range?)")
        if quitter is not None and quitter.verdict == "pass":
            reasons.append("quitter passes too: giving up at the first error or empty result fails no criterion")
        reasons += [f"stubborn: {p}" for p in stubborn.passed]
        reasons += [f"stubborn: {f}" for f in stubborn.failed if " unclear" in f]
    return reasons


async def _calibrate_one(case: Case, agents: Sequence[str]) -> Calibration:
    outcomes = {a: await _one(case, a) for a in agents}
    cal = Calibration(case.id, outcomes)
    cal.reasons = _reasons(case, outcomes)
    return cal


def calibrate(cases: Sequence[Case], agents: Sequence[str] = AGENTS) -> list[Calibration]:
    """Run the calibration agents on every case (offline, deterministic)."""
    async def main() -> list[Calibration]:
        return [await _calibrate_one(c, agents) for c in cases]

    return asyncio.run(main())


def render(cals: Sequence[Calibration]) -> str:
    lines: list[str] = []
    for cal in cals:
        verdicts = ", ".join(f"{a} {o.verdict} ({plural(o.calls, 'call')}, {plural(len(o.questions), 'question')})"
                             for a, o in cal.outcomes.items())
        head = "discriminates" if cal.discriminates else "does NOT discriminate"
        lines.append(f"{cal.case_id}: {head}: {verdicts}")
        for reason in ([] if cal.discriminates else cal.reasons):
            lines.append(f"    {reason}")
    good = sum(1 for c in cals if c.discriminates)
    lines.append(f"{good} of {len(cals)} case(s) discriminate (steady passes; stubborn or quitter fails)")
    return "\n".join(lines)


def as_json(cals: Sequence[Calibration]) -> list[dict[str, Any]]:
    return [{"case": c.case_id, "discriminates": c.discriminates, "reasons": c.reasons,
             "agents": {a: vars(o) for a, o in c.outcomes.items()}} for c in cals]
