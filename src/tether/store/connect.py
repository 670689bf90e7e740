"""Which store a command uses: ``--store`` (a file or a ``postgresql://`` URL),
else ``$TETHER_STORE``, else ``.tether/tether.db``. A file is the embedded
SQLite store; a URL is the PostgreSQL backend (``pip install 'tether[postgres]'``).
Code above the store calls :func:`open_store` and never knows which it got
(:class:`tether.store.protocol.Store`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

URL = re.compile(r"^postgres(ql)?://", re.IGNORECASE)
DEFAULT = ".tether/tether.db"


def is_url(where: Any) -> bool:
    return isinstance(where, str) and bool(URL.match(where))


def store_spec(where: Any = None) -> str | Path:
    """The store named by ``where``, else ``$TETHER_STORE``, else the default file: a URL
    (kept as text: a path would fold its ``//``) or a Path."""
    if where is None or where == "":
        where = os.environ.get("TETHER_STORE") or DEFAULT
    if isinstance(where, os.PathLike):
        return Path(where)
    return where if is_url(where) else Path(where)


def redact(url: str) -> str:
    """A URL as messages and results show it: without its password (reopening it takes
    the password from PGPASSWORD or ~/.pgpass, as libpq does)."""
    return re.sub(r"^(postgres(?:ql)?://[^:/@]*):[^@/]*@", r"\1@", url, flags=re.IGNORECASE)


def open_store(where: Any = None, *, read_only: bool = False) -> Any:
    """An open store for ``where`` (a path, a URL, an open store as is, or None: the default)."""
    if where is not None and not isinstance(where, (str, os.PathLike)):
        return where
    spec = store_spec(where)
    if isinstance(spec, str):
        from .postgres import PostgresStore

        return PostgresStore(spec, read_only=read_only)
    from .sqlite import SQLiteStore

    return SQLiteStore(spec, read_only=read_only)


def store_label(store: Any) -> str:
    """How results and messages name an open store."""
    return getattr(store, "where", None) or str(store.path)
