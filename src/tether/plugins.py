"""Plug-in points: where packages (and tether's own C4 wing) register what they bring.

Four entry-point groups, read lazily on first use; a name registered in code
(``register_*``) wins over an entry point of the same name:

==================  =========================================  =============================
group               an entry point names                       example (pyproject.toml)
==================  =========================================  =============================
``tether.models``   ``factory(rest) -> Model`` for a spec       ``policy = "tether.c4:policy_model"``
                    prefix (``prefix:rest``)
``tether.agents``   ``factory() -> Agent`` (an agent under      ``mine = "mypkg.agents:build"``
                    test, see :class:`tether.runtime.Agent`)
``tether.suites``   a :class:`Suite`                            ``c4 = "tether.c4:SUITE"``
``tether.worlds``   a :class:`World` (tools cases can name)     ``c4 = "tether.c4:WORLD"``
==================  =========================================  =============================

Outside entry points, ``module:attr`` and ``path/to/file.py:attr`` references
load objects from the user's own code (``--agent``, ``--model``, a case's
``toolset:``), see :func:`load_object`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable, Literal

from .errors import UsageError

GROUPS = ("tether.models", "tether.agents", "tether.suites", "tether.worlds")


@dataclass(frozen=True)
class World:
    """A catalog of tools cases can name under ``tools:``: ``names()`` lists
    them, ``build(names, now, seed)`` makes a fresh ToolSet of those tools."""

    name: str
    names: Callable[[], list[str]]
    build: Callable[[list[str], datetime, int], Any]


@dataclass(frozen=True)
class Suite:
    """A named suite: a folder of case YAML files, the world its cases take
    tools from, and which way each dimension's rate is better."""

    name: str
    cases: Any                                   # a Path or an importlib Traversable (a folder)
    world: str | None = None
    better: dict[str, Literal["higher", "lower"]] = field(default_factory=dict)
    description: str = ""
    dimension_names: dict[str, str] = field(default_factory=dict)   # "LD" -> "loop detection rate"


_REGISTERED: dict[str, dict[str, Any]] = {g: {} for g in GROUPS}
_LOADED: dict[str, dict[str, Any]] = {}


def register(group: str, name: str, obj: Any) -> None:
    """Register ``obj`` under ``name`` in ``group`` from code (wins over entry points)."""
    if group not in GROUPS:
        raise UsageError(f"unknown plug-in group {group!r}; groups: {', '.join(GROUPS)}")
    _REGISTERED[group][name] = obj


def registered(group: str) -> dict[str, Any]:
    """Every object of ``group``: entry points (loaded once), then code registrations."""
    if group not in _LOADED:
        found: dict[str, Any] = {}
        for ep in entry_points(group=group):
            found[ep.name] = ep
        _LOADED[group] = found
    out = dict(_LOADED[group])
    out.update(_REGISTERED[group])
    return out


def get(group: str, name: str) -> Any | None:
    obj = registered(group).get(name)
    if obj is None:
        return None
    if hasattr(obj, "load") and hasattr(obj, "group"):    # an EntryPoint not yet loaded
        try:
            obj = obj.load()
        except Exception as exc:
            raise UsageError(f"plug-in {name!r} of {group} could not be loaded ({obj.value}): "
                             f"{type(exc).__name__}: {exc}") from None
        _LOADED[group][name] = obj
    return obj


def suites() -> dict[str, Suite]:
    return {name: get("tether.suites", name) for name in registered("tether.suites")}


def worlds() -> dict[str, World]:
    return {name: get("tether.worlds", name) for name in registered("tether.worlds")}


def load_object(ref: str, *, what: str = "object") -> Any:
    """``package.module:attr`` or ``path/to/file.py:attr`` -> the object.

    A file path is imported as a module of its own (its folder goes first on
    ``sys.path`` so its siblings import); a dotted module is imported from the
    path, with the current directory on it, as ``python -m`` would."""
    target, sep, attr = ref.rpartition(":")
    if not sep or not target or not attr:
        raise UsageError(f"{what} {ref!r}: expected module:attribute or path/to/file.py:attribute")
    try:
        if target.endswith(".py") or "/" in target or "\\" in target:
            path = Path(target).resolve()
            if not path.is_file():
                raise UsageError(f"{what} {ref!r}: no file {target}")
            name = f"_tether_user_{path.stem}_{abs(hash(str(path))) & 0xFFFFFF:x}"
            module = sys.modules.get(name)
            if module is None:
                spec = importlib.util.spec_from_file_location(name, path)
                if spec is None or spec.loader is None:
                    raise UsageError(f"{what} {ref!r}: cannot import {target}")
                module = importlib.util.module_from_spec(spec)
                sys.path.insert(0, str(path.parent))
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    sys.modules.pop(name, None)
                    raise
        else:
            if "" not in sys.path and str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(target)
    except UsageError:
        raise
    except ModuleNotFoundError as exc:
        raise UsageError(f"{what} {ref!r}: module {exc.name!r} not found (is it installed, or on the path?)") from None
    except Exception as exc:
        raise UsageError(f"{what} {ref!r}: importing {target} failed: {type(exc).__name__}: {exc}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UsageError(f"{what} {ref!r}: {target} has no attribute {attr!r}") from None
