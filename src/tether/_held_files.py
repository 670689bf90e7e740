"""The files this process holds open as SQLite stores (the bottom layer: ``inputs`` asks too)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

# The store files this process holds open through SQLite, by (device, inode), with how many stores
# hold each. POSIX drops all of a process's locks on a file when *any* descriptor of that file is
# closed, so reading a store's header with a descriptor of our own while a connection in this
# process is open would silently drop that connection's locks: another process could then write
# under it and damage the store. A file held here was checked when it was first opened and is
# never read raw again until every store on it is closed.
_HELD: dict[tuple[int, int], int] = {}
_HELD_LOCK = threading.Lock()


def hold(path: Path | str) -> tuple[int, int] | None:
    """Note that a store in this process now holds ``path`` open; the key to :func:`release`."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    key = (info.st_dev, info.st_ino)
    with _HELD_LOCK:
        _HELD[key] = _HELD.get(key, 0) + 1
    return key


def release(key: tuple[int, int] | None) -> None:
    if key is None:
        return
    with _HELD_LOCK:
        left = _HELD.get(key, 0) - 1
        if left > 0:
            _HELD[key] = left
        else:
            _HELD.pop(key, None)


def _held(info: os.stat_result) -> bool:
    with _HELD_LOCK:
        return (info.st_dev, info.st_ino) in _HELD


def held(path: Path | str) -> bool:
    """A store in this process holds ``path`` open: never read it with a descriptor of your own
    (closing it would drop that store's locks; see :data:`_HELD`)."""
    try:
        return _held(os.stat(path))
    except (OSError, ValueError):
        return False
