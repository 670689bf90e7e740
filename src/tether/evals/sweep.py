"""Threshold sweeps: one guard setting, several values, the suite run once per value.

    tether eval c4 --model policy:stubborn --sweep loop.max_identical=3,5,10

:func:`sweep_stacks` turns ``loop.max_identical`` and ``[3, 5, 10]`` into one
guard-stack factory per value (the reference stack, or the ``--guards`` base,
with that one setting changed), labelled ``loop.max_identical=3`` and so on, to
run side by side like ``--guards off --guards on``. :func:`render_sweep` prints,
per model, each case's verdict, tool calls and tokens per value, then the
totals, so the trade-off (fewer calls against fewer passes) is on one screen.

A setting is ``<guard>.<field>``: a field of the guard itself (``result.check_ids``),
or of its configuration (``loop.*`` is :class:`~tether.guards.loop.LoopConfig`,
``budget.*`` is :class:`~tether.guards.budget.Budget`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._terminal import plural
from ..errors import UsageError
from ..guards._base import Guard
from ..guards.budget import Budget
from ..guards.stacks import guard_stack
from .results import Results

StackFactory = Callable[[], Sequence[Guard]]
_HOLDERS = ("config", "budget")     # where a guard keeps its settings


def parse_sweep(text: str) -> tuple[str, list[str]]:
    """``"loop.max_identical=3,5,10"`` -> ``("loop.max_identical", ["3", "5", "10"])``."""
    setting, sep, raw = text.partition("=")
    values = [v.strip() for v in raw.split(",") if v.strip()]
    if not sep or "." not in setting or not values:
        raise UsageError(f"--sweep {text!r}: expected <guard>.<setting>=v1,v2,... such as loop.max_identical=3,5,10")
    return setting.strip(), values


def _coerce(current: Any, raw: str, setting: str) -> Any:
    try:
        if isinstance(current, bool):
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes", "on")
        if isinstance(current, int):
            return int(raw)
        if isinstance(current, float):
            return float(raw)
        if current is None:      # an optional limit: a number
            number = float(raw)
            return int(number) if number.is_integer() else number
    except ValueError:
        kind = "true/false" if isinstance(current, bool) else "a number"
        raise UsageError(f"--sweep {setting}: {raw!r} is not {kind}") from None
    if isinstance(current, str):
        return raw
    raise UsageError(f"--sweep {setting}: a {type(current).__name__} setting cannot be swept from the command line")


def _with_setting(guard: Any, field: str, raw: str, setting: str) -> Any:
    own = {f.name for f in dataclasses.fields(guard)} if dataclasses.is_dataclass(guard) else set()
    if field in own and field not in _HOLDERS:
        return dataclasses.replace(guard, **{field: _coerce(getattr(guard, field), raw, setting)})
    for holder in _HOLDERS:
        cfg = getattr(guard, holder, None)
        if cfg is not None and dataclasses.is_dataclass(cfg) and field in {f.name for f in dataclasses.fields(cfg)}:
            value = _coerce(getattr(cfg, field), raw, setting)
            return dataclasses.replace(guard, **{holder: dataclasses.replace(cfg, **{field: value})})
    known = sorted(own - set(_HOLDERS))
    for holder in _HOLDERS:
        cfg = getattr(guard, holder, None)
        if cfg is not None and dataclasses.is_dataclass(cfg):
            known += [f.name for f in dataclasses.fields(cfg)]
    raise UsageError(f"--sweep {setting}: the {guard.name} guard has no setting {field!r}; "
                     f"known: {', '.join(sorted(set(known)))}")


def sweep_stacks(setting: str, values: Sequence[Any], base: str = "on") -> dict[str, StackFactory]:
    """One labelled guard-stack factory per value of ``setting`` (``loop.max_identical``)."""
    guard_name, _, field = setting.partition(".")
    make_base = guard_stack(base)
    if not any(g.name == guard_name for g in make_base()):
        raise UsageError(f"--sweep {setting}: no {guard_name!r} guard in the stack {base!r} "
                         f"(it has: {', '.join(g.name for g in make_base()) or 'none'})")
    stacks: dict[str, StackFactory] = {}
    for value in values:
        raw = str(value)
        _with_setting(next(g for g in make_base() if g.name == guard_name), field, raw, setting)   # fail fast

        def make(raw: str = raw) -> Sequence[Guard]:
            return tuple(_with_setting(g, field, raw, setting) if g.name == guard_name else g for g in make_base())

        stacks[f"{setting}={raw}"] = make
    return stacks


def _usage(store: Any, run_id: str | None, model: str) -> tuple[int, float]:
    """(tokens, USD) of one trial from its stored run; the cost is the
    recorded one, else priced from the budget's price table (0 when unknown)."""
    if store is None or not run_id or store.get_run(run_id) is None:
        return 0, 0.0
    from ..store.export import load_run

    u = load_run(store, run_id).usage()
    cost = u.cost
    if not cost:
        price = Budget().price(model)
        cost = (u.input_tokens * price[0] + u.output_tokens * price[1]) / 1_000_000 if price else 0.0
    return u.input_tokens + u.output_tokens, cost


def render_sweep(results: Results, console: Console, labels: Sequence[str], store: Any = None) -> None:
    """Per model: a case x value table (automatic verdict · tool calls · tokens)
    and totals (passes, tool calls, tokens, cost, runs a guard ended)."""
    for model in dict.fromkeys(r.model for r in results.runs):
        runs = [r for r in results.runs if r.model == model and r.guards in labels]
        if not runs:
            continue
        table = Table(title=f"{model} · sweep of {runs[0].guards.split('=')[0]}", box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("case", no_wrap=True)
        for r in runs:
            table.add_column(r.guards.split("=", 1)[1], no_wrap=True)
        totals = [{"calls": 0, "tokens": 0, "cost": 0.0, "pass": 0, "scored": 0, "stops": 0} for _ in runs]
        for i, case in enumerate(runs[0].cases):
            cells = []
            for k, r in enumerate(runs):
                c = r.cases[i]
                calls = sum(t.counters.tool_calls for t in c.trials)
                used = [_usage(store, t.run_id, model) for t in c.trials]
                tok = sum(u[0] for u in used)
                tot = totals[k]
                tot["calls"] += calls
                tot["tokens"] += tok
                tot["cost"] += sum(u[1] for u in used)
                tot["stops"] += sum(1 for t in c.trials if t.status in ("loop_aborted", "needs_human", "budget_exceeded"))
                if any(cr.kind == "auto" for t in c.trials for cr in t.criteria):
                    tot["scored"] += 1
                    tot["pass"] += c.auto_verdict == "pass"
                cell = Text(f"{c.auto_verdict}", style={"pass": "green", "fail": "red"}.get(str(c.auto_verdict), "yellow"))
                cell.append(f" · {plural(calls, 'call')} · {tok} tok", style="dim")
                cells.append(cell)
            table.add_row(case.case_id, *cells)
        table.add_section()
        table.add_row("automatic passes", *[f"{t['pass']}/{t['scored']}" for t in totals])
        table.add_row("tool calls", *[str(t["calls"]) for t in totals])
        table.add_row("tokens", *[str(t["tokens"]) for t in totals])
        table.add_row("cost (USD)", *[f"{t['cost']:.4f}" for t in totals])
        table.add_row("runs a guard ended", *[str(t["stops"]) for t in totals])
        console.print(table)
