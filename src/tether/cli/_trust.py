"""A stored run's rebuild recipe is data, never code (issue 19).

``tether resume`` and ``tether approve`` rebuild a run from its record (the
``cli`` metadata ``tether run`` stores). A record may come from elsewhere
(``tether runs import``), so what it names is used only when it is harmless:

* the model: the one given with ``--model``, else the record's when it is a
  built-in spec (:func:`tether.models.registry.untrusted_reason`), else only
  with ``--trust`` or a match in ``$TETHER_TRUSTED_SPECS`` (comma-separated
  globs, e.g. ``./agents/*.py:make,mypkg.models:*``);
* the agent (a run of ``tether run --agent``): the one given with ``--agent``,
  else the record's only under the same trust (an agent is always code);
* the case: the one given with ``--case``, else the record's when it is a case
  id of the built-in suite; a case file (which may name a toolset factory,
  code) only under the same trust.

Anything else is refused with the field it came from and how to proceed.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from ..errors import UsageError
from ..ids import shown

TRUST_ENV = "TETHER_TRUSTED_SPECS"
_HOW = ("pass --{opt} to choose it yourself, or --trust if you trust this record "
        f"(or list the spec in ${TRUST_ENV})")


def allow_listed(spec: str) -> bool:
    globs = [g.strip() for g in os.environ.get(TRUST_ENV, "").split(",") if g.strip()]
    return any(fnmatch.fnmatchcase(spec, g) for g in globs)


def record_model(run_id: str, recorded: object, given: str | None, trust: bool) -> str:
    """The model spec to resume ``run_id`` with."""
    if given:
        return given
    from ..models.registry import untrusted_reason

    reason = untrusted_reason(recorded) if isinstance(recorded, str) else "it is not a model spec"
    if reason is None or (isinstance(recorded, str) and (trust or allow_listed(recorded))):
        return recorded  # type: ignore[return-value]
    raise UsageError(f"run {run_id} [meta.cli.model]: the record names model {shown(recorded, 120)}, and {reason}; a record "
                     "is data, so tether runs no code and sends no key it names: " + _HOW.format(opt="model"))


def record_case(run_id: str, recorded: object, given: str | None, trust: bool) -> str:
    """The case to resume ``run_id`` with."""
    if given:
        return given
    if not isinstance(recorded, str) or not recorded:
        raise UsageError(f"run {run_id} [meta.cli.case]: the record names no case; pass --case")
    path = Path(recorded)
    is_file = path.suffix in (".yaml", ".yml") or "/" in recorded or "\\" in recorded or path.exists()
    if not is_file or trust or allow_listed(recorded):
        return recorded
    raise UsageError(f"run {run_id} [meta.cli.case]: the record names the case file {shown(recorded, 120)}, which "
                     "may name code (a toolset factory); " + _HOW.format(opt="case"))


def record_agent(run_id: str, recorded: object, given: str | None, trust: bool) -> str:
    """The agent to resume ``run_id`` with (a run of ``tether run --agent``)."""
    if given:
        return given
    if isinstance(recorded, str) and recorded and (trust or allow_listed(recorded)):
        return recorded
    raise UsageError(f"run {run_id} [meta.cli.agent]: the record names the agent {shown(recorded, 120)}, which is "
                     "code; " + _HOW.format(opt="agent"))
