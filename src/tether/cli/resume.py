"""``tether resume`` and ``tether approve``: continue a stored run."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from ..evals.runner import REFERENCE_SYSTEM_PROMPT, case_world
from ..runtime import RunConfig
from ..runtime.loop import LoopAgent
from ..runtime.durable import resume_task
from ..store import open_store
from ..store.protocol import Store
from ._common import console, data_json, user_errors
from ._harness import RunSpec, find_case
from ._trust import TRUST_ENV, record_agent, record_case, record_model
from .run import finish

RESUME_HELP = """Continue a stored run from its last checkpoint: after a crash, a kill, or a pause for approval.

Side effects that completed before the interruption are answered from the ledger and never
re-run; one whose outcome is unknown goes through the tool's status query or idempotency key,
or the run ends as `unknown` (never a blind retry). Exit codes as for `tether run`.

A run's record is data: its model and case are used when they are built-in (policy:, openai:, anthropic:,
a suite case id); a model or case file that is code (module:attr, file.py:attr, a case file) needs
--model / --case, or --trust for a record you trust (or $TETHER_TRUSTED_SPECS).

Examples:

  tether resume C4-PA-01-3f2a1c

  tether resume C4-PA-01-3f2a1c --approver cli      # answer further approvals here

  tether resume RUN --agent my_agent.py:build --tools my_agent.py:tools   # a run of your own agent

A run of `tether run` is rebuilt from its metadata. Any other run (plan mode, a framework
agent, your own) is continued by the agent you name with --agent (tether never loads code
named by a stored run): tether's loop and plan mode continue from the checkpoint; any other
agent runs again with its recorded model answers and tool results replayed, then goes live
(docs/durable.md).
"""

APPROVE_HELP = """Decide a run's pending approval, then continue the run.

The decision is bound to the exact arguments shown and is good once. Default: approve.

Examples:

  tether approve C4-PA-01-3f2a1c

  tether approve C4-PA-01-3f2a1c --reject --note "wrong order"

  tether approve C4-PA-01-3f2a1c --edit '{"keyword": "李宁羽毛球鞋"}'

  tether approve C4-PA-01-3f2a1c --no-resume        # record the decision only
"""

StoreOpt = Annotated[Optional[str], typer.Option(help="the run store: a file or a postgresql:// URL (default $TETHER_STORE or .tether/tether.db)")]
ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="continue with this model spec (default: the "
                                                 "run's, when it is a built-in one or trusted)")]
CaseOpt = Annotated[Optional[str], typer.Option("--case", help="continue with this case id or file (default: the run's, "
                                                "when it is a built-in case or trusted)")]
TrustOpt = Annotated[bool, typer.Option("--trust", help="use the model and case files the run's record names even "
                                        f"when they are code (only for records you trust; or ${TRUST_ENV})")]


def _continue(db: Store, run_id: str, approver: str | None, trace: Path | None, agent: str | None = None,
              tools: str | None = None, *, model_spec: str | None = None, case_ref: str | None = None,
              trust: bool = False) -> None:
    with user_errors():
        run = db.get_run(run_id)
        if run is None:
            raise UsageError(f"no run {run_id!r} in {db.path} (tether runs list)")
        recipe = run["meta"].get("cli")
        if agent is not None and not (isinstance(recipe, dict) and recipe.get("agent")):
            result = asyncio.run(_resume_with_agent(db, run, agent, tools))
            finish(result, db, trace)
            return
        if not recipe:
            raise UsageError(f"run {run_id} was not started by `tether run` (no rebuild recipe in its metadata); "
                             "name the agent that continues it: tether resume RUN --agent MODULE:FACTORY "
                             "[--tools MODULE:FACTORY]")
        spec = RunSpec.from_meta(run["meta"])
        case = find_case(record_case(run_id, spec.case, case_ref, trust))
        tools, user = case_world(case, seed=0)
        config = RunConfig(store=db, approvals=spec.gate(approver), meta=run["meta"],
                           max_steps=spec.max_steps or case.max_steps, system_prompt=REFERENCE_SYSTEM_PROMPT,
                           guards=tuple(spec.guards_list()), guards_label=spec.label())
        runner = _recipe_subject(run_id, spec, agent, model_spec, trust)
        result = asyncio.run(resume_task(run_id, runner, tools, store=db, user=user, config=config))
    finish(result, db, trace)


def _recipe_ref(run_id: str, spec: RunSpec, agent: str | None, model: str | None, trust: bool) -> str:
    """The agent or model spec that continues a run of `tether run`: the one given, else the
    record's, used only as the trust rules allow (a record is data)."""
    if spec.agent is not None:
        if model is not None:
            raise UsageError(f"run {run_id} was run by an agent (tether run --agent), not a model: "
                             "pass --agent, not --model")
        return record_agent(run_id, spec.agent, agent, trust)
    if agent is not None:
        raise UsageError(f"run {run_id} was run by model {spec.model} in tether's loop: pass --model, not --agent")
    return record_model(run_id, spec.model, model, trust)


def _recipe_subject(run_id: str, spec: RunSpec, agent: str | None, model: str | None, trust: bool):
    """The agent that continues a run of `tether run` (tether's loop around the model, or the user's agent)."""
    ref = _recipe_ref(run_id, spec, agent, model, trust)
    chosen = replace(spec, agent=ref) if spec.agent is not None else replace(spec, model=ref)
    m, the_agent = chosen.subject()          # the same build as `tether run` (--model-arg included)
    return the_agent if the_agent is not None else LoopAgent(m)


async def _resume_with_agent(db: Store, run: dict, agent_ref: str, tools_ref: str | None):
    from .. import plugins
    from ..evals.runner import resolve_agent
    from ..guards.stacks import guard_stack
    from ..runtime.durable import resume_task
    from ..tools import ToolSet

    if db.approvals(run["run_id"]):
        raise UsageError(f"run {run['run_id']} went through approval gates, whose policy is not in the store; "
                         "continue it from Python with the same gate: tether.runtime.durable.resume_task(..., "
                         "config=RunConfig(store=..., approvals=...))")
    agent = resolve_agent(agent_ref)()
    user = None
    max_steps = 30
    system_prompt = None
    if tools_ref is not None:
        obj = plugins.load_object(tools_ref, what="tools")
        tools = obj if isinstance(obj, ToolSet) else obj() if callable(obj) else obj
        if not isinstance(tools, ToolSet):
            raise UsageError(f"--tools {tools_ref!r}: expected a ToolSet or a function returning one, "
                             f"got {type(tools).__name__}")
    elif run.get("case_id"):
        case = find_case(run["case_id"])
        tools, user = case_world(case, seed=0)
        max_steps, system_prompt = case.max_steps, REFERENCE_SYSTEM_PROMPT       # as the harness ran it
    else:
        raise UsageError(f"run {run['run_id']} has no case to take its tools from; name them with --tools "
                         "MODULE:FACTORY (the same tools it was started with)")
    config = RunConfig(store=db, meta=run["meta"], max_steps=int(run["meta"].get("max_steps") or max_steps),
                       guards=tuple(guard_stack(run["guards"])()), guards_label=run["guards"], kind=run["kind"],
                       eval_id=run.get("eval_id"), system_prompt=system_prompt)
    return await resume_task(run["run_id"], agent, tools, store=db, user=user, config=config)


def resume_command(
    run_id: Annotated[str, typer.Argument(help="the run id (tether runs list)")],
    store: StoreOpt = None,
    approver: Annotated[Optional[str], typer.Option(help="override who approves further calls: deferred, cli, deny, allow")] = None,
    trace: Annotated[Optional[Path], typer.Option(help="save the whole trace (JSON Lines) here")] = None,
    agent: Annotated[Optional[str], typer.Option(help="the agent that continues the run (module:factory or path/to/file.py:factory), for a run not started by `tether run`")] = None,
    tools: Annotated[Optional[str], typer.Option(help="its tools (module:factory returning a ToolSet); default: the run's case")] = None,
    model: ModelOpt = None,
    case: CaseOpt = None,
    trust: TrustOpt = False,
) -> None:
    _continue(open_store(store), run_id, approver, trace, agent, tools, model_spec=model, case_ref=case,
              trust=trust)


def approve_command(
    run_id: Annotated[str, typer.Argument(help="the run id (tether runs list)")],
    reject: Annotated[bool, typer.Option("--reject", help="reject the call (the agent is told and goes on)")] = False,
    edit: Annotated[Optional[str], typer.Option(help="approve with these arguments instead (a JSON object)")] = None,
    escalate: Annotated[bool, typer.Option("--escalate", help="hand the decision up: the run ends as needs_human")] = False,
    terminate: Annotated[bool, typer.Option("--terminate", help="end the run here")] = False,
    approval: Annotated[Optional[str], typer.Option(help="which pending approval (default: the only one)")] = None,
    by: Annotated[Optional[str], typer.Option(help="who decides (default $USER)")] = None,
    note: Annotated[str, typer.Option(help="why")] = "",
    resume: Annotated[bool, typer.Option("--resume/--no-resume", help="continue the run after deciding")] = True,
    approver: Annotated[Optional[str], typer.Option(help="who approves further calls when the run continues: deferred, cli, deny, allow")] = None,
    store: StoreOpt = None,
    model: ModelOpt = None,
    agent: Annotated[Optional[str], typer.Option(help="the agent that continues a run of `tether run --agent` (default: the run's, with --trust)")] = None,
    case: CaseOpt = None,
    trust: TrustOpt = False,
) -> None:
    db = open_store(store)
    with user_errors():
        if db.get_run(run_id) is None:
            raise UsageError(f"no run {run_id!r} in {db.path} (tether runs list)")
        pending = db.approvals(run_id, "pending")
        if approval:
            pending = [a for a in pending if a["id"] == approval]
        if not pending:
            raise UsageError(f"run {run_id} has no pending approval" + (f" {approval}" if approval else ""))
        if len(pending) > 1:
            raise UsageError("several pending approvals: choose one with --approval "
                             + ", ".join(a["id"] for a in pending))
        if sum([reject, escalate, terminate, edit is not None]) > 1:
            raise UsageError("choose one of --reject, --edit, --escalate, --terminate")
        a = pending[0]
        new_args = None
        if edit is not None:
            from ..errors import CaseFileError
            from ..inputs import loads_json

            try:
                new_args = loads_json(edit, "--edit", max_depth=32)
            except CaseFileError as exc:
                raise UsageError(f"--edit is not JSON: {exc.problems[0][1]}") from None
            if not isinstance(new_args, dict):
                raise UsageError("--edit must be a JSON object of arguments")
        status = ("rejected" if reject else "escalated" if escalate else "terminated" if terminate
                  else "modified" if new_args is not None else "approved")
        if by is not None and not by.strip():
            raise UsageError("--by '': say who decides (a name is recorded with the decision)")
        who = by or os.environ.get("USER") or "cli"
        if resume:         # refuse an untrusted recipe before a decision is recorded
            recipe = RunSpec.from_meta(db.get_run(run_id)["meta"])
            record_case(run_id, recipe.case, case, trust)
            _recipe_ref(run_id, recipe, agent, model, trust)
        db.expire_approvals(run_id)
        if not db.decide_approval(a["id"], status, who, note, new_args):     # compare-and-set: one decider wins
            now = db.get_approval(a["id"]) or {}
            if now.get("status") == "expired":
                raise UsageError(f"{a['id']} expired before it was decided (default deny); "
                                 f"`tether resume {run_id}` asks again")
            raise UsageError(f"{a['id']} was decided meanwhile ({now.get('status')} by {now.get('decided_by')}); "
                             "your decision was not recorded and the run was not resumed")
    console.print(f"{a['id']}: {status} by {who} · {a['tool']}({data_json(a['arguments'])})"
                  + (f" -> {data_json(new_args)}" if new_args is not None else ""), highlight=False, soft_wrap=True)
    if resume:
        _continue(db, run_id, approver, None, agent, model_spec=model, case_ref=case, trust=trust)
