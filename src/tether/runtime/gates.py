"""The gates around a tool call: approvals, then the side-effect ledger.

A gate is a small object with one hook, ``async around(session, call,
arguments, proceed) -> ToolResult``: it may answer itself, change the
arguments, call ``proceed(arguments)`` to go on down the chain, or end the run
by raising :class:`~tether.errors.RunStop` carrying the result to record. The
chain ends at the harness's ToolSet. Which gates run is decided per session:
the approval gate when the config has one, the ledger for side-effecting tools.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Awaitable, Callable, Protocol

from .. import i18n
from ..errors import RunStop
from ..events import ApprovalEvent, SideEffectEvent
from ..messages import ToolCallRequest
from ..status import TerminalStatus
from ..tools import ToolResult
from ..tools._tool import current_idempotency_key
from .approvals import ApprovalRequest, arguments_digest
from .effects import MemoryLedger, effect_signature, idempotency_key, occurrence, outcome_status

Proceed = Callable[[dict[str, Any]], Awaitable[ToolResult]]


class Gate(Protocol):
    async def around(self, session: Any, call: ToolCallRequest, arguments: dict[str, Any],
                     proceed: Proceed) -> ToolResult: ...


class GateChain:
    def __init__(self, session: Any, gates: list[Gate]):
        self.session = session
        self.gates = gates

    async def run(self, call: ToolCallRequest) -> ToolResult:
        session = self.session

        async def terminal(arguments: dict[str, Any]) -> ToolResult:
            result = await session.tools.call(call.name, arguments)
            session.state.tool_calls += 1
            return result

        proceed: Proceed = terminal
        for gate in reversed(self.gates):
            proceed = _bind(gate, session, call, proceed)
        return await proceed(call.arguments)


def _bind(gate: Gate, session: Any, call: ToolCallRequest, nxt: Proceed) -> Proceed:
    async def step(arguments: dict[str, Any]) -> ToolResult:
        return await gate.around(session, call, arguments, nxt)

    return step


def default_gates(session: Any) -> GateChain:
    gates: list[Gate] = []
    if session.config.approvals is not None:
        gates.append(ApprovalsGate(session.config.approvals))
    gates.append(LedgerGate(session.store if session.store is not None else MemoryLedger()))
    return GateChain(session, gates)


# -- side effects exactly once ---------------------------------------------------------
class LedgerGate:
    """Side-effecting tools: intent before, outcome after, never twice (see effects.py)."""

    def __init__(self, ledger: Any):
        self.ledger = ledger

    async def around(self, session: Any, call: ToolCallRequest, arguments: dict[str, Any],
                     proceed: Proceed) -> ToolResult:
        tool = session.tools.tools[call.name]
        if not tool.side_effect:
            return await proceed(arguments)
        run_id, step, ledger = session.run_id, session.state.step, self.ledger
        sig = effect_signature(call.name, arguments)
        key = idempotency_key(run_id, sig, occurrence(session.trajectory, sig))
        prior = ledger.effect(key)

        def note(status: str, detail: str = "") -> None:
            session.add(SideEffectEvent(step=step, call_id=call.id, tool=call.name, key=key, status=status,  # type: ignore[arg-type]
                                        detail=detail))

        if prior and prior["status"] in ("done", "failed"):
            note("replayed", f"already {prior['status']} (step {prior['step']}); answered from the ledger, not re-run")
            return ToolResult.model_validate({**(prior["result"] or {"ok": False, "error": "no result recorded"}),
                                              "source": "ledger"})
        if prior:   # intent without outcome (a crash) or a lost response
            if tool.status_query is not None:
                found = tool.status_query(key, arguments)
                if hasattr(found, "__await__"):
                    found = await found
                if found is not None:
                    ledger.record_outcome(key, outcome_status(found.ok, found.error_type), found.for_model())
                    note("resolved", "the status query found the earlier call's outcome")
                    found.source = "ledger"
                    return found
                note("resolved", "the status query says it never happened; sending it now")
            elif tool.idempotency_param:
                note("resolved", "outcome unknown; re-sent with the same idempotency key")
            else:
                why = (f"{call.name} may or may not have happened (outcome {prior['status']} since step "
                       f"{prior['step']}); it has no status query and takes no idempotency key, so it is not "
                       "retried: a human must check")
                note("held", why)
                raise RunStop(TerminalStatus.UNKNOWN, session.state.last_text, why,
                              result=ToolResult.failure(f"not retried: {why}", "outcome_unknown", source="ledger"))
        else:
            ledger.record_intent(key, run_id, sig, call.name, arguments, step)
            note("intent")
        token = current_idempotency_key.set(key)
        try:
            result = await proceed(arguments)
        finally:
            current_idempotency_key.reset(token)
        status = outcome_status(result.ok, result.error_type)
        session.hold_lease()      # a process that lost the run meanwhile leaves the outcome to the new holder
        ledger.record_outcome(key, status, result.for_model())
        note(status, result.error or "")
        return result


# -- approvals ---------------------------------------------------------------------------
_STATUS = {"approve": "approved", "reject": "rejected", "modify": "modified", "escalate": "escalated",
           "terminate": "terminated"}


class ApprovalsGate:
    """Calls the gate's rules match wait for a decision bound to their exact arguments."""

    def __init__(self, gate: Any):
        self.gate = gate

    async def around(self, session: Any, call: ToolCallRequest, arguments: dict[str, Any],
                     proceed: Proceed) -> ToolResult:
        rule = self.gate.rules.match(call.name, call.arguments)
        if rule is None:
            return await proceed(arguments)
        run_id, store = session.run_id, session.store
        digest = arguments_digest(call.name, call.arguments)

        def event(action: str, approval_id: str, by: str = "", reason: str = "") -> None:
            session.add(ApprovalEvent(step=session.state.step, call_id=call.id, tool=call.name,  # type: ignore[arg-type]
                                      approval_id=approval_id, action=action, by=by, reason=reason, digest=digest[:16]))

        # A decision made while the run was paused (tether approve), for exactly these
        # arguments and not yet used by another call; a pending one past its expiry denies.
        if store is not None:
            store.expire_approvals(run_id)
            for a in store.approvals(run_id):
                if a["digest"] != digest or a["tool"] != call.name or a.get("used"):
                    continue
                if a["status"] in ("approved", "modified", "rejected", "escalated", "terminated", "expired"):
                    return await self._apply(session, call, a["id"], a["status"], a.get("new_arguments"),
                                             a.get("decided_by") or "", a.get("note") or "", event, proceed)
                if a["status"] == "pending":      # asked before the pause, still undecided: keep waiting
                    why = f"awaiting approval {a['id']} for {call.name}: {rule.reason}"
                    event("pending", a["id"], by="deferred", reason="still waiting for a human decision")
                    raise RunStop(TerminalStatus.NEEDS_HUMAN, session.state.last_text, why, requeue=True,
                                  result=ToolResult.failure(why, "awaiting_approval", source="approval"))
        request = ApprovalRequest(id=f"ap-{uuid.uuid4().hex[:10]}", run_id=run_id, tool=call.name,
                                  arguments=call.arguments, digest=digest, reason=rule.reason,
                                  affects=rule.affects(call.arguments) if rule.affects else "", step=session.state.step)
        if store is not None:
            store.create_approval(request.id, run_id, call.name, call.arguments, digest, rule.reason,
                                  expires=time.time() + getattr(self.gate, "deferred_expiry_s", 86400.0))
        event("requested", request.id, reason=rule.reason)
        decision = await self.gate.ask(request)
        if decision.action == "pending":
            event("pending", request.id, by=decision.by, reason="waiting for a human decision (tether approve)")
            why = f"awaiting approval {request.id} for {call.name}: {rule.reason}"
            raise RunStop(TerminalStatus.NEEDS_HUMAN, session.state.last_text, why, requeue=True,
                          result=ToolResult.failure(why, "awaiting_approval", source="approval"))
        status = _STATUS[decision.action]
        if decision.by == "timeout":
            event("expired", request.id, by="timeout", reason=decision.note)
        if store is not None:
            store.decide_approval(request.id, status, decision.by, decision.note, decision.arguments)
        return await self._apply(session, call, request.id, status, decision.arguments, decision.by, decision.note,
                                 event, proceed)

    async def _apply(self, session: Any, call: ToolCallRequest, approval_id: str, status: str,
                     new_arguments: dict | None, by: str, note: str, event: Any, proceed: Proceed) -> ToolResult:
        store = session.store
        event(status if status != "expired" else "expired", approval_id, by=by, reason=note)
        if store is not None and not store.consume_approval(approval_id):   # a decision is good for one call
            why = f"approval {approval_id} was already used; a new decision is needed"
            return ToolResult.failure(why, "approval_consumed", source="approval")
        if status in ("approved", "modified"):
            if not by:
                why = f"approval {approval_id} does not say who decided; refusing to run {call.name}"
                return ToolResult.failure(why, "approval_without_decider", source="approval")
            event("consumed", approval_id, by=by)
            return await proceed(dict(new_arguments) if status == "modified" and new_arguments else call.arguments)
        if status == "expired":
            return ToolResult.failure(f"approval {approval_id} expired before anyone decided: default deny",
                                      "approval_expired", source="approval")
        if status == "rejected":
            who = f"{by}: {note}" if note else str(by)
            return ToolResult.failure(i18n.text(i18n.run_language(session.trajectory), "gate.rejected", who=who),
                                      "rejected", source="approval")
        if status == "escalated":
            why = f"approval for {call.name} escalated by {by}"
            raise RunStop(TerminalStatus.NEEDS_HUMAN, session.state.last_text, why,
                          result=ToolResult.failure(why, "escalated", source="approval"))
        why = f"run terminated by {by} at the approval of {call.name}"
        raise RunStop(TerminalStatus.REJECTED, session.state.last_text, why,
                      result=ToolResult.failure(why, "terminated", source="approval"))
