"""``tether case``: list, show and validate case files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..errors import CaseFileError
from ..evals import case_json_schema, load_case, load_suite
from ..evals.loader import case_files
from ._common import console, err_console, user_errors

app = typer.Typer(
    help=(
        "List, show and validate evaluation cases.\n\n"
        "Examples:\n\n"
        "  tether case list\n\n"
        "  tether case show C4-LD-01\n\n"
        "  tether case validate ./my-cases/*.yaml\n\n"
        "  tether case schema > case.schema.json"
    ),
    no_args_is_help=True,
)


@app.command("list", help="List the cases of a suite.\n\nExample:  tether case list   |   tether case list ./my-cases")
def list_cases(suite: Annotated[str, typer.Argument(help="built-in suite name or a directory")] = "c4") -> None:
    with user_errors():
        cases = load_suite(suite)
    table = Table(title=f"{suite}: {len(cases)} cases")
    for col in ("id", "dim", "difficulty", "title", "tools", "criteria"):
        table.add_column(col, overflow="fold")
    for c in cases:
        crit = f"{len(c.auto_criteria)} auto, {len(c.judge_criteria)} judge"
        table.add_row(c.id, c.dimension, c.difficulty, c.title, ", ".join(c.tools), crit)
    console.print(table)


@app.command("show", help="Print one case as YAML.\n\nExample:  tether case show C4-DR-01")
def show_case(
    case_id: Annotated[str, typer.Argument(help="case id, e.g. C4-LD-01")],
    suite: Annotated[str, typer.Option(help="built-in suite name or a directory")] = "c4",
) -> None:
    with user_errors():
        for f in case_files(suite):
            c = load_case(f)
            if c.id == case_id:
                console.print(f"[dim]# {f}[/dim]")
                console.print(f.read_text(encoding="utf-8"), markup=False, highlight=False)
                return
    err_console.print(f"no case {case_id!r} in {suite}")
    raise typer.Exit(2)


@app.command("validate", help=(
    "Validate case files: schema, known tools, consistent tool configs.\n\n"
    "Errors name file, line and field; the exit code is 1 when any file is invalid.\n\n"
    "Example:  tether case validate my-case.yaml other.yaml"))
def validate(files: Annotated[list[Path], typer.Argument(help="case YAML files or directories")]) -> None:
    bad = 0
    checked = 0
    for source in files:
        with user_errors():
            paths = case_files(source)
        for path in paths:
            checked += 1
            try:
                c = load_case(path)
            except CaseFileError as exc:
                bad += 1
                for loc, msg in exc.problems:
                    err_console.print(f"error {loc}: {msg}", markup=False, highlight=False)
                continue
            console.print(f"ok {path} ({c.id})", markup=False, highlight=False)
    if bad:
        err_console.print(f"{bad} of {checked} file(s) invalid")
        raise typer.Exit(1)


@app.command("schema", help="Print the case JSON Schema.\n\nExample:  tether case schema > case.schema.json")
def schema() -> None:
    print(json.dumps(case_json_schema(), ensure_ascii=False, indent=2))
