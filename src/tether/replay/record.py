"""Recording: run the agent as usual, then take the run's record as a cassette.

There is one recorder, the runtime's: every run already records what the
model was sent, what it decided, every tool call and result (including those
case intercepts, mocks or fault layers made, since they sit inside the
ToolSet) and the simulated user's answers. So::

    result = await run_agent(model, tools, message=..., config=config)
    cassette = Cassette.from_run(result, config=config, environment=...)
    cassette.save("cassettes/refund.json")         # redacted at write time

or in one call: ``result, cassette = await record_run(model, tools, message=...)``.
With a store (``config=RunConfig(store=...)``) the run is written there too,
and the cassette's events are the stored run's events.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import subprocess
from datetime import datetime
from typing import Any, Sequence

from ..models import Model
from ..runtime import RunConfig, RunResult, Turn, run_agent
from ..runtime.runner import SimulatedUser
from ..tools import ToolSet
from .canonicalize import Canon
from .cassette import Cassette, Environment


def prompt_hash(system_prompt: str | None) -> str:
    return hashlib.sha256(system_prompt.encode("utf-8")).hexdigest()[:16] if system_prompt else ""


@functools.cache
def code_version(cwd: str | None = None) -> str:
    """``git:<describe>`` of the project being tested, else ``tether <version>``."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], capture_output=True, text=True,
                             timeout=5, cwd=cwd or os.getcwd(), check=False)
        if out.returncode == 0 and out.stdout.strip():
            return "git:" + out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return f"tether {tether_version()}"


def tether_version() -> str:
    from .._version import __version__
    return __version__


def local_timezone() -> str:
    tz = datetime.now().astimezone().tzinfo
    return str(tz) if tz is not None else "UTC"


def stored_events(result: RunResult, store: Any) -> Any:
    """The run as the store holds it (the events a cassette must carry), else the result itself."""
    if store is None:
        return result
    from ..store.export import load_run

    return load_run(store, result.run_id)


async def record_run(model: Model, tools: ToolSet, *, message: str | None = None, history: Sequence[Turn] = (),
                     user: SimulatedUser | None = None, config: RunConfig = RunConfig(), case_id: str | None = None,
                     environment: Environment | None = None, canon: Canon = Canon(), run_id: str | None = None,
                     trial: int = 0) -> tuple[RunResult, Cassette]:
    """Run the agent live (``run_agent``) and return the result and its (unredacted) cassette.

    The run's kind is ``cassette`` unless the config says otherwise; with a
    store in the config the run is stored and the cassette is made from the
    stored events.
    """
    if config.kind == "run":
        config = dataclasses.replace(config, kind="cassette")
    result = await run_agent(model, tools, message=message, history=history, user=user, config=config,
                             case_id=case_id, run_id=run_id, trial=trial)
    cassette = Cassette.from_run(stored_events(result, config.store), config=config, environment=environment,
                                 canon=canon, simulated_user=user is not None)
    return result, cassette


__all__ = ["code_version", "local_timezone", "prompt_hash", "record_run", "stored_events", "tether_version"]
