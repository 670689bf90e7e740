"""Every listing command prints through :func:`emit`: one ``--format`` for all of them.

* ``table``: a Rich table for a person at a terminal (the default there). Cells fold
  at the terminal's width, never cut: an id is always whole.
* ``plain``: the default when stdout is not a terminal (a pipe, a file, a CI log):
  a header line, then one row per line, cells separated by a tab, nothing cut or
  folded at any width (``cut -f``, ``awk -F'\\t'``, ``grep``). A tab inside a cell
  becomes a space, a line break `` | ``. Notes (totals, the next page) go to stderr.
* ``json``: one JSON document (UTF-8, not ``\\u`` escaped), the same fields as the
  table under stable keys: ``{"kind": ..., "rows": [{column: value, ...}], ...}``;
  values keep their type (numbers, null), not their display text. A command
  whose data already has a documented JSON document (``stats``, ``guard-check``)
  prints that one instead. docs/cli.md lists the keys of each command.
"""

from __future__ import annotations

import enum
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Optional

import typer

from .._terminal import clean_text, json_text


class Format(str, enum.Enum):
    """--format: how a listing is printed."""

    table = "table"
    plain = "plain"
    json = "json"


FormatOpt = Annotated[Optional[Format], typer.Option(
    "--format", help="table (the default at a terminal), plain (tab-separated with a header line, the default "
                     "when piped; never cut) or json (one document)", show_default=False)]


@dataclass(frozen=True)
class Column:
    """One column: ``key`` names it in JSON, ``header`` in a table and in plain text;
    ``show`` turns a value into its text (default: str, None as ``-``); ``whole``: an id,
    never folded in a table either (the other columns give way)."""

    key: str
    header: str | None = None
    show: Callable[[Any], str] | None = None
    right: bool = False
    whole: bool = False

    def text(self, value: Any) -> str:
        if self.show is not None:
            return self.show(value)
        if value is None:
            return "-"
        return str(value)


@dataclass
class Listing:
    """Rows of one listing, and what a person reads around them."""

    kind: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    title: str | None = None
    notes: list[str] = field(default_factory=list)       # after the rows (table: stdout; plain: stderr)
    extra: dict[str, Any] = field(default_factory=dict)  # more top-level JSON fields (total, next page, ...)
    document: dict[str, Any] | None = None               # a command's own documented JSON document instead


def resolve(fmt: Format | None, console: Any = None) -> Format:
    """The format asked for, or the default for where stdout goes."""
    if fmt is not None:
        return fmt
    if console is None:
        from ._common import console
    return Format.table if console.is_terminal else Format.plain


def plain_cell(text: str) -> str:
    """A cell on one line: line breaks become `` | ``, a tab a space."""
    return _BREAKS.sub(" | ", clean_text(text).strip()).replace("\t", " ")


_BREAKS = re.compile(r"[ \t]*(?:\r\n|\r|\n)+[ \t]*")


def json_document(listing: Listing) -> dict[str, Any]:
    if listing.document is not None:
        return listing.document
    return {"kind": listing.kind, **listing.extra,
            "columns": [c.key for c in listing.columns],
            "rows": [{c.key: row.get(c.key) for c in listing.columns} for row in listing.rows]}


def emit(listing: Listing, fmt: Format | None) -> None:
    """Print ``listing`` as ``fmt`` (None: table at a terminal, plain otherwise)."""
    from ._common import console, err_console

    chosen = resolve(fmt, console)
    if chosen is Format.json:
        _write(json_text(json.dumps(json_document(listing), ensure_ascii=False, indent=2)))
        return
    if chosen is Format.plain:
        lines = ["\t".join(plain_cell(c.header or c.key) for c in listing.columns)]
        lines += ["\t".join(plain_cell(c.text(row.get(c.key))) for c in listing.columns) for row in listing.rows]
        _write("\n".join(lines))
        for note in ([listing.title] if listing.title else []) + listing.notes:
            err_console.print(note, highlight=False, soft_wrap=True)
        return
    from rich import box
    from rich.table import Table

    table = Table(title=listing.title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    from rich.cells import cell_len

    cells = [[c.text(row.get(c.key)) for c in listing.columns] for row in listing.rows]
    least = 0                  # what the table needs at the least: its ids whole, the other headers' words
    for i, c in enumerate(listing.columns):
        header = c.header or c.key
        widest = max((cell_len(line) for row in cells for line in row[i].splitlines()), default=0)
        least += 3 + (max(widest, cell_len(header)) if c.whole else max(4, *(cell_len(w) for w in header.split())))
        # an id never folds; another column wraps between words
        table.add_column(header, overflow="fold", justify="right" if c.right else "left",
                         no_wrap=c.whole, min_width=max(widest, cell_len(header)) if c.whole else None)
    for row_cells in cells:
        table.add_row(*row_cells)
    if least > console.width:
        # narrower than that, every row on one line at its natural width: the terminal
        # wraps the line, never a cell
        from rich.measure import Measurement

        from .._terminal import clean_console

        width = max(Measurement.get(console, console.options.update(width=10_000), table).maximum, least)
        clean_console(file=console.file, width=width, force_terminal=console.is_terminal,
                      color_system=console.color_system).print(table)
    else:
        console.print(table)
    for note in listing.notes:
        console.print(note, highlight=False, soft_wrap=True)


def _write(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
