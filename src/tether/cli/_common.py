"""Shared CLI helpers: consoles and turning every failure into one clear line.

Exit codes (documented in README.md): 0 ok; 1 a check failed (fail-under, a
diff a change type forbids); 2 bad input or misuse (the message names the
file, line and field where there is one); 3 a guard or an approval ended the
run; 4 trials ended in error (infrastructure); 70 an internal error (a bug:
rerun with ``--debug`` or ``TETHER_DEBUG=1`` for the traceback); 130
interrupted.
"""

from __future__ import annotations

import contextlib
import enum
import os
from typing import Iterator

import typer
from rich.console import Console
from rich.text import Text

from .._terminal import clean_console, clean_text, json_text  # noqa: F401  (the one helper, re-exported)
from ..errors import CaseFileError, DiskFull, UsageError


class Lang(str, enum.Enum):
    """--lang: the language of report labels (tether's CLI text is English)."""

    en = "en"
    zh = "zh"


class SystemPromptMode(str, enum.Enum):
    """--system-prompt: a framework agent's own instructions against the case's reference prompt."""

    agent = "agent"
    case = "case"
    both = "both"

def data_json(value) -> str:
    """Data (arguments, tool results) as people read it in the CLI: JSON, UTF-8 as is,
    never a Python repr (``{"keyword": "李宁"}``, not ``{'keyword': '李宁'}``)."""
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


# every printer of the CLI: control characters in data never reach the terminal (tether._terminal)
console: Console = clean_console()
err_console: Console = clean_console(stderr=True, soft_wrap=True)


EXIT_INPUT = 2
EXIT_INTERNAL = 70
EXIT_IO = 74                  # the disk is full (sysexits EX_IOERR)

# Bounds of numeric options (docs/cli.md, "Limits"): past them a command refuses to start.
MAX_TRIALS = 1_000            # --trials
MAX_RUNS = 100_000            # runs one eval makes (subjects x cases x trials x guard stacks)
MAX_CONCURRENCY = 256         # --concurrency
MAX_STEPS = 1_000             # --max-steps
MAX_JUDGE_SAMPLES = 20        # --judge-samples


def debug_enabled() -> bool:
    return os.environ.get("TETHER_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def describe(exc: BaseException) -> tuple[int, str]:
    """(exit code, one-line message) for a failure that is not a tether error."""
    import errno
    import sqlite3

    from ..errors import DiskFull

    if isinstance(exc, DiskFull):
        return EXIT_IO, str(exc)
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return EXIT_IO, (f"{exc.filename or 'a file'}: the disk is full ({exc.strerror or 'no space left'}); "
                         "free some space and rerun")
    if isinstance(exc, CaseFileError):
        return EXIT_INPUT, "\n".join(f"{loc}: {msg}" for loc, msg in exc.problems) or str(exc)
    if isinstance(exc, UsageError):
        return EXIT_INPUT, str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return EXIT_INPUT, f"input is not UTF-8 text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, RecursionError):
        return EXIT_INPUT, "input is nested too deeply to read"
    if isinstance(exc, MemoryError):
        return EXIT_INPUT, "input is too large to read"
    if isinstance(exc, IsADirectoryError):
        return EXIT_INPUT, f"{exc.filename}: is a directory, expected a file"
    if isinstance(exc, FileNotFoundError):
        return EXIT_INPUT, f"{exc.filename}: no such file"
    if isinstance(exc, PermissionError):
        return EXIT_INPUT, f"{exc.filename}: permission denied"
    if isinstance(exc, OSError):
        return EXIT_INPUT, f"{exc.filename or 'I/O'}: {exc.strerror or exc}"
    if isinstance(exc, sqlite3.Error):
        from ..store.opening import LAST_OPENED, explain

        return describe(explain(exc, LAST_OPENED[-1] if LAST_OPENED else "(--store / $TETHER_STORE)"))
    if isinstance(exc, (ValueError, OverflowError)) and "integer string conversion" in str(exc):
        return EXIT_INPUT, "input has a number too long to read"
    return EXIT_INTERNAL, (f"internal error: {type(exc).__name__}: {exc} (a bug in tether: rerun with --debug "
                           "for the traceback and report it)")


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
    except DiskFull as exc:
        err_console.print(Text.assemble(("error ", "bold red"), str(exc)), highlight=False)
        raise typer.Exit(EXIT_IO) from None
    except (typer.Exit, typer.Abort, SystemExit, KeyboardInterrupt):
        raise
    except Exception as exc:
        if debug_enabled():
            raise
        code, message = describe(exc)
        err_console.print(Text.assemble(("error ", "bold red"), message), highlight=False)
        raise typer.Exit(code) from None
