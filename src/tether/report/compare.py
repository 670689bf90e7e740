"""What the guards changed: the same suite under several guard stacks, side by side."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from ..evals.results import Results
from .terminal import VERDICT_STYLE


def _rate(m) -> str:
    from .overview import rate_text

    return rate_text(m.model_dump() if m is not None else None)


def render_guard_comparison(results: Results, console: Console) -> None:
    """Per model: each dimension's rate under every stack, then the cases whose automatic
    verdict changed between stacks (the case table above has every verdict)."""
    models = list(dict.fromkeys(r.model for r in results.runs))
    for model in models:
        runs = [r for r in results.runs if r.model == model]
        if len(runs) < 2:
            continue
        console.print(Text(f"what the guards changed · {model}", style="bold"), highlight=False)
        stacks = " / ".join(f"guards {r.guards}" for r in runs)
        for dim, base in runs[0].dimensions.items():
            rates = " -> ".join(_rate(r.dimensions.get(dim)) for r in runs)
            console.print(f"  {dim} {base.name} ({stacks}): {rates}", highlight=False, soft_wrap=True)
        by_case = [{c.case_id: c for c in r.cases} for r in runs]
        changed = []
        rank = {d: i for i, d in enumerate(runs[0].dimensions)}
        for case_id in sorted(by_case[0], key=lambda cid: (rank.get(by_case[0][cid].dimension, 99), cid)):
            verdicts = [m[case_id].auto_verdict if case_id in m else "-" for m in by_case]
            if len(set(verdicts)) > 1:
                changed.append((case_id, verdicts))
        if not changed:
            console.print("  no automatic verdict changed", style="dim", highlight=False)
        for case_id, verdicts in changed:
            line = Text(f"  changed {case_id}: ")
            for i, v in enumerate(verdicts):
                if i:
                    line.append(" -> ")
                line.append(v, style=VERDICT_STYLE.get(v, ""))
            console.print(line, highlight=False, soft_wrap=True)
