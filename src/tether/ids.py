"""Ids, and the paths tether builds from them, stay inside their folders.

One pattern for every id tether reads from data and may turn into a file
name (case, run, eval, cassette, baseline, approval)::

    ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$     and no ".." anywhere

A letter or digit first, then letters, digits, ``.``, ``_``, ``:`` and ``-``,
at most 128 characters: no ``/``, no ``\\``, no space, nothing outside ASCII.
:func:`check_id` refuses anything else with a message naming the kind of id
and showing the value; :func:`inside` joins parts under a root folder and
refuses a result that resolves (symbolic links followed) outside it.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import UsageError

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
ID_RULE = ("a letter or digit, then letters, digits, '.', '_', ':' or '-' (at most 128 characters, "
           "no '..')")
_ID = re.compile(ID_PATTERN)


class UnsafeId(UsageError):
    """An id that could name a file outside its folder (or is not an id at all)."""


class OutsideRoot(UsageError):
    """A path built from data that resolves outside the folder it must stay in."""


def is_id(value: object) -> bool:
    """Whether ``value`` is a string matching :data:`ID_PATTERN` without ``..``."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None and ".." not in value


def shown(value: object, limit: int = 60) -> str:
    """``value`` for an error message: its repr, cut (a hostile id can be huge)."""
    text = repr(value[: limit + 1]) if isinstance(value, str) else type(value).__name__
    return text if not isinstance(value, str) or len(value) <= limit else text[:-1] + "...'"


def check_id(value: object, what: str = "id") -> str:
    """``value`` when it is a safe id; an :class:`UnsafeId` naming ``what`` otherwise."""
    if is_id(value):
        return value  # type: ignore[return-value]
    raise UnsafeId(f"{what} {shown(value)} is not a valid id: use {ID_RULE}")


def inside(root: str | Path, *parts: str, what: str = "path") -> Path:
    """``root / parts...``, checked to resolve under ``root`` (links followed)."""
    base = Path(root).resolve()
    target = base.joinpath(*parts).resolve()
    if target != base and base not in target.parents:
        raise OutsideRoot(f"{what} {shown('/'.join(parts))} would be outside {root}; refused")
    return target
