"""The finish-up answer: a request with no tools after tool calls were made.

When a guard stops a run, the runner asks the model once more, offering no
tools, for a final answer. Whatever their temperament, the policies then
answer the way ``policy:steady`` does when it stops on its own: what was
tried (calls per tool), why it did not work (the tools' own errors and
messages), what was found, and what the user can do next.

The tool specs are not in such a request, so the outcomes are rebuilt from
the calls in the conversation alone: a call whose id argument came out of an
earlier result joins that result's chain; a web search attaches to the chain
before it. The answer itself is :func:`~._reply.compose`, steady's composer.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import date
from typing import Any

from ...messages import Message, ToolSpec
from ._assess import Assessment
from ._extract import Task, core_words
from ._lexicon import bigrams, norm
from ._planner import Goal, classify, tool_infos
from ._program import GoalOutcome, Program, Step
from ._transcript import AssessedCall, Conversation, QAEvent, Replay, ToolEvent

__all__ = ["finish_up", "is_finish_up"]

_REASON = re.compile(r"[（(](.+)[）)]", re.S)
_REASON_MAX = 120


def is_finish_up(tools: list[ToolSpec], conv: Conversation) -> bool:
    """No tools offered, but the current task already has tool calls with results."""
    return not tools and any(isinstance(e, ToolEvent) for e in conv.events)


def not_run(a: Assessment | None) -> bool:
    """A result the runtime wrote for a call a guard stopped or blocked: the tool never ran."""
    return a is not None and not a.status.usable and (a.error_type or "").startswith("guard")


def stop_reason(messages: list[Message]) -> str | None:
    """The reason in the finish-up request: a closing system message, or the note
    tether appended to the last tool result or user turn."""
    if not messages:
        return None
    if messages[-1].role == "system":
        text = messages[-1].content or ""
    else:
        from ...runtime.loop import split_notes

        notes = split_notes(messages[-1].content or "")[1]
        if not notes:
            return None
        text = notes[-1]
    text = " ".join(text.split())
    m = _REASON.search(text)
    reason = (m.group(1) if m else text).strip()
    return reason if len(reason) <= _REASON_MAX else reason[:_REASON_MAX - 1] + "…"


def finish_up(mode: str, task: Task, conv: Conversation, messages: list[Message], step: int, today: date) -> str:
    tools = [e for e in conv.events if isinstance(e, ToolEvent)]
    ran = [e for e in tools if not not_run(e.assessment)]
    replay = Replay(conv.events, step)
    replay.calls = [AssessedCall(e.name, dict(e.arguments), e.assessment) for e in ran if e.assessment is not None]
    replay.questions = [(e.question, e.reply) for e in conv.events if isinstance(e, QAEvent)]
    p = Program(mode, task, tool_infos(_specs(tools)), replay, today)
    p.outcomes = _outcomes(p, task)
    p.stopped = stop_reason(messages) or ""
    p.held = dict(Counter(e.name for e in tools if not_run(e.assessment)))
    reached = {o.item for o in p.outcomes}
    p.untried = [i for i in task.items if i not in reached] if task.items and len(reached - {None}) else []
    p.untried += _untried(task, replay.calls, len([o for o in p.outcomes if o.item is None]) or 1)
    from ._reply import compose

    return compose(p)


# -- the tools, as far as the calls show them ------------------------------------------------
def _specs(events: list[ToolEvent]) -> list[ToolSpec]:
    seen: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        seen.setdefault(e.name, []).append(e.arguments)
    specs = []
    for name, calls in seen.items():
        keys = list(dict.fromkeys(k for args in calls for k in args))
        props = {k: {"type": _type(next(a[k] for a in calls if k in a))} for k in keys}
        required = [k for k in keys if all(k in a for a in calls)]
        specs.append(ToolSpec(name=name, description="", parameters={"type": "object", "properties": props,
                                                                      "required": required}))
    return specs


def _type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "integer" if isinstance(value, int) else "number"
    return "array" if isinstance(value, list) else "string"


# -- calls -> outcomes ----------------------------------------------------------------------
class _Group:
    def __init__(self, item: str | None, web_only: bool = False):
        self.item, self.web_only = item, web_only
        self.calls: list[AssessedCall] = []
        self.web: list[AssessedCall] = []

    def tools(self) -> list[str]:
        return list(dict.fromkeys(c.name for c in self.calls))

    def holds(self, value: str) -> bool:
        return any(value in _blob(c.assessment.data) for c in self.calls)


def _blob(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str) if data is not None else ""


def _item(task: Task, arguments: dict[str, Any]) -> str | None:
    text = norm(" ".join(str(v) for v in arguments.values())).replace(" ", "")
    return next((i for i in task.items if norm(i).replace(" ", "") in text), None)


def _outcomes(p: Program, task: Task) -> list[GoalOutcome]:
    groups: list[_Group] = []
    for c in p.replay.calls:
        if p.infos[c.name].is_web:
            if groups and not groups[-1].web_only:
                groups[-1].web.append(c)         # a fallback for the chain before it
            else:
                if not groups:
                    groups.append(_Group(None, web_only=True))
                groups[-1].calls.append(c)
            continue
        ids = [str(v) for k, v in c.arguments.items()
               if isinstance(v, (str, int)) and classify(k, {}, "") == "id" and len(str(v)) >= 2]
        item = _item(task, c.arguments)
        group = next((g for g in reversed(groups) if any(g.holds(v) for v in ids)), None) if ids else None
        if group is None:
            group = next((g for g in reversed(groups) if c.name in g.tools() and g.item == item), None)
        if group is None:
            group = _Group(item)
            groups.append(group)
        group.calls.append(c)

    outcomes = []
    goals = 0
    for g in groups:
        clause = None
        if g.item is None and not g.web_only:
            clause = task.clauses[goals] if 0 < goals < len(task.clauses) else None
            goals += 1
        out = GoalOutcome(Goal(clause, tuple(g.tools())), g.item)
        for tool in g.tools():
            mine = [c for c in g.calls if c.name == tool]
            good = [c for c in mine if c.assessment.status.usable]
            if good:
                out.steps.append(Step(tool, good[-1].arguments, good[-1].assessment))
            elif out.failed is None:
                out.failed = Step(tool, mine[-1].arguments, mine[-1].assessment)
        out.passes = max(1, sum(1 for c in g.calls if c.name == g.calls[0].name))
        if g.web:
            web = next((c for c in reversed(g.web) if c.assessment.status.usable), g.web[-1])
            out.web = Step(web.name, web.arguments, web.assessment)
        outcomes.append(out)
    return outcomes


def _untried(task: Task, calls: list[AssessedCall], attempted: int) -> list[str]:
    """Parts of the request no call got to: later clauses nothing in the calls or results speaks of."""
    seen = bigrams(" ".join(f"{c.name} {_blob(c.arguments)} {c.assessment.reason} {_blob(c.assessment.data)}"
                            for c in calls))
    out = []
    for clause in task.clauses[attempted:]:
        words = bigrams(core_words(clause) or clause)
        if words and not words & seen:
            out.append(clause)
    return out
