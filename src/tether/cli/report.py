"""``tether report``: a results file as one self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import console, user_errors

HELP = """Write a results file (tether eval --json) as one self-contained HTML report.

The file has every page inline (overview, what the guards changed, charts, each
case, each trial's transcript, guard-off/on diffs) and works from file:// with
no network. With --against, a diff page compares another results file (the
base) with this one.

Examples:

  tether report r.json --html report.html

  tether report new.json --html report.html --against baseline.json
"""


def report_command(
    results: Annotated[Path, typer.Argument(help="the results document (tether eval --json)")],
    html: Annotated[Path, typer.Option("--html", help="write the HTML report here")] = Path("report.html"),
    against: Annotated[Optional[Path], typer.Option(help="a base results file: add a diff page (base -> this)")] = None,
    store: Annotated[Optional[str], typer.Option(help="the store holding the trials' runs (default: the one the results name)")] = None,
) -> None:
    from ..report.html import write_report

    with user_errors():
        out = write_report(results, html, store=store, against=against)
    size = out.stat().st_size
    console.print(f"report: {out} ({size / 1024:.0f} KiB) · open it in a browser (file://{out.resolve()})",
                  highlight=False)
