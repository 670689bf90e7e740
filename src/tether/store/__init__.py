"""Persistence: the embedded SQLite store (runs, events, checkpoints, effects, approvals)."""

from .sqlite import SQLiteStore, default_store_path

__all__ = ["SQLiteStore", "default_store_path"]
