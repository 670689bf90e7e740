"""The LLM gateway's store writes, on a thread of their own.

A request never waits on SQLite on the event loop: a commit, and now and then
SQLite's WAL checkpoint (an fsync), would stall every conversation at once.
The conversations' sessions write through :class:`DeferredStore`, which
queues each write for the writer thread and returns at once; the request then
awaits :meth:`StoreWriter.commit` before its response goes back, so what the
client has received is in the store (a committed transaction survives the
gateway being killed; ``tests/gateway/test_llm_record.py`` kills it). The
thread takes every write queued while it was busy in one go, so at a hundred
concurrent conversations one wake-up serves many requests.

The MCP gateway's guard windows (:mod:`.windows`) queue their writes the same
way but do not wait for them: a proxied message never waits on the store, and
a store locked by another process only delays when the events land (for the
LLM gateway it delays the response). What is queued is written in order;
appends of one run queued one after the other are written as one chunk (one
transaction); both gateways make their writer with ``retry_locked_s``
(``RETRY_LOCKED_S``), which tries a write again while the store is locked by someone else (a lock error
writes nothing, so the retry cannot write twice) and, on PostgreSQL, after
the connection was lost (a server restart): it connects again and goes on
with what is queued (a write whose commit was lost with the connection may be
there already: the store refuses it twice, it never lands twice).
:meth:`StoreWriter.close` writes everything queued before the thread stops.

A write that fails (a full disk, a store locked by another process past its
busy timeout and the retries) is reported on stderr, once per kind of failure;
the gateway keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

_STOP = object()
# How long a gateway's writes are tried again while another process holds the store locked
# or its PostgreSQL server cannot be reached (both gateways: one outage is waited out once).
RETRY_LOCKED_S = 600.0


def lost(error: BaseException) -> bool:
    """The store's connection is gone (PostgreSQL restarted, the network dropped it)."""
    text = str(error).lower()
    return any(w in text for w in ("connection is closed", "connection is lost", "terminating connection",
                                   "server closed the connection", "connection refused", "could not connect",
                                   "cannot be reached", "consuming input failed", "connection to server"))


def locked(error: BaseException) -> bool:
    """The store is locked by another writer (SQLite's busy timeout ran out; PostgreSQL's
    lock or deadlock timeout): nothing was written, the write can be tried again."""
    text = str(error).lower()
    return any(w in text for w in ("database is locked", "database table is locked", "lock timeout",
                                   "deadlock detected", "could not obtain lock"))


def _resolve(futures: list[asyncio.Future]) -> None:
    for fut in futures:
        if not fut.done():
            fut.set_result(None)


def _answer(fut: asyncio.Future, value: Any, exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)


class StoreWriter:
    """One thread that runs the store's writes in the order they were queued."""

    def __init__(self, store: Any, *, retry_locked_s: float = 0.0):
        self.store = store
        self.retry_locked_s = retry_locked_s
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._reported: set[str] = set()
        self._closed = False
        self._replaced: weakref.WeakSet = weakref.WeakSet()   # stores whose connection was lost (their queued
                                                              # writes go to .store); gone once nothing queued holds them
        self._trouble_since: float | None = None    # when the store became locked / unreachable (monotonic)
        self.failures = 0
        self.retried = 0          # writes tried again because the store was locked or its connection lost
        self._thread = threading.Thread(target=self._run, name="tether-gateway-store", daemon=True)
        self._thread.start()

    # -- from the event loop ---------------------------------------------------------------
    def put(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Queue a write (returns at once)."""
        self._queue.put((fn, args, kwargs, None))

    async def commit(self) -> None:
        """Wait until every write queued so far has been run (and so committed)."""
        fut = asyncio.get_running_loop().create_future()
        self._queue.put((None, (), {}, fut))
        await fut

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` on the writer thread after the writes queued before it; its result."""
        fut = asyncio.get_running_loop().create_future()
        self._queue.put((fn, args, kwargs, fut))
        return await fut

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def backlog(self) -> int:
        """About how many writes are queued and not yet run."""
        return self._queue.qsize()

    def close(self, timeout: float | None = 30.0) -> None:
        """Run what is queued, then stop the thread (``timeout=None``: however long that takes)."""
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
        self._thread.join(timeout)

    # -- the thread ------------------------------------------------------------------------
    def _run(self) -> None:
        get = self._queue.get
        while True:
            items = [get()]
            while True:              # everything queued meanwhile: one wake-up of the loop for all of it
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            done: list[asyncio.Future] = []
            for item in self._merged(items):
                if item is _STOP:
                    self._wake(done)
                    return
                fn, args, kwargs, fut = item
                if fn is None:
                    done.append(fut)
                    continue
                value, exc = None, None
                try:
                    value = self._attempt(fn, args, kwargs)
                except Exception as error:       # noqa: BLE001 - reported, the gateway keeps serving
                    exc = error
                    if fut is None:
                        self._report(fn, error)
                if fut is not None:
                    try:
                        fut.get_loop().call_soon_threadsafe(_answer, fut, value, exc)
                    except RuntimeError:         # the loop is closed: nobody waits any more
                        pass
            self._wake(done)

    def _merged(self, items: list[Any]) -> list[Any]:
        """``items`` with each run of appends to one run (queued one after the other,
        nobody waiting on them) joined into one append: one chunk, one transaction."""
        append = getattr(self.store, "append_events", None)
        out: list[Any] = []
        for item in items:
            if item is not _STOP and item[0] == append and item[3] is None and out and out[-1] is not _STOP \
                    and out[-1][0] == append and out[-1][3] is None and out[-1][1][0] == item[1][0]:
                prev = out[-1]
                out[-1] = (append, (prev[1][0], [*prev[1][1], *item[1][1]]), {}, None)
            else:
                out.append(item)
        return out

    def _attempt(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """``fn(*args, **kwargs)``, tried again while the store is locked or its connection is being made
        again, until it has been so for ``retry_locked_s`` (then every queued write is tried once, so a
        store that stays locked delays the gateway's exit by that long at most)."""
        pause = 0.05
        while True:
            if getattr(fn, "__self__", None) in self._replaced:
                fn = getattr(self.store, fn.__name__)          # queued before the store was connected again
            try:
                value = fn(*args, **kwargs)
            except Exception as error:
                if not (locked(error) or lost(error) and self._reconnect()):
                    raise
                if self._trouble_since is None:
                    self._trouble_since = time.monotonic()
                if time.monotonic() >= self._trouble_since + self.retry_locked_s:
                    raise                   # one outage is waited out once, not once per queued write
                self.retried += 1
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
            else:
                self._trouble_since = None
                return value

    def _reconnect(self) -> bool:
        """A store that can connect again (PostgreSQL: it has a URL) is replaced by a new connection
        to it; True when it may be tried again (the server may still be down: tried on the next round)."""
        url = getattr(self.store, "url", None)
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
            return False
        try:
            fresh = type(self.store)(url)
        except Exception:                   # noqa: BLE001 - still down: the next round tries again
            return True
        old, self.store = self.store, fresh
        self._replaced.add(old)
        with contextlib.suppress(Exception):     # it is gone already
            old.close()
        return True

    def _wake(self, done: list[asyncio.Future]) -> None:
        by_loop: dict[Any, list[asyncio.Future]] = {}
        for fut in done:
            by_loop.setdefault(fut.get_loop(), []).append(fut)
        for loop, futs in by_loop.items():
            try:
                loop.call_soon_threadsafe(_resolve, futs)
            except RuntimeError:             # the loop is closed: nobody waits any more
                pass

    def _report(self, fn: Any, error: Exception) -> None:
        self.failures += 1
        what = f"{getattr(fn, '__name__', 'write')}: {type(error).__name__}"
        if what in self._reported:
            return
        self._reported.add(what)
        print(f"tether gateway: writing the record failed ({what}: {error}); the gateway keeps serving, "
              "this conversation's record is incomplete", file=sys.stderr, flush=True)


class DeferredStore:
    """The store as a gateway conversation's RunSession sees it: every write is
    queued on the writer thread (in order), none waits. Only what a session
    with ``checkpoints=False`` calls is here."""

    def __init__(self, writer: StoreWriter):
        self._writer = writer

    @property
    def _store(self) -> Any:            # the writer's (a new one after a lost connection)
        return self._writer.store

    @property
    def where(self) -> str:
        return self._store.where

    def create_run(self, run_id: str, **kwargs: Any) -> None:
        self._writer.put(self._store.create_run, run_id, **kwargs)

    def acquire_lease(self, run_id: str, holder: str, ttl: float = 120.0, stale: Any = None) -> None:
        self._writer.put(self._store.acquire_lease, run_id, holder, ttl, stale=stale)

    def renew_lease(self, run_id: str, holder: str, ttl: float = 120.0) -> bool:
        self._writer.put(self._store.renew_lease, run_id, holder, ttl)
        return True

    def release_lease(self, run_id: str, holder: str) -> None:
        self._writer.put(self._store.release_lease, run_id, holder)

    def append_events(self, run_id: str, events: list[tuple[int, dict]]) -> None:
        self._writer.put(self._store.append_events, run_id, events)

    def finish_run(self, run_id: str, status: str, reply: str, reason: str, **kwargs: Any) -> None:
        self._writer.put(self._store.finish_run, run_id, status, reply, reason, **kwargs)


__all__ = ["RETRY_LOCKED_S", "DeferredStore", "StoreWriter"]
