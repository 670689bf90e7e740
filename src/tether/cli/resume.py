"""``tether resume`` and ``tether approve``: continue a stored run."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from ..evals.runner import REFERENCE_SYSTEM_PROMPT, case_world
from ..models import resolve_model
from ..runtime import RunConfig
from ..runtime.durable import resume_agent
from ..store import SQLiteStore
from ._common import console, user_errors
from ._harness import RunSpec, find_case
from ._trust import TRUST_ENV, record_case, record_model
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
"""

APPROVE_HELP = """Decide a run's pending approval, then continue the run.

The decision is bound to the exact arguments shown and is good once. Default: approve.

Examples:

  tether approve C4-PA-01-3f2a1c

  tether approve C4-PA-01-3f2a1c --reject --note "wrong order"

  tether approve C4-PA-01-3f2a1c --edit '{"keyword": "李宁羽毛球鞋"}'

  tether approve C4-PA-01-3f2a1c --no-resume        # record the decision only
"""

StoreOpt = Annotated[Optional[Path], typer.Option(help="the run store (default $TETHER_STORE or .tether/tether.db)")]
ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="continue with this model spec (default: the "
                                                 "run's, when it is a built-in one or trusted)")]
CaseOpt = Annotated[Optional[str], typer.Option("--case", help="continue with this case id or file (default: the run's, "
                                                "when it is a built-in case or trusted)")]
TrustOpt = Annotated[bool, typer.Option("--trust", help="use the model and case files the run's record names even "
                                        f"when they are code (only for records you trust; or ${TRUST_ENV})")]


def _continue(db: SQLiteStore, run_id: str, approver: str | None, trace: Path | None, *,
              model_spec: str | None = None, case_ref: str | None = None, trust: bool = False) -> None:
    with user_errors():
        run = db.get_run(run_id)
        if run is None:
            raise UsageError(f"no run {run_id!r} in {db.path} (tether runs list)")
        spec = RunSpec.from_meta(run["meta"])
        case = find_case(record_case(run_id, spec.case, case_ref, trust))
        model = resolve_model(record_model(run_id, spec.model, model_spec, trust))
        tools, user = case_world(case, seed=0)
        config = RunConfig(store=db, approvals=spec.gate(approver), meta=run["meta"],
                           max_steps=spec.max_steps or case.max_steps, system_prompt=REFERENCE_SYSTEM_PROMPT,
                           guards=tuple(spec.guards_list()), guards_label=spec.label())
        result = asyncio.run(resume_agent(run_id, model, tools, store=db, user=user, config=config))
    finish(result, db, trace)


def resume_command(
    run_id: Annotated[str, typer.Argument(help="the run id (tether runs list)")],
    store: StoreOpt = None,
    approver: Annotated[Optional[str], typer.Option(help="override who approves further calls: deferred, cli, deny, allow")] = None,
    trace: Annotated[Optional[Path], typer.Option(help="save the whole trace (JSON Lines) here")] = None,
    model: ModelOpt = None,
    case: CaseOpt = None,
    trust: TrustOpt = False,
) -> None:
    _continue(SQLiteStore(store), run_id, approver, trace, model_spec=model, case_ref=case, trust=trust)


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
    case: CaseOpt = None,
    trust: TrustOpt = False,
) -> None:
    db = SQLiteStore(store)
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
            record_model(run_id, recipe.model, model, trust)
        db.expire_approvals(run_id)
        if not db.decide_approval(a["id"], status, who, note, new_args):     # compare-and-set: one decider wins
            now = db.get_approval(a["id"]) or {}
            if now.get("status") == "expired":
                raise UsageError(f"{a['id']} expired before it was decided (default deny); "
                                 f"`tether resume {run_id}` asks again")
            raise UsageError(f"{a['id']} was decided meanwhile ({now.get('status')} by {now.get('decided_by')}); "
                             "your decision was not recorded and the run was not resumed")
    console.print(f"{a['id']}: {status} by {who} · {a['tool']}({a['arguments']})"
                  + (f" -> {new_args}" if new_args is not None else ""), highlight=False)
    if resume:
        _continue(db, run_id, approver, None, model_spec=model, case_ref=case, trust=trust)
