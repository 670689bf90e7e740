"""Runtime guards: the seam and the built-in guards."""

from ._base import BaseGuard, Guard, GuardContext, Intervention

__all__ = ["BaseGuard", "Guard", "GuardContext", "Intervention"]
