"""Run an agent under test on a C4 case the way the eval harness does."""

from __future__ import annotations

from typing import Any

import pytest

from tether.evals import load_suite
from tether.evals.runner import REFERENCE_SYSTEM_PROMPT, case_world
from tether.evals.scoring import score_trajectory
from tether.guards.stacks import guard_stack
from tether.runtime import AgentTask, RunConfig, Turn, run_task


async def run_c4_case(agent: Any, case: Any, *, guards: str = "off", trial: int = 0, store: Any = None,
                      extra_guards: tuple = ()):
    """(score, RunResult) for one trial of ``case`` with ``agent``."""
    tools, user = case_world(case, seed=trial)
    config = RunConfig(max_steps=case.max_steps, system_prompt=REFERENCE_SYSTEM_PROMPT,
                       guards=(*guard_stack(guards)(), *extra_guards), guards_label=guards, store=store,
                       meta={"suite": case.suite})
    task = AgentTask(message=case.input.message, history=tuple(Turn(t.role, t.content, t.question)
                                                               for t in case.input.history),
                     tools=tools, system_prompt=REFERENCE_SYSTEM_PROMPT, max_steps=case.max_steps, case_id=case.id)
    result = await run_task(agent, task, user=user, config=config, trial=trial,
                            run_id=f"{agent.name.replace(':', '_')}-{guards}-{case.id}-t{trial}")
    return score_trajectory(case, result.trajectory), result


@pytest.fixture(scope="session")
def c4_cases():
    return {c.id: c for c in load_suite("c4")}


@pytest.fixture
def c4_run():
    return run_c4_case


def start_c4_session(agent: Any, case: Any, *, guards: tuple = (), label: str = "on"):
    """(session, task) for driving ``agent.run`` by hand (no driver around it)."""
    from tether.runtime import RunSession

    tools, user = case_world(case)
    config = RunConfig(max_steps=case.max_steps, system_prompt=REFERENCE_SYSTEM_PROMPT, guards=guards,
                       guards_label=label)
    session = RunSession.start(model_name=agent.name, tools=tools, config=config, user=user, case_id=case.id)
    session.conversation(case.input.message, [Turn(t.role, t.content, t.question) for t in case.input.history])
    task = AgentTask(message=case.input.message, tools=tools, system_prompt=REFERENCE_SYSTEM_PROMPT,
                     max_steps=case.max_steps, case_id=case.id)
    return session, task


class Recording:
    """A tether Model that remembers what the framework's model was asked."""

    def __init__(self, model: Any):
        self.model, self.name, self.requests = model, model.name, []

    async def request(self, request):
        self.requests.append(request)
        return await self.model.request(request)


# -- the checks every adapter must pass --------------------------------------------------------
# tether's own loop on a case: (status, auto verdict, reply, event types), the same for every framework's check
_REFERENCE: dict[tuple[str, str, str], tuple[str, str, str, list[str]]] = {}


async def reference_run(case, policy: str, guards: str) -> tuple[str, str, str, list[str]]:
    from tether.evals.runner import run_trial
    from tether.models import resolve_model

    key = (case.id, policy, guards)
    if key not in _REFERENCE:
        ref, ref_result = await run_trial(case, resolve_model(f"policy:{policy}"), guards=guard_stack(guards)(),
                                          guards_label=guards)
        _REFERENCE[key] = (str(ref_result.status), ref.auto_verdict, ref_result.reply,
                           [e.type for e in ref_result.trajectory.events])
    return _REFERENCE[key]


async def check_runs_c4_like_tethers_loop(make_agent, cases, policy: str = "steady", guards: str = "off") -> None:
    """Every C4 case, no trial in error, the same statuses, verdicts and replies as tether's own loop."""
    from tether.models import resolve_model

    assert len(cases) >= 12
    agent = make_agent(resolve_model(f"policy:{policy}"))
    for case in cases.values():
        score, result = await run_c4_case(agent, case, guards=guards)
        assert result.error is None, (case.id, result.error)
        status, verdict, reply, kinds = await reference_run(case, policy, guards)
        assert (str(result.status), score.auto_verdict, result.reply) == (status, verdict, reply), case.id
        assert [e.type for e in result.trajectory.events] == kinds, case.id


async def check_loop_hinted_then_stopped(make_agent, cases, framework_module: str) -> None:
    """A looping agent (policy:stubborn repeats the failing call) is hinted at the
    3rd identical call, stopped at the 4th, inside the framework's own loop: the
    framework's run ends normally with the finish-up answer of its own model."""
    from tether.models import resolve_model
    from tether.status import TerminalStatus

    case = cases["C4-LD-01"]
    model = Recording(resolve_model("policy:stubborn"))
    agent = make_agent(model)
    session, task = start_c4_session(agent, case, guards=guard_stack("on")())
    status, reply, reason = await agent.run(session, task)
    assert status == TerminalStatus.LOOP_ABORTED and "4th identical call to search_flights" in reason
    assert model.requests[-1].tools == [] and reply

    # the same run through the driver: the record shows the trip, the finish-up answers
    model = Recording(resolve_model("policy:stubborn"))
    agent = make_agent(model)
    score, result = await run_c4_case(agent, case, guards="on")
    t = result.trajectory
    trips = [(e.guard, e.rule, e.verdict) for e in t.events if e.type == "guard_tripped"]
    assert trips == [("loop", "identical", "hint"), ("loop", "identical", "stop")]
    calls = [e for e in t.events if e.type == "tool_result"]
    assert len(calls) == 4 and calls[-1].error_type == "guard_stopped"
    assert result.status == TerminalStatus.LOOP_ABORTED and score.auto_verdict == "pass"
    # the hint reached the framework's model on the request after the 3rd call
    # a Chinese case: the hint is in Chinese (tether.i18n), the recorded stop reason stays English
    assert any("第 3 次以相同参数调用 search_flights" in m.content for m in model.requests[3].messages
               if m.role == "system")
    # finish-up: one last request to the framework's own model, without tools
    assert model.requests[-1].tools == [] and result.reply and "search_flights" in result.reply
    assert t.finished.reason.startswith("4th identical call")


async def check_budget_stops_before_the_call(make_agent, cases) -> None:
    """A budget of 2 tool calls stops the agent before the 3rd call is made, with a hint at 80%."""
    from tether.guards.budget import Budget, BudgetGuard
    from tether.models import resolve_model
    from tether.status import TerminalStatus

    agent = make_agent(resolve_model("policy:stubborn"))
    score, result = await run_c4_case(agent, cases["C4-LD-01"], guards="off",
                                      extra_guards=(BudgetGuard(Budget(max_tool_calls=2)),))
    t = result.trajectory
    trips = [(e.guard, e.rule, e.verdict) for e in t.events if e.type == "guard_tripped"]
    assert trips == [("budget", "budget.tool_calls.soft", "hint"), ("budget", "budget.tool_calls", "stop")]
    executed = [e for e in t.events if e.type == "tool_result" and e.source != "guard"]
    assert len(executed) == 2
    last = [e for e in t.events if e.type == "tool_result"][-1]
    assert last.error_type == "guard_stopped" and "not executed" in last.error
    assert result.status == TerminalStatus.BUDGET_EXCEEDED
    assert "已完成" in result.reply and "工具调用次数预算已用尽：预计 3，上限 2" in result.reply


async def check_blocked_call_is_read_by_the_model(make_agent, cases) -> None:
    """A guard's block is not a stop: the framework's model reads it as the call's result."""
    from tether.guards import BaseGuard, Intervention
    from tether.models import resolve_model

    class NoFlights(BaseGuard):
        name = "no_flights"

        def before_tool(self, ctx, call):
            return Intervention("block", "no_flights", "flights are off today") if call.name == "search_flights" else None

    model = Recording(resolve_model("policy:steady"))
    score, result = await run_c4_case(make_agent(model), cases["C4-LD-01"], extra_guards=(NoFlights(),))
    blocked = [e for e in result.trajectory.events if e.type == "tool_result" and e.error_type == "guard_blocked"]
    assert blocked and result.error is None
    seen = [m.content for r in model.requests for m in r.messages if m.role == "tool"]
    assert any("blocked by guard: flights are off today" in c for c in seen)


def reset_agents_sdk() -> None:
    """After an Agents SDK run in this process: tether's runner out (guard_runs() installed
    it), and the event loop Runner.run_sync left open closed (else its garbage collection
    warns in a later test)."""
    import asyncio
    import warnings

    try:
        from agents.run import set_default_agent_runner
    except ImportError:
        return
    set_default_agent_runner(None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running() and not loop.is_closed():
        loop.close()
