"""Record a framework agent's run into a cassette, and replay it through the same framework.

Around any run of an agent that carries its framework's tether line
(``TetherGuard()``, ``TetherMiddleware()``, ``guard_runs()``)::

    from tether.adapters.replay import cassette

    with cassette("tests/cassettes/order_status.json"):
        agent.run_sync("Where is my order A100?")

The record mode is the cassette's usual one (``once`` by default, ``none``
when ``CI`` is set; see :mod:`tether.replay.session`):

* recording: the agent talks to its real model (HTTP) and runs its real tools;
  the run (requests, decisions, tool calls and results) is saved, redacted;
* replaying: the framework runs its own loop as usual, but each model call is
  answered from the recording (in the framework's own response type: no HTTP,
  no API key) and each tool call is checked against the recorded one and
  answered with the recorded result. A departure raises the typed
  :class:`~tether.replay.ReplayMismatch` naming the step (a changed tool
  argument: ``ToolArgumentsMismatch``) out of the framework's run.
"""

from __future__ import annotations

import contextvars
import os
from pathlib import Path
from typing import Any, Iterator
from contextlib import contextmanager

from ..errors import UsageError

__all__ = ["Tape", "cassette", "active_tape"]

_TAPE: contextvars.ContextVar["Tape | None"] = contextvars.ContextVar("tether_framework_tape", default=None)


def active_tape() -> "Tape | None":
    return _TAPE.get()


class Tape:
    """One cassette file, one framework run, recorded or replayed."""

    def __init__(self, path: str | os.PathLike[str], *, mode: Any = None, store: Any = None, match: str = "strict"):
        from ..replay.cassette import RecordMode, default_record_mode
        from ..replay.replayer import open_store

        self.path = Path(path)
        self.mode = RecordMode(mode) if mode else default_record_mode()
        self.match = match
        self.store = open_store(store)
        self.session: Any = None
        self.replayer: Any = None
        if self.mode == RecordMode.NEW_EPISODES:
            raise UsageError("a framework cassette records or replays (modes once, none, all), not new_episodes")

    @property
    def recording(self) -> bool:
        from ..replay.cassette import RecordMode

        return self.mode == RecordMode.ALL or (self.mode == RecordMode.ONCE and not self.path.exists())

    def attach(self, run: Any, session: Any) -> None:
        """A run started under this tape: replayed runs get the cassette's players."""
        if self.session is not None:
            raise UsageError(f"{self.path}: a cassette holds one run; use another cassette for a second run")
        self.session = session
        if not self.recording:
            from ..replay import Cassette
            from ..replay.cassette import CassetteNotFound
            from ..replay.replayer import Replayer

            if not self.path.exists():
                raise CassetteNotFound(self.path, self.mode)
            self.replayer = Replayer(Cassette.load(self.path), match=self.match, kind="cassette")  # type: ignore[arg-type]
            run.replay = self.replayer
            session.tools = self.replayer.toolset(session.tools)

    def save(self) -> None:
        from ..replay import Cassette

        if self.session is None or self.session.finished is None:
            raise UsageError(f"{self.path}: no finished framework run to record (did the agent carry tether's line?)")
        Cassette.from_run(self.session.trajectory).save(self.path)

    def check_outcome(self) -> None:
        if self.replayer is not None and self.session is not None and self.session.finished is not None:
            self.replayer.check_outcome(self.session.finished)


@contextmanager
def cassette(path: str | os.PathLike[str], *, mode: Any = None, store: Any = None,
             match: str = "strict") -> Iterator[Tape]:
    """Record the framework run made inside the block into ``path``, or replay it (see the module docstring)."""
    tape = Tape(path, mode=mode, store=store, match=match)
    token = _TAPE.set(tape)
    try:
        yield tape
    finally:
        _TAPE.reset(token)
    if tape.recording:
        tape.save()
    else:
        tape.check_outcome()
