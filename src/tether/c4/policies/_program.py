"""The agent program the three policies share, written as a straight program.

It runs against a :class:`~._transcript.Replay`: every ``call``/``ask``
returns what happened on an earlier step, or ends the request with the next
decision. The policy differences are the recovery rules in
:meth:`Program.attempt`, the chain restarts in :meth:`Program.run_chain` and
the question limit in :meth:`Program.ensure_info`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ._assess import Assessment, Status, ids_for
from ._extract import Task, is_city, is_greeting, is_refusal, resolve_date
from ._planner import GENERIC_NAME_TOKENS, Goal, Param, ToolInfo, fill, make_plan
from ._transcript import Replay

STUBBORN, QUITTER, STEADY = "stubborn", "quitter", "steady"
MAX_PAGES = 10          # pages followed after the first


class Finish(Exception):
    """The program's final answer."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


@dataclass
class Step:
    tool: str
    arguments: dict[str, Any]
    assessment: Assessment


@dataclass
class GoalOutcome:
    """What one goal (for one item) produced."""

    goal: Goal
    item: str | None
    steps: list[Step] = field(default_factory=list)       # usable results, chain order
    failed: Step | None = None                             # the tool that failed after recovery
    skipped: str = ""                                      # why the goal was not tried
    passes: int = 1
    relaxed: list[str] = field(default_factory=list)       # constraint params dropped to get results
    web: Step | None = None                                # the web_search fallback

    @property
    def limited(self) -> bool:
        return any(s.assessment.status == Status.INSUFFICIENT for s in self.steps)


class Program:
    def __init__(self, mode: str, task: Task, infos: dict[str, ToolInfo], replay: Replay, today: date):
        self.mode, self.task, self.infos, self.replay, self.today = mode, task, infos, replay, today
        self.plan = make_plan(task, infos)
        self.outcomes: list[GoalOutcome] = []
        self.web_queries: set[str] = set()
        # set for a finish-up answer (see _finish.py): why the run stopped, calls not run, untouched parts
        self.stopped: str | None = None
        self.held: dict[str, int] = {}
        self.untried: list[str] = []

    # -- the program ---------------------------------------------------------------
    def run(self) -> None:
        from ._reply import compose, no_tool, quit_text

        t = self.task
        if is_greeting(t.request):
            raise Finish("您好！请告诉我需要帮您查询或完成什么。")
        if not self.plan.goals:
            if self.plan.web:
                self.plan.goals.append(Goal(None, (self.plan.web,)))
            else:
                raise Finish(no_tool(self))
        try:
            for k, goal in enumerate(self.plan.goals):
                self.run_goal(k, goal)
        except _GiveUp as stop:
            raise Finish(quit_text(self, stop.step)) from None
        raise Finish(compose(self))

    def run_goal(self, k: int, goal: Goal) -> None:
        if self.mode == STEADY and any(self.suspect(name) for name in goal.chain):
            out = GoalOutcome(goal, None, skipped="outage")
            self.outcomes.append(out)
            self.fallback(out)
            return
        self.ensure_info(goal)
        items = self.task.items if k == 0 and self.task.items else (None,)
        for item in items:
            self.run_chain(goal, item)

    # -- information from the user -------------------------------------------------------
    def missing_info(self, goal: Goal) -> tuple[list[Param], bool]:
        hard: list[Param] = []
        soft = False
        for name in goal.chain:
            info = self.infos[name]
            if name in (goal.chain[0], goal.main):
                _, missing = fill(info, self.task, clause=goal.clause, item=(self.task.items or (None,))[0])
                hard += [p for p in missing if p.kind != "id" and p.label not in [h.label for h in hard]]
            if self.task.vague_price and info.param("price") is not None:
                soft = True
        return hard, soft

    def ensure_info(self, goal: Goal) -> None:
        from ._reply import deadlock_text, question_text

        hard, soft = self.missing_info(goal)
        if not hard and not soft:
            return
        refusals = 0
        while True:
            if self.mode != STUBBORN and (refusals >= 2 or len(self.replay.questions) >= 3):
                raise Finish(deadlock_text(self, goal, hard, refusals))
            reply = self.replay.ask(question_text(self, goal, hard, soft))
            if is_refusal(reply):
                refusals += 1
                if not hard and self.mode != STUBBORN:
                    return          # a budget is optional: go on without it
            elif not hard:
                return

    # -- chains ----------------------------------------------------------------------
    def run_chain(self, goal: Goal, item: str | None) -> None:
        passes = 0
        while True:
            passes += 1
            out = self.chain_pass(goal, item)
            out.passes = passes
            if out.failed is not None or out.skipped:
                self.outcomes.append(out)
                self.fallback(out)
                return
            if not out.limited or (self.mode != STUBBORN and passes >= 2):
                self.follow_filters(out)
                self.outcomes.append(out)
                if any(s.assessment.status == Status.PARTIAL for s in out.steps):
                    self.fallback(out)   # fill the gaps from the web when possible
                return

    def chain_pass(self, goal: Goal, item: str | None, ids: dict[str, list[str]] | None = None,
                   only: tuple[str, ...] | None = None) -> GoalOutcome:
        out = GoalOutcome(goal, item)
        ids = dict(ids or {})
        for name in only or goal.chain:
            info = self.infos[name]
            args, missing = fill(info, self.task, item=item, clause=goal.clause, ids=ids, known=self.known())
            if missing:
                continue
            if self.mode == STEADY and self.suspect(name):
                out.skipped = "outage"
                return out
            step, relaxed = self.attempt(info, args, ids)
            out.relaxed += relaxed
            if step.assessment.status.failed:
                out.failed = step
                return out
            out.steps.append(step)
            self.collect_ids(step.assessment.data, ids)
            failed = self.paginate(info, step, ids, out)
            if failed is not None:
                out.failed = failed
                return out
        if not out.steps and out.failed is None:
            out.skipped = "missing"
        return out

    def paginate(self, info: ToolInfo, step: Step, ids: dict[str, list[str]], out: GoalOutcome) -> Step | None:
        """Follow ``has_more`` / ``next`` (every temperament does: paging is not recovery);
        a page that fails after the mode's recovery ends it (returned)."""
        from ._planner import next_page

        for _ in range(MAX_PAGES):
            args = next_page(info, step.arguments, step.assessment.data)
            if args is None or args == step.arguments:
                return None
            step, _ = self.attempt(info, args, ids)
            if step.assessment.status.failed:
                return step
            out.steps.append(step)
            self.collect_ids(step.assessment.data, ids)
        return None

    def known(self) -> dict[str, Any]:
        """Scalar values by key from earlier tool results (first seen wins), for required arguments."""
        out: dict[str, Any] = {}

        def walk(data: Any, depth: int = 0) -> None:
            if depth > 4:
                return
            if isinstance(data, dict):
                for k, v in data.items():
                    if isinstance(v, (dict, list)):
                        walk(v, depth + 1)
                    elif v is not None:
                        out.setdefault(str(k), v)
            elif isinstance(data, list):
                for x in data[:20]:
                    walk(x, depth + 1)

        for c in self.replay.calls:
            if c.assessment.status.usable:
                walk(c.assessment.data)
        return out

    def collect_ids(self, data: Any, ids: dict[str, list[str]]) -> None:
        for info in self.infos.values():
            for p in info.id_params:
                if p.name not in ids:
                    found = ids_for(p.name, data)
                    if found:
                        ids[p.name] = found

    def follow_filters(self, out: GoalOutcome) -> None:
        """Quoted terms the answer must mention: try the next ids until one does."""
        from ._render import mentions_filter

        if self.mode == STUBBORN or not self.task.filters or not out.steps or out.failed:
            return
        if mentions_filter(self.task.filters, out.steps[-1].assessment.data):
            return
        consumers = tuple(n for n in out.goal.chain if self.infos[n].id_params)
        first_ids: dict[str, list[str]] = {}
        for s in out.steps:
            self.collect_ids(s.assessment.data, first_ids)
        for shift in (1, 2):
            ids = {k: v[shift:] for k, v in first_ids.items() if len(v) > shift}
            if not ids or not consumers:
                return
            extra = self.chain_pass(out.goal, out.item, ids, only=consumers)
            out.steps += extra.steps
            if extra.steps and mentions_filter(self.task.filters, extra.steps[-1].assessment.data):
                return

    # -- one call and its recovery ---------------------------------------------------------
    def usable(self, a: Assessment) -> bool:
        if self.mode == STUBBORN:
            return a.status in (Status.GOOD, Status.INSUFFICIENT)
        return a.status.usable

    def attempt(self, info: ToolInfo, args: dict[str, Any], ids: dict[str, list[str]]) -> tuple[Step, list[str]]:
        name = info.name
        a = self.replay.call(name, args)
        if self.usable(a):
            return Step(name, args, a), []
        if self.mode == STUBBORN:
            while not self.usable(a):
                a = self.replay.call(name, args)
            return Step(name, args, a), []
        if self.mode == QUITTER and a.status.failed:
            raise _GiveUp(Step(name, args, a))
        # steady: (1) retry the same call once, twice for transient failures
        if not (a.outage and self.systemic()):
            a = self.replay.call(name, args)
            if self.usable(a):
                return Step(name, args, a), []
            if a.transient and not (a.outage and self.systemic()):
                a = self.replay.call(name, args)
                if self.usable(a):
                    return Step(name, args, a), []
        # (2) at most two variants not tried before (an outage is not about the arguments)
        if a.outage:
            return Step(name, args, a), []
        tried = [args]
        for variant, relaxed in self.variants(info, args, a, ids):
            if len(tried) > 2:
                break
            if variant in tried:
                continue
            tried.append(variant)
            a = self.replay.call(name, variant)
            if self.usable(a):
                return Step(name, variant, a), relaxed
        return Step(name, tried[-1], a), []

    def variants(self, info: ToolInfo, args: dict[str, Any], a: Assessment,
                 ids: dict[str, list[str]]) -> list[tuple[dict[str, Any], list[str]]]:
        reason = (a.reason or "").lower()
        named = [p for p in info.params if p.name in args and (
            p.name.lower() in reason or (p.kind == "date" and ("date" in reason or "日期" in reason)))]
        params = named or [p for p in info.params if p.name in args]
        out: list[tuple[dict[str, Any], list[str]]] = []
        for p in params:
            value = args[p.name]
            if p.kind == "query" and isinstance(value, str):
                tokens = value.split()
                if len(tokens) >= 2:
                    out.append(({**args, p.name: " ".join(reversed(tokens))}, []))
                    rest = tokens[1:] if len(tokens) >= 3 else sorted(tokens, key=len, reverse=True)[:1]
                    out.append(({**args, p.name: " ".join(rest)}, []))
            elif p.kind == "date" and a.bad_format:
                iso = resolve_date(str(value), self.today)
                if iso and iso != value:
                    out.append(({**args, p.name: iso}, []))
            elif p.kind == "id":
                pool = ids.get(p.name, [])
                later = pool[pool.index(value) + 1:] if value in pool else []
                out += [({**args, p.name: v}, []) for v in later[:2]]
            elif p.kind in ("city", "origin", "destination") and isinstance(value, str) and is_city(value):
                toggled = value[:-1] if value.endswith("市") else value + "市"
                out.append(({**args, p.name: toggled}, []))
        for p in info.params:
            # an optional budget that filtered everything out: see what exists without it
            if p.kind == "price" and p.name in args and not p.required and a.status == Status.EMPTY:
                relaxed = ({k: v for k, v in args.items() if k != p.name}, [p.name])
                about_price = any(w in reason for w in ("价格", "price", "元", "预算", "总价"))
                out.insert(0, relaxed) if about_price else out.append(relaxed)
        return out

    # -- outages and fallbacks ------------------------------------------------------------------
    def outage_tools(self) -> set[str]:
        last: dict[str, bool] = {}
        for c in self.replay.calls:
            last[c.name] = c.assessment.outage
        return {n for n, down in last.items() if down}

    def systemic(self) -> bool:
        return len(self.outage_tools()) >= 2

    def suspect(self, name: str) -> bool:
        if self.infos[name].is_web:
            return False
        down = self.outage_tools()
        if name in down:
            return True
        if len(down) < 2:
            return False
        mine = _tokens(name)
        return any(mine & _tokens(d) for d in down)

    def fallback(self, out: GoalOutcome) -> None:
        web = self.plan.web
        if self.mode != STEADY or web is None or out.goal.chain == (web,):
            return
        args, missing = fill(self.infos[web], self.task, item=out.item, clause=out.goal.clause)
        if missing:
            return
        key = str(sorted(args.items()))
        if key in self.web_queries:
            return
        self.web_queries.add(key)
        a = self.replay.call(web, args)
        out.web = Step(web, args, a)


class _GiveUp(Exception):
    def __init__(self, step: Step):
        super().__init__(step.tool)
        self.step = step


def _tokens(name: str) -> set[str]:
    return {t for t in name.lower().split("_") if t and t not in GENERIC_NAME_TOKENS}
