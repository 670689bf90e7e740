"""The C4 wing: the C4 stability suite, its scenario world and the calibration agents.

C4 measures four failure modes of tool-using agents under hard tasks: loop
detection (LD), deadlock recovery (DR), premature abandonment (PA) and
abandonment rationality (AR). This package brings:

* ``cases/``: the C4 cases as YAML (the suite ``c4``): the seed's twelve and tether's follow-ups;
* ``catalog/``: the scenario world, deterministic tools for every tool the
  cases name (the world ``c4``);
* ``policies/``: the offline calibration agents ``policy:stubborn``,
  ``policy:quitter`` and ``policy:steady``.

It registers them through the same public plug-in points a third-party
package would use (entry points in pyproject.toml, see :mod:`tether.plugins`);
nothing in tether's seam packages imports it.
"""

from __future__ import annotations

from datetime import datetime
from importlib import resources

from ..plugins import Suite, World


def policy_model(rest: str):
    """``policy:NAME``: a calibration agent (entry point of ``tether.models``)."""
    from .policies import make_policy

    return make_policy(rest)


def _names() -> list[str]:
    from .catalog import catalog_names

    return catalog_names()


def _build(names: list[str], now: datetime, seed: int):
    from .catalog import scenario_toolset

    return scenario_toolset(names, now=now, seed=seed)


WORLD = World(name="c4", names=_names, build=_build)

SUITE = Suite(
    name="c4",
    cases=resources.files(__name__) / "cases",
    world="c4",
    better={"LD": "higher", "DR": "higher", "PA": "lower", "AR": "higher"},
    description="loop detection, deadlock recovery, premature abandonment, abandonment rationality",
    dimension_names={"LD": "loop detection rate", "DR": "deadlock recovery rate", "PA": "premature abandonment rate",
                     "AR": "abandonment rationality rate"},
)


__all__ = ["SUITE", "WORLD", "policy_model"]
