"""Runtime guards: the seam and the built-in guards.

The seam (:class:`Guard`, :class:`BaseGuard`, :class:`GuardContext`,
:class:`Intervention`) is imported eagerly; the built-in guards and the
reference stacks load on first use.
"""

from typing import TYPE_CHECKING

from .._faces import lazy_names
from ._base import BaseGuard, Guard, GuardContext, Intervention

_LAZY = {
    "Budget": ".budget",
    "BudgetGuard": ".budget",
    "Acceptance": ".goal",
    "GoalGuard": ".goal",
    "GoalSpec": ".goal",
    "LoopConfig": ".loop",
    "LoopGuard": ".loop",
    "ResultGuard": ".result",
    "guard_stack": ".stacks",
}
__getattr__, __dir__ = lazy_names(__name__, _LAZY)

if TYPE_CHECKING:
    from .budget import Budget, BudgetGuard
    from .goal import Acceptance, GoalGuard, GoalSpec
    from .loop import LoopConfig, LoopGuard
    from .result import ResultGuard
    from .stacks import guard_stack

__all__ = sorted(["BaseGuard", "Guard", "GuardContext", "Intervention", *_LAZY])
