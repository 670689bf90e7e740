"""The budget guard: tokens, cost, wall-clock time, tool calls, model calls.

Checked *before* each call with an estimate (a model request's input tokens
are estimated from its text, its output from the run's average so far), not
only after the fact, so a run does not overshoot by a whole response.
At ``soft_fraction`` (80% by default) of any limit the model gets a hint to
converge. At a hard limit the run stops as ``budget_exceeded`` after a
finish-up request (no tools) in which the model writes its final answer; the
reply then ends with tether's own account of what was done, what was not, and
why ("已完成的部分 + 未完成原因" for a Chinese run), in the run's language.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import i18n
from ..events import Trajectory
from ..messages import ToolCallRequest, Usage
from ..models.tokens import DEFAULT_PRICES, estimate_tokens, price_of
from ..status import TerminalStatus
from ._base import BaseGuard, GuardContext, Intervention


@dataclass(frozen=True)
class Budget:
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_total_tokens: int | None = None
    max_cost: float | None = None          # USD
    max_seconds: float | None = None       # wall clock for the whole run
    max_tool_calls: int | None = None
    max_model_calls: int | None = None
    soft_fraction: float = 0.8
    default_output_estimate: int = 256
    # USD per million tokens (input, output); default: tether.models.tokens.DEFAULT_PRICES
    prices: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def price(self, model: str) -> tuple[float, float] | None:
        return price_of(model, self.prices)


@dataclass
class BudgetGuard(BaseGuard):
    budget: Budget = field(default_factory=Budget)
    name: str = "budget"
    hinted: list[str] = field(default_factory=list)   # dimensions already hinted (state)

    def _cost(self, model: str, usage: Usage) -> float:
        if usage.cost:
            return usage.cost
        price = self.budget.price(model)
        if price is None:
            return 0.0
        return (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000

    def __post_init__(self) -> None:
        b = self.budget
        limits = {"input_tokens": b.max_input_tokens, "output_tokens": b.max_output_tokens,
                  "total_tokens": b.max_total_tokens, "cost": b.max_cost, "seconds": b.max_seconds,
                  "tool_calls": b.max_tool_calls, "model_calls": b.max_model_calls}
        self._limits = tuple((dim, limit) for dim, limit in limits.items() if limit is not None)
        # before a tool call only these two are projected: (limit, the soft limit) each, None when unset
        soft = {dim: (limit, b.soft_fraction * limit) for dim, limit in self._limits}
        self._tool_limits = (soft.get("tool_calls"), soft.get("seconds"))

    def _check(self, ctx: GuardContext, projected: dict[str, float]) -> Intervention | None:
        b = self.budget
        for dim, limit in self._limits:
            value = projected.get(dim)
            if value is None:
                continue
            if value > limit:
                return Intervention("stop", f"budget.{dim}",
                               f"{dim.replace('_', ' ')} budget exhausted: {_fmt(value)} projected, limit {_fmt(limit)}",
                               {"dimension": dim, "projected": round(value, 6), "limit": limit},
                               status=TerminalStatus.BUDGET_EXCEEDED, finish_up=True)
            if value >= b.soft_fraction * limit and dim not in self.hinted:
                self.hinted.append(dim)
                return Intervention("hint", f"budget.{dim}.soft",
                               i18n.text(i18n.run_language(ctx.trajectory), "budget.soft", pct=f"{value / limit:.0%}",
                                         dim=dim, value=_fmt(value), limit=_fmt(limit)),
                               {"dimension": dim, "used": round(value, 6), "limit": limit})
        return None

    def before_model(self, ctx: GuardContext, request: Any) -> Intervention | None:
        text = "".join(m.content for m in request.messages) + "".join(t.description for t in request.tools)
        est_in = estimate_tokens(text)
        calls = max(ctx.model_calls, 1)
        est_out = ctx.usage.output_tokens // calls if ctx.model_calls else self.budget.default_output_estimate
        projected_usage = Usage(input_tokens=ctx.usage.input_tokens + est_in,
                                output_tokens=ctx.usage.output_tokens + est_out)
        return self._check(ctx, {
            "input_tokens": projected_usage.input_tokens, "output_tokens": projected_usage.output_tokens,
            "total_tokens": projected_usage.input_tokens + projected_usage.output_tokens,
            "cost": self._cost(ctx.model_name, projected_usage), "seconds": ctx.elapsed_s,
            "model_calls": ctx.model_calls + 1,
        })

    def after_model(self, ctx: GuardContext, response: Any) -> Intervention | None:
        # What was actually spent (the estimate may have been low): stop now if over.
        u = ctx.usage
        verdict = self._check(ctx, {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                                    "total_tokens": u.input_tokens + u.output_tokens,
                                    "cost": self._cost(ctx.model_name, u), "seconds": ctx.elapsed_s})
        return verdict if verdict and verdict.action == "stop" else None

    def before_tool(self, ctx: GuardContext, call: ToolCallRequest) -> Intervention | None:
        calls, seconds = ctx.tool_calls + 1, ctx.elapsed_s
        on_calls, on_seconds = self._tool_limits
        if (on_calls is None or not (calls > on_calls[0] or calls >= on_calls[1])) \
                and (on_seconds is None or not (seconds > on_seconds[0] or seconds >= on_seconds[1])):
            return None                     # below every soft limit: nothing to say (the common call)
        return self._check(ctx, {"tool_calls": calls, "seconds": seconds})

    def on_stop(self, ctx: GuardContext, verdict: Intervention, reply: str) -> str:
        lang = i18n.run_language(ctx.trajectory)
        summary = ledger_summary(ctx.trajectory, self.localized(verdict, lang) or verdict.message, lang)
        return f"{reply}\n\n{summary}" if reply else summary

    def localized(self, verdict: Intervention, lang: str) -> str | None:
        """A stop in the run's language (the recorded reason stays English)."""
        n = verdict.numbers
        if lang == "en" or "dimension" not in n or "projected" not in n:
            return None
        return i18n.text(lang, "budget.stop", dim=i18n.dimension(lang, str(n["dimension"])),
                         value=_fmt(float(n["projected"])), limit=_fmt(float(n["limit"])))

    def state(self) -> dict[str, Any]:
        return {"hinted": list(self.hinted)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.hinted = list(state.get("hinted", []))


def _fmt(x: float) -> str:
    return f"{x:.4g}" if isinstance(x, float) and not x.is_integer() else str(int(x))


def ledger_summary(trajectory: Trajectory, why: str, lang: str | None = None) -> str:
    """Done / not done / why (已完成 / 未完成 / 原因), from what the tools actually
    returned, in the run's language."""
    lang = lang or i18n.run_language(trajectory)
    done: list[str] = []
    not_done: list[str] = []
    for call, result in trajectory.calls_with_results():
        label = f"{call.tool}({_args(call.arguments)})"
        if result is not None and result.ok:
            done.append(label)
        elif result is not None and (result.error_type or "").startswith("guard"):
            not_done.append(f"{label}: {i18n.text(lang, 'ledger.not_executed')}")
        else:
            reason = (result.error or i18n.text(lang, "ledger.no_result")) if result is not None \
                else i18n.text(lang, "ledger.no_result")
            not_done.append(f"{label}: {reason[:120]}")
    sep, none = i18n.text(lang, "ledger.sep"), i18n.text(lang, "ledger.none")
    lines = ["——", i18n.text(lang, "ledger.done") + (sep.join(done) if done else none)]
    lines.append(i18n.text(lang, "ledger.not_done") + (sep.join(not_done) if not_done else none))
    lines.append(i18n.text(lang, "ledger.why") + why)
    return "\n".join(lines)


def _args(arguments: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v}" for k, v in arguments.items())
    return text if len(text) <= 60 else text[:57] + "..."
