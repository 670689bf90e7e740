"""Reading the files people give tether, within bounds, with errors that name them.

Every file tether reads from a user (a results document, a trace, a review
file, a case file, a baseline history) goes through :func:`read_text`:

- a missing file, a directory, or something that is not a regular file
  (``/dev/zero``, ``/dev/null``, a pipe) is a :class:`UsageError` naming it;
- a file larger than its bound (:data:`MAX_FILE_BYTES` unless the caller says
  otherwise) is refused before it is read;
- text that is not UTF-8 is a :class:`CaseFileError` with the file, line and
  column of the first bad byte.

JSON goes through :func:`loads_json`: nesting is bounded (:data:`MAX_JSON_DEPTH`),
numbers too long to convert, ``NaN`` and ``Infinity`` are refused, each with the
file (and line, for JSON Lines). :func:`capped` keeps a list of problems short.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from .errors import CaseFileError, FileLocation, UsageError

MAX_FILE_BYTES = 256 * 1024 * 1024      # a results document, a trace, a review file
MAX_JSON_DEPTH = 64                      # objects and arrays inside each other
MAX_PROBLEMS = 20                        # problems listed for one file; the rest are counted
MAX_STDIN = 64 * 1024 * 1024             # what `-` (standard input) may hold


def read_text(path: str | Path, what: str = "file", *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file, or an error naming it (see the module docstring)."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise UsageError(f"{what} not found: {path}") from None
    except NotADirectoryError:
        raise UsageError(f"{what} not found: {path} (a part of the path is a file)") from None
    except PermissionError:
        raise UsageError(f"{what} {path}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{what} {path} is a directory; give a file")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{what} {path} is not a regular file (a device or a pipe); give a file")
    if info.st_size > max_bytes:
        raise UsageError(f"{what} {path} is too large ({info.st_size:,} bytes; at most {max_bytes:,})")
    from ._held_files import held

    if held(path):      # never read raw: closing our descriptor would drop the locks of the store open on it
        raise UsageError(f"{what} {path} is a tether store (this process has it open), not a {what}; "
                         "give the file the command reads, or name the store with --store")
    try:
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except PermissionError:
        raise UsageError(f"{what} {path}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise UsageError(f"{what} {path} is too large (more than {max_bytes:,} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CaseFileError([(FileLocation(str(path), line, column),
                              f"not UTF-8 text ({exc.reason}, byte 0x{data[exc.start]:02x}); "
                              f"a {what} is UTF-8 text")]) from None


def read_stdin(what: str = "input") -> str:
    """Standard input as UTF-8 text, at most :data:`MAX_STDIN` bytes (read in chunks:
    ``yes | tether runs import -`` stops at the bound, it never holds more)."""
    import sys

    limit = MAX_STDIN
    stream = getattr(sys.stdin, "buffer", None)
    data = bytearray()
    while len(data) <= limit:
        chunk = stream.read(min(1 << 20, limit + 1 - len(data))) if stream is not None else \
            sys.stdin.read(min(1 << 18, limit + 1 - len(data))).encode("utf-8")
        if not chunk:
            break
        data += chunk
    if len(data) > limit:
        raise UsageError(f"{what} on stdin is too large (more than {limit // (1024 * 1024)} MB); "
                         "give a file instead, or split it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CaseFileError([(FileLocation("<stdin>", line, column),
                              f"not UTF-8 text ({exc.reason}, byte 0x{data[exc.start]:02x})")]) from None


def write_failed(path: str | Path, exc: OSError, what: str = "file") -> Exception:
    """The error to raise when writing ``path`` failed: DiskFull for a full disk, else a
    UsageError naming the file."""
    import errno

    from .errors import DiskFull

    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return DiskFull(f"{what} {path}: the disk is full ({exc.strerror or exc}); free some space and rerun")
    return UsageError(f"{what} {path}: cannot be written ({exc.strerror or exc})")


def write_text(path: str | Path, text: str, what: str = "file") -> None:
    """Write UTF-8 text; a failure names the file (a full disk is DiskFull)."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise write_failed(path, exc, what) from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _bounded_int(text: str) -> int:
    value = int(text)
    if not -(1 << 63) <= value < (1 << 64):       # what SQLite, orjson and PostgreSQL's bigint hold
        raise ValueError(f"the integer {text[:24]}{'...' if len(text) > 24 else ''} is outside the 64-bit range")
    return value


def loads_json(text: str, where: str, *, line: int | None = None, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with bounds; a CaseFileError naming ``where`` (and ``line``) when it fails."""
    try:
        doc = json.loads(text, parse_constant=_refuse_constant, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise CaseFileError([(FileLocation(where, line or exc.lineno, exc.colno), f"not JSON: {exc.msg}")]) from None
    except RecursionError:
        raise CaseFileError([(FileLocation(where, line), f"JSON nested too deeply (at most {max_depth} levels)")]) \
            from None
    except ValueError as exc:          # a number too long to convert, NaN / Infinity
        why = "a number too long to read" if "integer string conversion" in str(exc) else str(exc)
        raise CaseFileError([(FileLocation(where, line), f"not valid JSON: {why}")]) from None
    if depth_exceeds(doc, max_depth):
        raise CaseFileError([(FileLocation(where, line), f"JSON nested too deeply (at most {max_depth} levels)")])
    return doc


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests dicts and lists more than ``limit`` deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def capped(problems: list[tuple[FileLocation, str]], limit: int = MAX_PROBLEMS) -> list[tuple[FileLocation, str]]:
    """At most ``limit`` problems, then one line counting the rest."""
    if len(problems) <= limit:
        return problems
    rest = len(problems) - limit
    last = problems[limit - 1][0]
    return problems[:limit] + [(FileLocation(last.path), f"... and {rest:,} more problem(s) like these")]
