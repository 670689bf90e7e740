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

A write that fails (a full disk, a store locked by another process past its
busy timeout) is reported on stderr, once per kind of failure; the gateway
keeps serving.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

_STOP = object()


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

    def __init__(self, store: Any):
        self.store = store
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._reported: set[str] = set()
        self.failures = 0
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

    def close(self, timeout: float = 30.0) -> None:
        """Run what is queued, then stop the thread."""
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
            for item in items:
                if item is _STOP:
                    self._wake(done)
                    return
                fn, args, kwargs, fut = item
                if fn is None:
                    done.append(fut)
                    continue
                value, exc = None, None
                try:
                    value = fn(*args, **kwargs)
                except Exception as error:       # noqa: BLE001 - reported, the gateway keeps serving
                    exc = error
                    if fut is None:
                        self._report(fn, error)
                if fut is not None:
                    fut.get_loop().call_soon_threadsafe(_answer, fut, value, exc)
            self._wake(done)

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
        self._store = writer.store

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


__all__ = ["DeferredStore", "StoreWriter"]
