"""The result guard: never claim what a tool did not return (seed 002 section 6).

* Tool results are already one envelope ``{ok, data, error, error_type}``.
* ``required_fields`` per tool: a success whose data lacks one of them (missing,
  null, empty) is not a success; the model is told so on its next request.
* ``rules``: business rules, ``fn(call, result) -> message | None``.
* The **ledger** (``ledger(trajectory)``): what was done (ok results that pass
  the checks) and what was not (errors, failed checks), as the seed's
  ``done`` / ``not_done`` fact list.
* The **claim check** on the final answer: a reply that claims an action
  succeeded when the tool for it returned an error, or was never called, is an
  invented completion; the run ends as ``invented_completion``.

The claim check is deterministic: success phrases (``已创建``, ``成功``,
``订单号``, "created", ...) are matched in the reply, and each claim is tied to
the action tools (side-effecting tools, or ``claim_tools``) by the words of
their names and descriptions. A reply with a success claim and no successful
action behind it is flagged; so is an identifier in the reply (e.g. an order
number) that appears in no tool result and no user message.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import i18n
from ..events import Outcome, ToolResultEvent, Trajectory
from ..messages import ToolCallRequest, canonical_json
from ..status import TerminalStatus
from ._base import BaseGuard, GuardContext, Intervention

ResultCheck = Callable[[ToolCallRequest, ToolResultEvent], "str | None"]

SUCCESS_CLAIMS = (
    "已创建", "创建成功", "已提交", "提交成功", "已下单", "下单成功", "已预订", "预订成功", "已退款", "退款成功",
    "已发送", "发送成功", "已完成", "办理成功", "操作成功", "已成功", "成功创建", "成功提交",
    "created", "submitted", "succeeded", "successfully", "has been booked", "is confirmed",
)
ID_PATTERN = r"(?:订单号|单号|编号|order (?:number|id)|refund id|id)[：:\s#]*([A-Za-z]*\d[\w-]{2,})"


def verify_result(result: ToolResultEvent, expect_fields: list[str] = ()) -> str | None:
    """None when the result counts as done, else why not (seed 002 section 6.2)."""
    if not result.ok:
        return f"{result.tool} returned an error: {result.error}"
    if not expect_fields:
        return None
    data = result.data if isinstance(result.data, dict) else {}
    missing = [f for f in expect_fields if _get(data, f) in (None, "", [], {})]
    if missing:
        return f"{result.tool} result lacks {', '.join(missing)}"
    return None


def _get(data: Any, path: str) -> Any:
    cur = data
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


@dataclass
class CompletionLedger:
    """What the run's tool calls did and did not get done (the side-effect ledger is
    :class:`tether.runtime.effects.Ledger`)."""

    done: list[str] = field(default_factory=list)
    not_done: list[str] = field(default_factory=list)

    def render(self) -> str:
        return "done: " + ("; ".join(self.done) or "-") + "\nnot_done: " + ("; ".join(self.not_done) or "-")


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@dataclass
class ResultGuard(BaseGuard):
    required_fields: dict[str, list[str]] = field(default_factory=dict)
    rules: list[ResultCheck] = field(default_factory=list)
    claim_tools: list[str] | None = None      # default: the side-effecting tools of the run
    claims: tuple[str, ...] = SUCCESS_CLAIMS
    check_ids: bool = True
    name: str = "result"
    flagged: list[str] = field(default_factory=list)

    def after_tool(self, ctx: GuardContext, call: ToolCallRequest, result: ToolResultEvent) -> Intervention | None:
        if not self.required_fields and not self.rules:
            return None                     # nothing to check: an error is never flagged, a success passes
        problem = verify_result(result, self.required_fields.get(call.name, []))
        if problem is None:
            for rule in self.rules:
                problem = rule(call, result)
                if problem:
                    break
        if problem is None or not result.ok:
            return None
        self.flagged.append(result.call_id)
        return Intervention("hint", "result.check", i18n.text(i18n.run_language(ctx.trajectory), "result.check",
                                                         problem=problem), {"tool": call.name})

    def ledger(self, trajectory: Trajectory) -> CompletionLedger:
        out = CompletionLedger()
        for call, result in trajectory.calls_with_results():
            if result is not None and (result.outcome is Outcome.BLOCKED or (
                    result.outcome is Outcome.HELD and result.error_type != "outcome_unknown")):
                continue             # never sent: a guard or an approval held it
            label = f"{call.tool}({_short(call.arguments)})"
            if result is None:
                out.not_done.append(f"{label}: no result")
                continue
            problem = verify_result(result, self.required_fields.get(call.tool, []))
            if problem is None and result.call_id in self.flagged:
                problem = "failed a business rule"
            if problem:
                out.not_done.append(f"{label}: {problem}")
            else:
                out.done.append(f"{label} -> {_short(result.data)}")
        return out

    def on_final(self, ctx: GuardContext, reply: str) -> Intervention | None:
        t = ctx.trajectory
        text = _norm(reply)
        claimed = [c for c in self.claims if _norm(c) in text]
        action_tools = self.claim_tools if self.claim_tools is not None else [s.name for s in ctx.tools if s.side_effect]
        if claimed and action_tools:
            succeeded = [c for c, r in t.calls_with_results(action_tools)
                         if r is not None and r.took_effect and verify_result(r, self.required_fields.get(c.tool, [])) is None
                         and r.call_id not in self.flagged]
            if not succeeded:
                attempts = t.calls_with_results(action_tools, executed_only=True)
                why = ("; ".join(f"{c.tool} -> {r.error if r is not None and r.error else 'not done'}" for c, r in attempts)
                       if attempts else f"none of {', '.join(action_tools)} was called")
                return Intervention("stop", "result.invented_completion",
                               f"the reply claims success ({', '.join(claimed[:3])}) but no action succeeded: {why}",
                               {"claims": len(claimed), "succeeded": 0, "attempts": len(attempts)},
                               status=TerminalStatus.INVENTED_COMPLETION)
        if self.check_ids:
            corpus = _norm(" ".join(canonical_json({"d": r.data}) for r in t.tool_results() if r.ok)
                           + " ".join(m.content for m in t.user_messages()))
            invented = [m.group(1) for m in re.finditer(ID_PATTERN, reply, flags=re.IGNORECASE)
                        if _norm(m.group(1)) not in corpus]
            if invented:
                return Intervention("stop", "result.invented_id",
                               f"the reply cites {', '.join(invented[:3])}, which no successful tool result contains",
                               {"invented": len(invented)}, status=TerminalStatus.INVENTED_COMPLETION)
        return None

    def state(self) -> dict[str, Any]:
        return {"flagged": list(self.flagged)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.flagged = list(state.get("flagged", []))


def _short(value: Any) -> str:
    text = canonical_json(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["CompletionLedger", "ResultGuard", "SUCCESS_CLAIMS", "verify_result"]
