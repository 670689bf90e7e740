"""How the CLI builds a run from a case and options, and rebuilds it from a
stored run's metadata (so `tether resume` and `tether approve` can continue it)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..evals.case import Case
from ..evals.loader import find_case as find_suite_case
from ..evals.loader import load_case
from ..guards.budget import Budget, BudgetGuard
from ..guards.stacks import guard_stack
from ..runtime.approvals import APPROVERS, ApprovalGate, ApprovalRule, ApprovalRules, approver_named

_BUDGET_KEYS = {"tool_calls": "max_tool_calls", "model_calls": "max_model_calls", "seconds": "max_seconds",
                "tokens": "max_total_tokens", "input_tokens": "max_input_tokens", "output_tokens": "max_output_tokens",
                "cost": "max_cost"}
MAX_BUDGET = 1e12         # any --budget value (tool calls, tokens, seconds, cost)


def parse_budget(text: str) -> Budget:
    values: dict[str, float | int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, raw = part.partition("=")
        if not sep or key.strip() not in _BUDGET_KEYS:
            raise UsageError(f"--budget {text!r}: expected key=value pairs with keys {', '.join(_BUDGET_KEYS)}")
        try:
            number = float(raw) if len(raw) <= 40 else math.nan
        except ValueError:
            raise UsageError(f"--budget {text!r}: {key}={raw!r} is not a number") from None
        if not math.isfinite(number) or number <= 0 or number > MAX_BUDGET:
            raise UsageError(f"--budget {key}={raw[:40]!r}: a budget is a finite number above 0 "
                             f"(at most {MAX_BUDGET:g})")
        field = _BUDGET_KEYS[key.strip()]
        if field not in ("max_seconds", "max_cost"):
            if number != int(number):
                raise UsageError(f"--budget {key}={raw!r}: {key} is a whole number")
            number = int(number)
        values[field] = number
    return Budget(**values)


def find_case(ref: str) -> Case:
    path = Path(ref)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_case(path)
    return find_suite_case(ref, "c4")     # case-insensitive, with "did you mean"


@dataclass
class RunSpec:
    """Everything needed to (re)build a CLI run; stored as the run's metadata."""

    case: str
    model: str | None          # None when ``agent`` runs the case
    guards: str = "on"
    budget: str | None = None
    approve: tuple[str, ...] = ()
    approver: str = "deferred"
    max_steps: int | None = None
    agent: str | None = None   # --agent: the user's agent (module:factory, file.py[:attr], an entry point name)
    model_args: dict[str, Any] | None = None    # --model-arg key=value, parsed

    def meta(self) -> dict[str, Any]:
        case = self.case
        if Path(case).exists():
            case = str(Path(case).resolve())
        cli = {"case": case, "model": self.model, "guards": self.guards, "budget": self.budget,
               "approve": list(self.approve), "approver": self.approver, "max_steps": self.max_steps}
        if self.agent is not None:
            agent = self.agent
            file, sep, attr = agent.partition(":") if not agent.endswith(".py") else (agent, "", "")
            if file.endswith(".py") and Path(file).exists():    # as a path that works from any folder
                agent = str(Path(file).resolve()) + sep + attr
            cli["agent"] = agent
        if self.model_args:
            cli["model_args"] = dict(self.model_args)
        return {"cli": cli}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> "RunSpec":
        cli = meta.get("cli")
        if not cli:
            raise UsageError("this run was not started from the CLI (no rebuild recipe in its metadata); "
                             "resume it from Python with tether.runtime.durable.resume_agent")
        model_args = cli.get("model_args")
        return cls(case=cli["case"], model=cli.get("model"), guards=cli["guards"], budget=cli.get("budget"),
                   approve=tuple(cli.get("approve") or ()), approver=cli.get("approver", "deferred"),
                   max_steps=cli.get("max_steps"), agent=cli.get("agent"),
                   model_args=model_args if isinstance(model_args, dict) else None)

    def subject(self) -> tuple[Any, Any]:
        """(model, agent): the model tether's loop runs, or the user's agent (then the model is None)."""
        if self.agent is not None:
            from ..evals.runner import resolve_agent

            return None, resolve_agent(self.agent)()
        from ..models import resolve_model
        from ..models.registry import with_limits

        model = resolve_model(self.model or "policy:steady")
        return (with_limits(model, args=self.model_args) if self.model_args else model), None

    def guards_list(self) -> list:
        stack = list(guard_stack(self.guards)())
        if self.budget:
            stack = [g for g in stack if not isinstance(g, BudgetGuard)]
            stack.insert(0, BudgetGuard(parse_budget(self.budget)))
        return stack

    def label(self) -> str:
        return f"{self.guards}+budget" if self.budget else self.guards

    def gate(self, approver: str | None = None) -> ApprovalGate | None:
        name = approver or self.approver
        if name not in APPROVERS:          # checked even when no tool needs approval: a typo is never ignored
            raise UsageError(f"--approver {name!r}: use one of {', '.join(APPROVERS)}")
        if not self.approve:
            return None
        rule = ApprovalRule(tuple(self.approve), f"tools matching {', '.join(self.approve)} need approval (--approve)")
        return ApprovalGate(ApprovalRules((rule,)), approver_named(name))
