"""Calibration policies: rule-based agents that behave like models.

``policy:stubborn``, ``policy:quitter`` and ``policy:steady`` make the C4
suite runnable and testable offline: each fails or passes the stability
cases the way a model with that temperament would, through generic rules.
"""

from ._policies import POLICY_NAMES, QuitterPolicy, SteadyPolicy, StubbornPolicy, make_policy

__all__ = ["POLICY_NAMES", "QuitterPolicy", "SteadyPolicy", "StubbornPolicy", "make_policy"]
