"""``tether case``: list, show, validate, create and describe case files.

Output meant to be saved or piped (``show``, ``schema``, ``new``, ``tools``,
``from-trace``) is written as raw text, never through Rich, so nothing is
wrapped at the terminal width.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import CaseFileError, UsageError
from ..evals.case_index import case_files, summaries
from ._common import user_errors
from ._listing import Column, FormatOpt, Listing, emit

app = typer.Typer(
    help=(
        "List, show, validate and create evaluation cases.\n\n"
        "Examples:\n\n"
        "  tether case list\n\n"
        "  tether case show C4-LD-01 > my-case.yaml\n\n"
        "  tether case new my-case\n\n"
        "  tether case validate ./my-cases\n\n"
        "  tether case test ./my-cases         # run the cases' examples, no model\n\n"
        "  tether case calibrate ./my-cases    # does each case tell steady from stubborn?\n\n"
        "  tether case tools                  # the scenario tools and their arguments\n\n"
        "  tether case from-trace RUN_ID -o from-run.yaml\n\n"
        "  tether case schema > case.schema.json"
    ),
    no_args_is_help=True,
)


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def _read(path: Path, load):
    """``load(path)``, or None after printing every problem (file:line:column) of a file that does not load."""
    try:
        return load(path)
    except CaseFileError as exc:
        for loc, msg in exc.problems:
            _err(f"error {loc}: {msg}")
    except UsageError as exc:
        _err(f"error {path}: {exc}")
    return None


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


@app.command("list", help="List the cases of a suite.\n\nExamples:\n\n  tether case list\n\n  tether case list ./my-cases --format json")
def list_cases(suite: Annotated[str, typer.Argument(help="built-in suite name or a directory")] = "c4",
               fmt: FormatOpt = None) -> None:
    with user_errors():
        cases = summaries(suite)
    rows = [{"id": c.id, "dimension": c.dimension, "difficulty": c.difficulty, "title": c.title,
             "tools": list(c.tools), "criteria": c.criteria} for c in cases]
    emit(Listing("cases", [Column("id", whole=True), Column("dimension", "dim"), Column("difficulty"), Column("title"),
                           Column("tools", show=", ".join), Column("criteria")], rows,
                 title=f"{suite}: {len(cases)} cases", extra={"suite": suite}), fmt)


@app.command("show", help=(
    "Print one case's YAML file as it is (save it, edit it, validate it).\n\n"
    "Ids match case-insensitively.\n\n"
    "Example:  tether case show C4-DR-01 > my-case.yaml"))
def show_case(
    case_id: Annotated[str, typer.Argument(help="case id, e.g. C4-LD-01")],
    suite: Annotated[str, typer.Option(help="built-in suite name or a directory")] = "c4",
) -> None:
    from ..evals.loader import find_case_file

    with user_errors():
        _, path = find_case_file(case_id, suite)
        _out(path.read_text(encoding="utf-8"))


@app.command("validate", help=(
    "Validate case files: schema, known tools, consistent tool configs.\n\n"
    "Every problem of a file is reported at once, as file:line:column [field]: message;\n"
    "the exit code is 1 when any file is invalid.\n\n"
    "Example:  tether case validate my-case.yaml other.yaml ./my-cases"))
def validate(files: Annotated[list[Path], typer.Argument(help="case YAML files or directories")]) -> None:
    from ..evals.loader import check_case

    bad = 0
    checked = 0
    for source in files:
        with user_errors():
            paths = case_files(source)
        for path in paths:
            checked += 1
            checked_case = _read(path, check_case)
            if checked_case is None:
                bad += 1
                continue
            c, warnings = checked_case
            for loc, msg in warnings:
                _err(f"warning {loc}: {msg}")
            _out(f"ok {path} ({c.id})" + (f", {len(warnings)} warning(s)" if warnings else ""))
    if bad:
        _err(f"{bad} of {checked} file(s) invalid")
        raise typer.Exit(1)


@app.command("test", help=(
    "Run the examples of case files (scripted behaviours with the verdicts they expect)\n"
    "without a model: every criterion whose verdict differs is reported with its evidence\n"
    "and description, naming the case, the example and the criterion. Exit code 1 on any\n"
    "mismatch or invalid file.\n\n"
    "Example:  tether case test my-case.yaml   |   tether case test ./my-cases"))
def test_cases(files: Annotated[list[Path], typer.Argument(help="case YAML files or directories, or a suite name (c4)")]) -> None:
    from ..evals.case_examples import test_case
    from ..evals.loader import load_case

    failed = bad = cases = examples = checked = 0
    without: list[str] = []
    for source in files:
        with user_errors():
            paths = case_files(str(source))      # a suite name (c4) or a path
        for path in paths:
            c = _read(path, load_case)
            if c is None:
                bad += 1
                continue
            cases += 1
            if not c.examples:
                if c.auto_criteria:
                    without.append(c.id)
                else:
                    _out(f"skip {c.id}: only a judge decides its criteria (examples check automatic ones)")
                continue
            with user_errors():
                result = test_case(c)
            examples += result.examples
            checked += result.checked
            if result.ok:
                _out(f"ok {c.id}: {result.examples} example(s), {result.checked} verdict(s) as expected")
            else:
                failed += 1
                for m in result.mismatches:
                    _err(f"FAIL {m}")
    if without:
        _err(f"warning: {len(without)} case(s) have no examples: {', '.join(without)}")
    _out(f"{cases} case(s), {examples} example(s), {checked} verdict(s) checked: "
         + ("all as expected" if not failed and not bad else f"{failed} case(s) with mismatches, {bad} invalid"))
    if failed or bad:
        raise typer.Exit(1)


@app.command("calibrate", help=(
    "Run the three calibration agents (policy:steady, policy:stubborn, policy:quitter) on\n"
    "case files, offline, and say per case whether it discriminates (steady passes,\n"
    "stubborn fails) and, if not, why (for example: steady asked for `page`, which has a\n"
    "default). What each agent does: docs/cases.md, Calibrate. Exit code 1 when a case does\n"
    "not discriminate.\n\n"
    "Example:  tether case calibrate my-case.yaml   |   tether case calibrate ./my-cases"))
def calibrate_cases(
    files: Annotated[list[Path], typer.Argument(help="case YAML files or directories, or a suite name (c4)")],
    as_json: Annotated[bool, typer.Option("--json", help="one JSON document instead of text")] = False,
) -> None:
    from ..evals.calibrate import as_json as to_json
    from ..evals.calibrate import calibrate, render
    from ..evals.loader import load_suite

    with user_errors():
        cases = load_suite(*(str(f) for f in files))      # a suite name (c4) or a path
        cals = calibrate(cases)
    _out(json.dumps(to_json(cals), ensure_ascii=False, indent=2) if as_json else render(cals))
    if not all(c.discriminates for c in cals):
        raise typer.Exit(1)


@app.command("schema", help="Print the case JSON Schema.\n\nExample:  tether case schema > case.schema.json")
def schema() -> None:
    from ..evals.case import case_json_schema

    _out(json.dumps(case_json_schema(), ensure_ascii=False, indent=2))


@app.command("new", help=(
    "Write NAME.yaml, a minimal valid case to start from: one tool declared by schema\n"
    "(mock_tools, so it runs anywhere), a fault injected into it, two criteria, and a\n"
    "passing and a failing example (tether case test runs them).\n\n"
    "Example:  tether case new my-case && tether case validate my-case.yaml && "
    "tether eval my-case.yaml --model policy:steady"))
def new_case(
    name: Annotated[str, typer.Argument(help="the case name; the file is NAME.yaml")],
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing file")] = False,
) -> None:
    from ..evals.templates import new_case_text

    with user_errors():
        path = Path(name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")
        if path.exists() and not force:
            raise UsageError(f"{path} exists; choose another name or pass --force")
        path.write_text(new_case_text(path.stem), encoding="utf-8")
    _out(f"wrote {path}; next: tether case validate {path} && tether case test {path} && "
         f"tether eval {path} --model policy:steady")


@app.command("tools", help=(
    "List the tools of a world (a tool catalog cases can name under tools:) with their\n"
    "arguments.\n\n"
    "Example:  tether case tools   |   tether case tools --world c4 --markdown"))
def tools(
    world: Annotated[Optional[str], typer.Option(help="a registered world (default: every world)")] = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="as the Markdown section of docs/cases.md")] = False,
) -> None:
    from ..evals.templates import tools_reference

    with user_errors():
        _out(tools_reference(world, markdown=markdown))


@app.command("from-trace", help=(
    "Turn a recorded run into a case skeleton: its user message and history, its tools\n"
    "declared as mock_tools and mocked from the recorded results, secrets redacted and\n"
    "personal data pseudonymised; criteria left as TODO comments (one placeholder so it\n"
    "validates).\n\n"
    "RUN is a run id in the store (tether runs list) or a trace file (JSON Lines).\n\n"
    "Example:  tether case from-trace C4-LD-01-3f2a1c -o ld01-from-run.yaml"))
def from_trace(
    run: Annotated[str, typer.Argument(help="a run id in the store, or a trace file (.jsonl)")],
    store: Annotated[Optional[str], typer.Option(help="the run store (default $TETHER_STORE or .tether/tether.db)")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write the case here (default: print it)")] = None,
    case_id: Annotated[Optional[str], typer.Option("--id", help="the new case's id (default: derived from the run)")] = None,
) -> None:
    from ..evals.from_trace import case_from_run, load_trajectory

    with user_errors():
        trajectory = load_trajectory(run, store)
        text = case_from_run(trajectory, case_id=case_id)
        if output is None:
            _out(text)
            return
        if output.exists():
            raise UsageError(f"{output} exists; choose another file")
        output.write_text(text, encoding="utf-8")
    _out(f"wrote {output}; next: tether case validate {output} && tether eval {output} --model policy:steady")
