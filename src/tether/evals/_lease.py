"""One process runs an eval at a time: the eval's lease.

``tether eval`` holds a lease on its eval (key ``eval:<id>`` in the store's
lease table, the same take-over rules as a durable run's: renewed while the
eval runs, taken over once it expires or at once when its holder is a dead
process on this host). A ``tether eval --resume`` of an eval another process is
still running is refused, naming that process, instead of marking that
process's live trials abandoned and running them a second time; two resumes
started at once do not both rerun the same trials.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
from typing import Any, AsyncIterator

from ..errors import RunBusy, UsageError
from ..runtime.session import LEASE_TTL_S, _DRIVING, new_holder, take_lease


def lease_key(eval_id: str) -> str:
    return f"eval:{eval_id}"


@contextlib.asynccontextmanager
async def eval_lease(store: Any, eval_id: str) -> AsyncIterator[None]:
    """Hold the eval's lease while the body runs (renewed every quarter of its time to live)."""
    key, holder = lease_key(eval_id), new_holder()
    try:
        take_lease(store, key, holder)
    except RunBusy as busy:
        when = _dt.datetime.fromtimestamp(busy.since).strftime("%Y-%m-%d %H:%M:%S")
        raise UsageError(f"eval {eval_id} is being run by pid {busy.pid} on {busy.host} since {when}; wait for "
                         f"it to finish, or, if that process died, for its lease to expire ({LEASE_TTL_S:.0f} s "
                         f"after its last sign of life; at once on the same host), then tether eval --resume "
                         f"{eval_id}") from None

    async def renew() -> None:
        while True:
            await asyncio.sleep(LEASE_TTL_S / 4)
            with contextlib.suppress(Exception):     # a store busy for a moment: the next renewal tries again
                if not store.renew_lease(key, holder, LEASE_TTL_S):
                    return

    renewing = asyncio.ensure_future(renew())
    try:
        yield
    finally:
        renewing.cancel()
        with contextlib.suppress(BaseException):
            await renewing
        _DRIVING.discard(holder)
        with contextlib.suppress(Exception):
            store.release_lease(key, holder)
