"""``tether diff`` and ``tether baseline``: regression diffs and accepted baselines."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..diff import (
    CHANGE_TYPES,
    ResultsFile,
    SideEffects,
    TrajectoryDiff,
    accept_baseline,
    check_change_type,
    diff_results,
    diff_trajectories,
    find_baseline,
    list_baselines,
    load_input,
)
from ..diff.render import render_results_diff, render_trajectory_diff, render_violations
from ..errors import UsageError
from ._common import console, err_console, user_errors
from ._listing import Column, FormatOpt, Listing, emit

DIFF_FORMAT = "tether.diff"


class ChangeTypeChoice(StrEnum):
    prompt = "prompt"
    tool_schema = "tool_schema"
    model = "model"
    memory = "memory"
    orchestration = "orchestration"
    performance = "performance"


HELP = """Compare two runs part by part: step, args, recovery, terminal, text.

BASE and NEW are each a results document (tether eval --json) or a single run export (tether runs export RUN > run.jsonl). For results, each trial's run is read from the store the results name (or --store), checked against the digest the results pinned, and every case is compared: verdict flips first, then per trial the tool sequence (added / removed / moved calls), changed arguments, how failures were handled, the terminal status and the final reply; then a summary with flipped cases, per-dimension rates and pass@1.

With --change-type, the differences that change type forbids are listed and the exit code is 1 when there is any (0 otherwise; 2 on usage errors). Tools named with --side-effect, and tools whose names start with create_, submit_, update_, delete_, send_, pay_ or refund, count as side-effecting. See docs/diff.md for the change-type table.

Examples:

  tether eval c4 --model policy:stubborn --json base.json

  tether eval c4 --model policy:steady --json new.json

  tether diff base.json new.json

  tether diff base.json new.json --change-type prompt --json diff.json

  tether diff both.json both.json --base-model policy:stubborn --new-model policy:steady

  tether diff base.json new.json --case 'C4-LD-*' --quiet

  tether runs export RUN_A > a.jsonl; tether runs export RUN_B > b.jsonl; tether diff a.jsonl b.jsonl -t orchestration

  tether diff --baseline c4 new.json -t model --side-effect book_ticket
"""


def diff_command(
    paths: Annotated[list[Path], typer.Argument(help="BASE NEW (results JSON or trace JSONL); with --baseline, NEW only",
                                                metavar="BASE NEW", show_default=False)],
    change_type: Annotated[Optional[ChangeTypeChoice], typer.Option("--change-type", "-t", help="the kind of change made; exit 1 when the diff holds a difference it forbids")] = None,
    base_model: Annotated[Optional[str], typer.Option(help="model of the base run, when BASE holds several")] = None,
    new_model: Annotated[Optional[str], typer.Option(help="model of the new run, when NEW holds several")] = None,
    base_guards: Annotated[Optional[str], typer.Option(help="guard stack of the base run, when BASE holds several")] = None,
    new_guards: Annotated[Optional[str], typer.Option(help="guard stack of the new run, when NEW holds several")] = None,
    case: Annotated[Optional[list[str]], typer.Option("--case", "-c", help="only cases whose id matches this glob, repeatable")] = None,
    side_effect: Annotated[Optional[list[str]], typer.Option("--side-effect", help="a side-effecting tool name, repeatable (adds to the default prefixes)")] = None,
    baseline: Annotated[Optional[str], typer.Option(help="diff NEW against the latest accepted baseline of this name")] = None,
    baseline_dir: Annotated[Path, typer.Option(help="where baselines are kept")] = Path("tether-baselines"),
    store: Annotated[Optional[str], typer.Option(help="the store holding the runs (default: the one each results document names)")] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="write the diff and violations as JSON here")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="summary and violations only")] = False,
) -> None:
    with user_errors():
        if baseline is not None:
            if len(paths) != 1:
                raise UsageError(f"with --baseline give only NEW (got {len(paths)} paths)")
            entry, base = find_baseline(baseline, baseline_dir)
            console.print(f"baseline {entry.name}: accepted {entry.accepted_at} · {entry.reason}", highlight=False)
            new = load_input(paths[0], store=store)
        else:
            if len(paths) != 2:
                raise UsageError(f"give BASE and NEW (got {len(paths)} path(s)), or --baseline NAME NEW")
            base, new = load_input(paths[0], store=store), load_input(paths[1], store=store)
        if isinstance(base, ResultsFile) != isinstance(new, ResultsFile):
            raise UsageError("BASE and NEW must both be results documents or both be traces")
        if isinstance(base, ResultsFile) and isinstance(new, ResultsFile):
            diff = diff_results(base, new, base_run=base_model, new_run=new_model, base_guards=base_guards,
                                new_guards=new_guards, cases=case)
            if case and not diff.cases:
                raise UsageError(f"no case matches {', '.join(case)}")
        else:
            diff = diff_trajectories(base, new)  # type: ignore[arg-type]
        rules = CHANGE_TYPES[change_type.value] if change_type else None
        violations = check_change_type(diff, rules, side_effects=SideEffects(frozenset(side_effect or ()))) if rules else []
    if isinstance(diff, TrajectoryDiff):
        render_trajectory_diff(diff, console, title=f"{paths[-2] if len(paths) > 1 else 'base'} -> {paths[-1]}")
    else:
        render_results_diff(diff, console, quiet=quiet)
    if rules is not None:
        console.print()
        render_violations(rules, violations, console)
    if json_path:
        doc = {"format": DIFF_FORMAT, "version": 1, "kind": "trajectory" if isinstance(diff, TrajectoryDiff) else "results",
               "change_type": rules.name if rules else None, "diff": diff.model_dump(mode="json"),
               "violations": [v.model_dump(mode="json") for v in violations]}
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
        console.print(f"diff: {json_path}", highlight=False)
    if violations:
        raise typer.Exit(1)


BASELINE_HELP = """Accept results as the new baseline (with a reason), list accepted baselines.

Every accepted difference needs a reason, a review record and a new baseline. A baseline is self-contained: a copy of the results and an export of every run they reference (checked against the digests the results pinned), so later diffs never depend on the store.

Examples:

  tether baseline accept results.json --reason "refund prompt: wording only (PR 42)"

  tether baseline list

  tether diff --baseline c4 new.json --change-type prompt
"""

baseline_app = typer.Typer(help=BASELINE_HELP, no_args_is_help=True, rich_markup_mode="rich")

ACCEPT_HELP = """Record RESULTS as a new baseline: copy it and an export of each of its runs (from the store the results name, or --store) under --dir and append an entry (name, suite, models, reason, accepted_at, git commit, source) to DIR/history.jsonl.

The name defaults to the suite (c4); accepting again under the same name keeps the history and makes the new one the latest. An empty --reason is refused.

Examples:

  tether baseline accept results.json --reason "model upgrade reviewed (PR 7)"

  tether baseline accept results.json --name nightly --dir ci/baselines -r "first"
"""


@baseline_app.command("accept", help=ACCEPT_HELP, no_args_is_help=True)
def accept_command(
    results: Annotated[Path, typer.Argument(help="a results document (tether eval --json)", metavar="RESULTS.json",
                                               show_default=False)],
    reason: Annotated[str, typer.Option("--reason", "-r", help="why the differences from the previous baseline are accepted", show_default=False)],
    name: Annotated[Optional[str], typer.Option(help="baseline name (default: the suite)")] = None,
    directory: Annotated[Path, typer.Option("--dir", help="where baselines are kept")] = Path("tether-baselines"),
    store: Annotated[Optional[str], typer.Option(help="the store holding the runs (default: the one the results name)")] = None,
) -> None:
    with user_errors():
        entry = accept_baseline(results, reason=reason, name=name, directory=directory, store=store)
    console.print(f"accepted baseline {entry.name} ({entry.accepted_at}): {directory / entry.path}", highlight=False)
    console.print(f"  {entry.runs} run(s) copied · models {', '.join(entry.models)} · "
                  f"commit {(entry.git_commit or 'unknown')[:12]}{' (dirty)' if entry.git_dirty else ''}",
                  highlight=False)
    if entry.missing_runs:
        err_console.print(f"warning: {len(entry.missing_runs)} run(s) referenced by {results} could not be copied; "
                          "diffs against this baseline will compare counters, criteria and status only for them:",
                          highlight=False)
        for why in entry.missing_runs:
            err_console.print(f"  {why}", highlight=False)


LIST_HELP = """Show the accepted baselines, oldest first (the last of a name is the one --baseline uses).

Examples:

  tether baseline list

  tether baseline list --dir ci/baselines
"""


@baseline_app.command("list", help=LIST_HELP)
def list_command(
    directory: Annotated[Path, typer.Option("--dir", help="where baselines are kept")] = Path("tether-baselines"),
    fmt: FormatOpt = None,
) -> None:
    with user_errors():
        entries = list_baselines(directory)
    rows = [{"name": e.name, "accepted": e.accepted_at.replace("+00:00", "Z"), "suite": e.suite, "models": list(e.models),
             "commit": e.git_commit, "dirty": e.git_dirty, "runs": e.runs, "reason": e.reason} for e in entries]
    emit(Listing("baselines", [Column("name", whole=True), Column("accepted"), Column("suite"), Column("models", show=", ".join),
                               Column("commit", show=lambda c: (c or "-")[:8]),
                               Column("dirty", show=lambda d: "dirty" if d else "-"),
                               Column("runs", right=True), Column("reason")], rows,
                 title=f"baselines · {directory}", extra={"dir": str(directory)},
                 notes=[] if entries else [f"no baselines in {directory}; accept one with "
                                           "`tether baseline accept RESULTS.json --reason ...`"]), fmt)
