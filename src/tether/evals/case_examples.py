"""Case tests: a case's ``examples:`` run without a model.

An example is a scripted behaviour (tool calls, questions, a final reply) and
the verdict it should get per criterion. :func:`example_trajectory` turns it
into the trajectory a run would record: the case's history and message, then
each step; a call's result is what the case's own tools answer (its mocks,
intercepts and sequences, the world or the toolset), unless the step gives
``result`` or ``error``. :func:`test_case` scores it with the case's criteria
and reports every criterion whose verdict differs from the expected one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import yaml

from ..errors import FileLocation
from .case import Case, Example

Problem = tuple[FileLocation, str]


@dataclass(frozen=True)
class ExampleMismatch:
    case_id: str
    example: str
    criterion: str
    expected: str
    got: str
    evidence: str
    description: str

    def __str__(self) -> str:
        text = (f"{self.case_id}: example {self.example!r}: criterion {self.criterion} expected {self.expected}, "
                f"got {self.got}: {self.evidence}")
        if self.description:
            text += f"\n    the criterion: {self.description}"
        return text


@dataclass(frozen=True)
class CaseTestResult:
    case_id: str
    examples: int
    checked: int                 # criterion verdicts compared
    mismatches: list[ExampleMismatch]

    @property
    def ok(self) -> bool:
        return not self.mismatches


async def _trajectory(case: Case, example: Example):
    from ..status import TerminalStatus
    from ..testing.builder import TrajectoryBuilder
    from .world import case_toolset

    tools = case_toolset(case)
    b = TrajectoryBuilder(case_id=case.id, model=f"example:{example.name}")
    for turn in case.input.history:
        b.history(turn.role, turn.content, question=turn.question)
    if case.input.message:
        b.user(case.input.message)
    last = None
    for step in example.steps:
        last = step
        if step.call is not None:
            for _ in range(step.times):
                if step.error is not None:
                    b.call(step.call, step.args, error=step.error, source="example")
                elif "result" in step.model_fields_set:
                    b.call(step.call, step.args, data=step.result, source="example")
                else:
                    r = await tools.call(step.call, dict(step.args))
                    b.call(step.call, step.args, data=r.data, error=r.error if not r.ok else None,
                           error_type=r.error_type or "tool_error", source=r.source)
        elif step.ask is not None:
            b.ask(step.ask, step.answer)
        else:
            return b.final(step.reply or "", TerminalStatus(example.status or "completed"))
    default = "awaiting_user" if last is not None and last.ask is not None and last.answer is None else "completed"
    return b.end(TerminalStatus(example.status or default))


def example_trajectory(case: Case, example: Example):
    """The trajectory a run following ``example`` would record."""
    return asyncio.run(_trajectory(case, example))


def test_case(case: Case) -> CaseTestResult:
    """Run every example of ``case``; every criterion verdict that differs from its expectation."""
    from .scoring import score_trajectory

    by_id = {c.id: c for c in case.criteria}
    mismatches: list[ExampleMismatch] = []
    checked = 0
    for example in case.examples:
        score = score_trajectory(case, example_trajectory(case, example))
        results = {r.id: r for r in score.criteria}
        for cid, want in example.expect.items():
            got = results.get(cid)
            if got is None:
                continue            # validation reports an unknown id
            checked += 1
            if str(got.verdict) != want:
                mismatches.append(ExampleMismatch(case.id, example.name, cid, want, str(got.verdict), got.evidence,
                                           by_id[cid].description))
    return CaseTestResult(case.id, len(case.examples), checked, mismatches)


test_case.__test__ = False       # not a pytest test


# -- validation ---------------------------------------------------------------------------
def example_problems(data: dict[str, Any], root: yaml.Node | None, path: str,
                     schemas: dict[str, dict[str, Any]]) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings): expectations naming unknown or judge criteria, calls to tools the
    agent does not see or with arguments the tool does not take; a case with no examples."""
    from .case_checks import unknown_argument
    from .case_yaml import key_node, location, node_at

    def at(loc: tuple[Any, ...], key: bool = False) -> FileLocation:
        node = key_node(root, loc) if key else None
        return location(path, node or node_at(root, loc), ".".join(map(str, loc)))

    examples = data.get("examples")
    crits = data.get("criteria") if isinstance(data.get("criteria"), list) else []
    # only well-formed entries: a malformed one (a list for an id, a number for a tool) is the
    # schema's error, reported with its line; here it must not crash the checks of the rest
    kinds = {c["id"]: c.get("kind", "auto") for c in crits if isinstance(c, dict) and isinstance(c.get("id"), str)}
    if not examples and "auto" not in kinds.values():
        return [], []            # only a judge decides this case: an example could check nothing
    if not examples:
        return [], [(location(path, root if root is not None else None), "no examples: add an examples: block "
                     "(a passing and a failing behaviour with their expected verdicts) so tether case test can "
                     "check the criteria decide as meant (see docs/cases.md, Examples)")]
    if not isinstance(examples, list):
        return [], []
    tools = [t for t in data["tools"] if isinstance(t, str)] if isinstance(data.get("tools"), list) else []
    mocks = [m["name"] for m in data["mock_tools"] if isinstance(m, dict) and isinstance(m.get("name"), str)] \
        if isinstance(data.get("mock_tools"), list) else []
    visible = set(tools) or set(mocks) or set(schemas)
    errors: list[Problem] = []
    for i, ex in enumerate(examples):
        if not isinstance(ex, dict):
            continue
        expect = ex.get("expect")
        for cid in expect if isinstance(expect, dict) else {}:
            if cid not in kinds:
                errors.append((at(("examples", i, "expect", cid), key=True),
                               f"no criterion {cid!r} in this case; criteria: {', '.join(map(str, kinds))}"))
            elif kinds[cid] == "judge":
                errors.append((at(("examples", i, "expect", cid), key=True),
                               f"criterion {cid!r} is decided by a judge; examples run without a model, so they "
                               "expect verdicts of automatic criteria only"))
        steps = ex.get("steps")
        for j, step in enumerate(steps if isinstance(steps, list) else []):
            if not isinstance(step, dict) or not isinstance(step.get("call"), str):
                continue
            tool = step["call"]
            if visible and tool not in visible:
                errors.append((at(("examples", i, "steps", j, "call")),
                               f"the example calls {tool!r}, which the agent does not see (its tools: "
                               f"{', '.join(sorted(visible))})"))
                continue
            args = step.get("args")
            for name in args if isinstance(args, dict) and tool in schemas else {}:
                msg = unknown_argument(tool, str(name), schemas[tool])
                if msg:
                    errors.append((at(("examples", i, "steps", j, "args", name), key=True), msg))
    return errors, []
