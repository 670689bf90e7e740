"""Persistence: runs, events, checkpoints, effects, approvals and evals, in the
embedded SQLite store (the default) or PostgreSQL (a ``postgresql://`` URL),
behind one protocol (:class:`tether.store.protocol.Store`)."""

from .connect import open_store
from .sqlite import SQLiteStore, default_store_path

__all__ = ["SQLiteStore", "default_store_path", "open_store"]
