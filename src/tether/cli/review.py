"""``tether review``: export unclear / unjudged criteria for a person, import the verdicts."""

from __future__ import annotations

import getpass
import shutil
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..evals.review import export_review, import_review, read_review
from ._common import console, user_errors


def default_reviewer() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
from .score import load_cases, load_results, render_all, render_judging

app = typer.Typer(
    help=(
        "Human review of the criteria no counter or judge decided (unclear / unjudged).\n\n"
        "Export writes a YAML file with, per case and trial, each such criterion (rubric, pass_when, "
        "fail_when, the case's wording) and an excerpt of the run, with an empty verdict: and reason: "
        "to fill. Import records the verdicts as judged_by human (with the reviewer's name, when, and "
        "what each verdict replaced) and rebuilds the metrics.\n\n"
        "Examples:\n\n"
        "  tether review export results.json --out review.yaml\n\n"
        "  tether review import review.yaml --results results.json          # in place, keeps results.json.bak\n\n"
        "  tether review import review.yaml --results results.json --json reviewed.json"
    ),
    no_args_is_help=True,
)


@app.command("export", help=(
    "Write the unclear and unjudged criteria of a results document to a YAML file for review.\n\n"
    "Examples:\n\n"
    "  tether review export results.json\n\n"
    "  tether review export results.judged.json --out review.yaml --cases ./my-cases"
))
def export_command(
    results_path: Annotated[Path, typer.Argument(metavar="RESULTS.json", help="a results document (tether eval / score --json)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="the review file to write")] = Path("review.yaml"),
    cases: Annotated[Optional[list[str]], typer.Option("--cases", help="where the cases are (default: the built-in suite the results name), repeatable")] = None,
    store: Annotated[Optional[str], typer.Option(help="the store holding the runs, for the excerpts (default: the one the results name)")] = None,
) -> None:
    with user_errors():
        results = load_results(results_path)
        case_list = load_cases(results, cases)
        path, count = export_review(results, case_list, out, store=store, results_path=results_path)
    if count:
        console.print(f"review: {path} · {count} criteria to decide (fill in verdict: and reason:), then\n"
                      f"  tether review import {path} --results {results_path}", highlight=False, soft_wrap=True)
    else:
        console.print(f"review: {path} · nothing to review: every criterion is decided", highlight=False, soft_wrap=True)


@app.command("import", help=(
    "Record the verdicts of a filled review file (judged_by human) and rebuild the metrics.\n\n"
    "Verdicts must be pass, fail or unclear (empty: skipped); a bad value is an error with file and line. "
    "Writes the results in place, keeping a .bak copy, unless --json is given.\n\n"
    "Examples:\n\n"
    "  tether review import review.yaml --results results.json\n\n"
    "  tether review import review.yaml --results results.json --json reviewed.json"
))
def import_command(
    review_path: Annotated[Path, typer.Argument(metavar="REVIEW.yaml", help="a filled review file")],
    results_path: Annotated[Path, typer.Option("--results", "-r", help="the results document the review was exported from")],
    json_path: Annotated[Optional[Path], typer.Option("--json", help="write the updated results here instead of in place")] = None,
    cases: Annotated[Optional[list[str]], typer.Option("--cases", help="where the cases are (default: the built-in suite the results name), repeatable")] = None,
    reviewer: Annotated[Optional[str], typer.Option(help="who reviewed, recorded with each verdict (default: your user name)")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="summary only, no per-case tables")] = False,
) -> None:
    with user_errors():
        entries = read_review(review_path)        # the file being imported first: its problems before any loading
        results = load_results(results_path)
        case_list = load_cases(results, cases)
        updated, count = import_review(entries, results, case_list, reviewer=reviewer or default_reviewer())
    render_all(updated, quiet)
    render_judging(updated, console)
    target = json_path or results_path
    if json_path is None:
        backup = results_path.with_name(results_path.name + ".bak")
        shutil.copy2(results_path, backup)
        console.print(f"backup: {backup}", style="dim", highlight=False, soft_wrap=True)
    updated.save(target)
    console.print(f"recorded {count} human verdict(s) · results: {target}", highlight=False, soft_wrap=True)
