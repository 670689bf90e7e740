"""Opening a store file safely: what may be opened, read-only fallback, damage checks.

- A directory, a device (``/dev/null``) or a pipe given as the store is a
  :class:`StoreError` naming it; so is a non-empty file that is not SQLite
  (its first 16 bytes are not ``SQLite format 3\\0``), and an empty file given
  to a command that only reads (it is left as it is: only a command that
  writes makes a store in it). An empty file changed in the last few seconds
  may be a store another process is making: a read waits a moment for its
  header before saying so.
- A store that cannot be written (the file, or the folder its WAL files go
  in, is read-only) is opened read-only when the caller only reads
  (``mode=ro``; ``immutable=1`` when even the WAL index cannot be made), and
  is an error naming it when the caller writes.
- Opening is cheap whatever the store's size: the header (the magic bytes, and a
  file shorter than the pages its header counts is damaged) and the schema (the
  tables are there). ``tether store check`` scans every page (``PRAGMA
  integrity_check``); so does any command that meets an I/O or corruption error
  (:func:`checked`), to say whether the store is damaged. A damaged store is an
  error naming the file and how to recover (move it aside; ``sqlite3 FILE .recover``).
- Any SQLite error while a store is in use names the store (:func:`checked`).
"""

from __future__ import annotations

import collections
import contextlib
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from .._held_files import _held, held, hold, release  # noqa: F401  (the store's open path and its readers)
from ..errors import UsageError

HEADER = b"SQLite format 3\x00"
# the stores this process opened last, for error messages that lack a name (bounded: a long-lived
# process, a service that opens a store per request, keeps no list of every store it ever opened)
LAST_OPENED: collections.deque[Path] = collections.deque(maxlen=8)


class StoreError(UsageError):
    """A store that cannot be used as given (the message names the file and what to do)."""


def no_store_yet(where: object, what: str = "runs") -> str:
    """What a read says where no store was made yet (the listings, ``stats`` and ``view``, which exit 0)."""
    return f"no store at {where} yet: no {what} (tether run or tether eval records runs there; this command makes none)"


class NoStore(StoreError):
    """No store at the path a command that only reads was given: it makes none (the
    listings say so and exit 0; a command that needs a run exits 2)."""

    def __init__(self, path: Path):
        self.path = path
        super().__init__(f"no store at {path} yet: this command only reads and makes none (tether run or "
                         "tether eval records runs there), or give another --store / $TETHER_STORE")


class DamagedRun(StoreError):
    """One run whose stored events cannot be read (a damaged row): that run is refused,
    naming it; every other run, and the commands over all of them, go on."""


def recovery(path: Path) -> str:
    return (f"move it aside (mv {path} {path}.damaged) and tether starts a new store there, or recover what it "
            f"holds with: sqlite3 {path} .recover | sqlite3 recovered.db")


def _writable(path: Path) -> bool:
    folder = path.parent if str(path.parent) else Path(".")
    if path.exists() and not os.access(path, os.W_OK):
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def _check_path(path: Path, read_only: bool = False) -> None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"store {path}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise StoreError(f"store {path} is a directory; --store / $TETHER_STORE names the store's file "
                         f"(e.g. {path / 'tether.db'})")
    if not stat.S_ISREG(info.st_mode):
        raise StoreError(f"store {path} is not a regular file (a device or a pipe); give a file for the store")
    if info.st_size == 0 and read_only and not _in_wal(path):
        info = made_meanwhile(path, info)
    if info.st_size == 0:
        if read_only and not _in_wal(path):      # (a store just made lives in its WAL)
            raise StoreError(f"store {path} is an empty file, not a tether store; this command only reads and "
                             "leaves it as it is (a command that records runs, such as tether run or tether eval, "
                             "makes a store in it), or give another --store")
        return
    if _held(info):
        return          # open in this process already (checked then): a descriptor of ours would drop its locks
    try:
        with path.open("rb") as fh:
            head = fh.read(len(HEADER))
    except OSError as exc:
        raise StoreError(f"store {path}: cannot be read ({exc.strerror or exc})") from None
    if head != HEADER:
        raise StoreError(f"store {path} is not a tether store (not an SQLite database file); give another "
                         "--store, or remove the file and tether starts a new store there")
    header_check(path)


# An empty file this recent may be a store another process is making right now (it opens the file,
# then writes its header when it switches the store to WAL): a read waits a moment for it.
MAKING_S = 5.0
MAKING_WAIT_S = 1.0


def _in_wal(path: Path) -> bool:
    try:
        return Path(f"{path}-wal").stat().st_size > 0
    except OSError:
        return False


def made_meanwhile(path: Path, info: os.stat_result) -> os.stat_result:
    """The file's stat once a store being made in it has its header or WAL (after at most
    :data:`MAKING_WAIT_S`), or as it is: an empty file older than :data:`MAKING_S` is not waited for."""
    deadline = time.monotonic() + MAKING_WAIT_S
    while time.time() - info.st_mtime < MAKING_S and time.monotonic() < deadline:
        time.sleep(0.01)
        try:
            info = path.stat()
        except OSError:
            break
        if info.st_size or _in_wal(path):
            break
    return info


def header_check(path: Path, *, attempts: int = 3) -> None:
    """The 100-byte header against the file: a page size SQLite can have, and (with no WAL
    beside it that could hold the rest) at least as many bytes as the pages it counts.

    Another process may be checkpointing while this reads: it writes page 1 (the new page
    count) before the pages past the file's end, then removes its WAL. So the header is read
    first, the WAL looked for next and the size taken last (a WAL gone means its checkpoint
    is over), and a file that still looks cut short is read again before it is called damaged."""
    for attempt in range(attempts):
        try:
            with path.open("rb") as fh:
                header = fh.read(100)
        except OSError as exc:
            raise StoreError(f"store {path}: cannot be read ({exc.strerror or exc})") from None
        if len(header) < 100:
            raise StoreError(f"store {path} is damaged (its header is cut short); {recovery(path)}")
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        if page_size < 512 or page_size & (page_size - 1):
            raise StoreError(f"store {path} is damaged (its header names page size {page_size}); {recovery(path)}")
        pages = int.from_bytes(header[28:32], "big")
        valid = header[24:28] == header[92:96]          # the in-header page count is current
        in_wal = _in_wal(path)                          # (gone meanwhile: a checkpoint ended)
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise StoreError(f"store {path}: cannot be read ({exc.strerror or exc})") from None
        if not (valid and pages and size < pages * page_size and not in_wal):
            return
        if attempt + 1 < attempts:
            time.sleep(0.05)
    raise StoreError(f"store {path} is damaged (cut short: {size} bytes, its header counts {pages} pages of "
                     f"{page_size}); {recovery(path)}")


TABLES = ("runs", "evals", "events", "checkpoints", "effects", "approvals", "leases")


def schema_check(db: sqlite3.Connection, path: Path) -> None:
    """The store's tables are there (one read of the schema page, whatever the store's size)."""
    have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = [t for t in TABLES if t not in have]
    if missing:
        raise StoreError(f"store {path} is damaged (table(s) {', '.join(missing)} missing); {recovery(path)}")


def connect(path: Path, *, read_only: bool) -> tuple[sqlite3.Connection, bool]:
    """(connection, opened read-only) for the store at ``path`` (see the module docstring)."""
    if str(path) == ":memory:":
        return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None), False
    LAST_OPENED.append(path)
    if read_only and not path.exists() and not Path(f"{path}-wal").exists():
        raise NoStore(path)             # a read never makes a store (nor its folder)
    _check_path(path, read_only)
    if _writable(path) or not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"store {path}: its folder cannot be made ({exc.strerror or exc})") from None
        if not _writable(path):
            raise StoreError(f"store {path} cannot be created: its folder is not writable")
        try:
            return sqlite3.connect(str(path), check_same_thread=False, isolation_level=None), False
        except sqlite3.Error as exc:
            raise StoreError(f"store {path} cannot be opened ({exc})") from None
    if not read_only:
        raise StoreError(f"store {path} is read-only (the file or its folder cannot be written); this command "
                         "writes to the store: give a writable --store")
    uri = "file:" + quote(str(path.resolve()))
    for params in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            con = sqlite3.connect(uri + params, uri=True, check_same_thread=False, isolation_level=None)
            con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return con, True
        except sqlite3.DatabaseError as exc:
            last = exc
            with contextlib.suppress(Exception):
                con.close()
    raise StoreError(f"store {path} cannot be opened read-only ({last})")


def scan_after_error(path: Path) -> str:
    """After an I/O or corruption error: the full scan, on a connection of its own; what it found."""
    if str(path) == ":memory:" or not path.exists():
        return ""
    try:
        con = sqlite3.connect("file:" + quote(str(path.resolve())) + "?mode=ro", uri=True)
        try:
            rows = [str(r[0]) for r in con.execute("PRAGMA integrity_check(5)").fetchall()]
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        return f"the full check cannot read it either ({exc})"
    return "" if rows == ["ok"] else "damaged: " + "; ".join(" ".join(r.split()) for r in rows)[:200]


SQLITE_FULL, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_CORRUPT, SQLITE_NOTADB = 13, 5, 6, 11, 26


def explain(exc: sqlite3.Error, path: Path | str) -> Exception:
    """The error to raise for an SQLite error on the store at ``path``: a full disk
    (:class:`~tether.errors.DiskFull`), a busy store, a damaged one (the only case
    that advises moving the file aside), or another failure of the disk or the
    environment (the store itself may well be fine: nothing advises deleting it)."""
    from ..errors import DiskFull

    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    text = str(exc)
    if code == SQLITE_FULL or "disk is full" in text:
        return DiskFull(f"store {path}: the disk is full (SQLITE_FULL: {text}); free some space and rerun. "
                        "The store is not damaged: the write that failed was rolled back")
    if code in (SQLITE_BUSY, SQLITE_LOCKED) or "locked" in text:
        return StoreError(f"store {path} is busy (another process holds its write lock and did not let go while "
                          "this waited: a store vacuum or prune of a large store, or a process stuck in a "
                          "transaction): try again once it is done")
    if code in (SQLITE_CORRUPT, SQLITE_NOTADB) or "malformed" in text or "not a database" in text:
        return StoreError(f"store {path} is damaged ({text}); {recovery(Path(path))}")
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    return StoreError(f"store {path} could not be used: {text} ({name}); this says nothing of the store's "
                      "contents: check the disk, its permissions and free space, then rerun")


@contextlib.contextmanager
def checked(path: Path) -> Iterator[None]:
    """SQLite errors inside become StoreErrors (or DiskFull) naming the store; after an I/O
    or corruption error the whole store is checked and the message says what it found."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        from ..errors import DiskFull

        err = explain(exc, path)
        text = str(exc)
        if not isinstance(err, DiskFull) and (not isinstance(exc, sqlite3.OperationalError)
                                              or any(w in text for w in ("disk I/O", "malformed", "corrupt"))):
            found = scan_after_error(Path(path))
            if found:
                err = type(err)(f"{err} ({found})")
        raise err from None
