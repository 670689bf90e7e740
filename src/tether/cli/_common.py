"""Shared CLI helpers: consoles and turning tether errors into clean exits."""

from __future__ import annotations

import contextlib
from typing import Iterator

import typer
from rich.console import Console
from rich.text import Text

from ..errors import CaseFileError, UsageError

console = Console()
err_console = Console(stderr=True, soft_wrap=True)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Print tether usage errors without a traceback and exit 2."""
    try:
        yield
    except CaseFileError as exc:
        for loc, msg in exc.problems:
            err_console.print(Text.assemble(("error ", "bold red"), f"{loc}: {msg}"), highlight=False)
        raise typer.Exit(2) from None
    except UsageError as exc:
        err_console.print(Text.assemble(("error ", "bold red"), str(exc)), highlight=False)
        raise typer.Exit(2) from None
