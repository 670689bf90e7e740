"""Lazy package faces (PEP 562): a package's ``__init__`` lists the public names of its
submodules, and each is imported on first use, so importing the package stays cheap
and an optional extra is needed only when one of its names is used."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_names(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``where`` maps a name to the
    submodule (``".loop"``) that defines it."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
