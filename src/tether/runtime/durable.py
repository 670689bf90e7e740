"""Durable runs: checkpoint, resume, side effects exactly once, approvals.

A checkpoint holds everything the loop needs to continue: the messages, the
step, usage and counters, hints not yet delivered, the calls of the current
decision not yet made, every guard's state and the simulated user's state.
The side-effect ledger and approvals live in the store beside it. Events are
persisted as they happen; on resume, events recorded after the last
checkpoint are dropped (their work is redone, and the ledger keeps side
effects from happening twice).
"""

from __future__ import annotations

import uuid
from typing import Any

from ..errors import UsageError
from ..events import EVENT_ADAPTER, ApprovalEvent, RunResumed, SideEffectEvent, Trajectory
from ..messages import Message, ToolCallRequest, Usage
from ..models import Model
from ..status import TerminalStatus
from ..tools import Tool, ToolResult, ToolSet
from ..tools._tool import current_idempotency_key
from .approvals import ApprovalRequest, arguments_digest
from .effects import effect_signature, idempotency_key, outcome_status
from .runner import RunConfig, RunResult, SimulatedUser, _Ending, _Loop, _Recorder, drive


# Interrupted (running: the process died), paused for a human, or ended by an error.
RESUMABLE = frozenset({"running", "needs_human", "unknown", "error"})


# -- checkpoints ---------------------------------------------------------------------
def capture(loop: _Loop) -> dict[str, Any]:
    user_state = getattr(loop.user, "state", None)
    return {
        "messages": [m.model_dump(mode="json") for m in loop.messages],
        "step": loop.step,
        "usage": loop.usage.model_dump(),
        "model_calls": loop.model_calls,
        "tool_calls": loop.tool_calls,
        "last_text": loop.last_text,
        "pending_hints": list(loop.pending_hints),
        "pending_calls": [c.model_dump(mode="json") for c in loop.pending_calls],
        "seen_ids": sorted(loop.seen_ids),
        "guards": [g.state() if hasattr(g, "state") else {} for g in loop.config.guards],
        "user": user_state() if callable(user_state) else None,
    }


def restore(loop: _Loop, state: dict[str, Any]) -> None:
    loop.messages[:] = [Message.model_validate(m) for m in state["messages"]]
    loop.step = state["step"]
    loop.usage = Usage.model_validate(state["usage"])
    loop.model_calls = state["model_calls"]
    loop.tool_calls = state["tool_calls"]
    loop.last_text = state["last_text"]
    loop.pending_hints = list(state["pending_hints"])
    loop.pending_calls = [ToolCallRequest.model_validate(c) for c in state["pending_calls"]]
    loop.seen_ids = set(state["seen_ids"])
    for guard, gstate in zip(loop.config.guards, state["guards"]):
        if hasattr(guard, "load_state"):
            guard.load_state(gstate)
    load_user = getattr(loop.user, "load_state", None)
    if state.get("user") is not None and callable(load_user):
        load_user(state["user"])


async def resume_agent(run_id: str, model: Model, tools: ToolSet, *, store: Any, user: SimulatedUser | None = None,
                       config: RunConfig = RunConfig()) -> RunResult:
    """Continue a stored run from its last checkpoint with the same model, tools and guards.

    Side effects that completed before the interruption are answered from the
    ledger, never re-run; one whose outcome is unknown is resolved through the
    tool's status query or idempotency key, or ends the run as ``unknown``."""
    run = store.get_run(run_id)
    if run is None:
        raise UsageError(f"no run {run_id!r} in {store.path}")
    if run["status"] not in RESUMABLE:
        raise UsageError(f"run {run_id!r} already ended as {run['status']}; only an interrupted or paused run "
                         f"({', '.join(sorted(RESUMABLE))}) can be resumed")
    ckpt = store.latest_checkpoint(run_id)
    if ckpt is None:
        raise UsageError(f"run {run_id!r} has no checkpoint to resume from")
    if config.store is not store:
        from dataclasses import replace

        config = replace(config, store=store)
    events = store.events(run_id)
    keep = ckpt["event_count"]
    dropped = max(0, len(events) - keep)
    store.truncate_events(run_id, keep)
    store.mark_running(run_id)
    offset = events[keep - 1]["at_ms"] if keep else 0.0
    rec = _Recorder(config.clock, store, run_id, offset_ms=offset)
    rec.trajectory = Trajectory(EVENT_ADAPTER.validate_python(e) for e in events[:keep])
    loop = _Loop(model, tools, user, config, rec, [])
    restore(loop, ckpt["state"])
    rec.add(RunResumed(checkpoint=ckpt["n"], step=ckpt["step"], phase=ckpt["phase"], dropped_events=dropped))
    return await drive(loop)


# -- side effects exactly once ---------------------------------------------------------
async def side_effect_call(loop: _Loop, call: ToolCallRequest, tool: Tool,
                           arguments: dict[str, Any]) -> tuple[ToolResult, _Ending | None]:
    run_id = loop.rec.run_id
    ledger = loop.ledger
    sig = effect_signature(call.name, arguments)
    prior = ledger.effect_by_signature(run_id, sig)
    key = prior["key"] if prior else idempotency_key(run_id, loop.step, sig)

    def note(status: str, detail: str = "") -> None:
        loop.rec.add(SideEffectEvent(step=loop.step, call_id=call.id, tool=call.name, key=key, status=status,
                                     detail=detail))

    if prior and prior["status"] in ("done", "failed"):
        note("replayed", f"already {prior['status']} (step {prior['step']}); answered from the ledger, not re-run")
        return ToolResult.model_validate({**(prior["result"] or {"ok": False, "error": "no result recorded"}),
                                          "source": "ledger"}), None
    if prior:   # intent without outcome (a crash) or a lost response
        if tool.status_query is not None:
            found = tool.status_query(key, arguments)
            if hasattr(found, "__await__"):
                found = await found
            if found is not None:
                ledger.record_outcome(key, outcome_status(found.ok, found.error_type), found.for_model())
                note("resolved", "the status query found the earlier call's outcome")
                found.source = "ledger"
                return found, None
            note("resolved", "the status query says it never happened; sending it now")
        elif tool.idempotency_param:
            note("resolved", "outcome unknown; re-sent with the same idempotency key")
        else:
            why = (f"{call.name} may or may not have happened (outcome {prior['status']} since step {prior['step']}); "
                   "it has no status query and takes no idempotency key, so it is not retried: a human must check")
            note("held", why)
            return (ToolResult.failure(f"not retried: {why}", "outcome_unknown", source="ledger"),
                    (TerminalStatus.UNKNOWN, loop.last_text, why))
    else:
        ledger.record_intent(key, run_id, sig, call.name, arguments, loop.step)
        note("intent")
    token = current_idempotency_key.set(key)
    try:
        result = await loop.tools.call(call.name, arguments)
    finally:
        current_idempotency_key.reset(token)
    loop.tool_calls += 1
    status = outcome_status(result.ok, result.error_type)
    ledger.record_outcome(key, status, result.for_model())
    note(status, result.error or "")
    return result, None


# -- approvals ---------------------------------------------------------------------------
async def approve(loop: _Loop, call: ToolCallRequest) -> dict[str, Any] | tuple[ToolResult, _Ending | None]:
    """The arguments to execute with, or the result (and ending) when not approved."""
    gate = loop.config.approvals
    rule = gate.policy.match(call.name, call.arguments)
    if rule is None:
        return call.arguments
    run_id = loop.rec.run_id
    digest = arguments_digest(call.name, call.arguments)
    store = loop.rec.store

    def event(action: str, approval_id: str, by: str = "", reason: str = "") -> None:
        loop.rec.add(ApprovalEvent(step=loop.step, call_id=call.id, tool=call.name, approval_id=approval_id,
                                   action=action, by=by, reason=reason, digest=digest[:16]))

    # A decision made while the run was paused (tether approve), for exactly these arguments.
    if store is not None:
        for a in store.approvals(run_id):
            if a["digest"] == digest and a["tool"] == call.name and a["status"] in ("approved", "modified", "rejected",
                                                                                    "escalated", "terminated"):
                return _apply(loop, call, a["id"], a["status"], a.get("new_arguments"), a.get("decided_by") or "",
                              a.get("note") or "", event)
    request = ApprovalRequest(id=f"ap-{uuid.uuid4().hex[:10]}", run_id=run_id, tool=call.name,
                              arguments=call.arguments, digest=digest, reason=rule.reason,
                              affects=rule.affects(call.arguments) if rule.affects else "", step=loop.step)
    if store is not None:
        store.create_approval(request.id, run_id, call.name, call.arguments, digest, rule.reason)
    event("requested", request.id, reason=rule.reason)
    decision = await gate.ask(request)
    if decision.action == "pending":
        event("pending", request.id, by=decision.by, reason="waiting for a human decision (tether approve)")
        loop.pending_calls.insert(1, call)          # ask again on resume, after this attempt is popped
        why = f"awaiting approval {request.id} for {call.name}: {rule.reason}"
        return ToolResult.failure(why, "awaiting_approval", source="approval"), (TerminalStatus.NEEDS_HUMAN, loop.last_text, why)
    status = {"approve": "approved", "reject": "rejected", "modify": "modified", "escalate": "escalated",
              "terminate": "terminated"}[decision.action]
    if decision.by == "timeout":
        event("expired", request.id, by="timeout", reason=decision.note)
    if store is not None:
        store.decide_approval(request.id, status, decision.by, decision.note, decision.arguments)
    return _apply(loop, call, request.id, status, decision.arguments, decision.by, decision.note, event)


def _apply(loop: _Loop, call: ToolCallRequest, approval_id: str, status: str, new_arguments: dict | None, by: str,
           note: str, event: Any) -> dict[str, Any] | tuple[ToolResult, _Ending | None]:
    store = loop.rec.store
    event(status, approval_id, by=by, reason=note)
    if status in ("approved", "modified"):
        if store is not None and not store.consume_approval(approval_id):
            why = f"approval {approval_id} was already used; a new decision is needed"
            return ToolResult.failure(why, "approval_consumed", source="approval"), None
        event("consumed", approval_id, by=by)
        return dict(new_arguments) if status == "modified" and new_arguments else call.arguments
    if status == "rejected":
        return ToolResult.failure(f"人工拒绝执行 ({by}{': ' + note if note else ''})", "rejected", source="approval"), None
    if status == "escalated":
        why = f"approval for {call.name} escalated by {by}"
        return ToolResult.failure(why, "escalated", source="approval"), (TerminalStatus.NEEDS_HUMAN, loop.last_text, why)
    why = f"run terminated by {by} at the approval of {call.name}"
    return ToolResult.failure(why, "terminated", source="approval"), (TerminalStatus.REJECTED, loop.last_text, why)
