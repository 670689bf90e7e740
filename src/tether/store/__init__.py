"""Persistence: runs, events, checkpoints, effects, approvals and evals, in the
embedded SQLite store (the default) or PostgreSQL (a ``postgresql://`` URL),
behind one protocol (:class:`tether.store.protocol.Store`). Each backend's module
is imported when it is used: a PostgreSQL command does not import SQLite's."""

from typing import TYPE_CHECKING

from .._faces import lazy_names
from .connect import open_store

_LAZY = {"export_run": ".export", "import_run": ".export", "load_run": ".export",
         "SQLiteStore": ".sqlite", "default_store_path": ".sqlite"}
__getattr__, __dir__ = lazy_names(__name__, _LAZY)

if TYPE_CHECKING:
    from .export import export_run, import_run, load_run
    from .sqlite import SQLiteStore, default_store_path

__all__ = ["SQLiteStore", "default_store_path", "export_run", "import_run", "load_run", "open_store"]
