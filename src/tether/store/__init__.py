"""Persistence: runs, events, checkpoints, effects, approvals and evals, in the
embedded SQLite store (the default) or PostgreSQL (a ``postgresql://`` URL),
behind one protocol (:class:`tether.store.protocol.Store`)."""

from typing import TYPE_CHECKING

from .._faces import lazy_names
from .connect import open_store
from .sqlite import SQLiteStore, default_store_path

_LAZY = {"export_run": ".export", "import_run": ".export", "load_run": ".export"}
__getattr__, __dir__ = lazy_names(__name__, _LAZY)

if TYPE_CHECKING:
    from .export import export_run, import_run, load_run

__all__ = ["SQLiteStore", "default_store_path", "export_run", "import_run", "load_run", "open_store"]
