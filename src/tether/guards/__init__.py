"""Runtime guards: the seam and the built-in guards."""

from ._base import BaseGuard, Guard, GuardContext, Verdict

__all__ = ["BaseGuard", "Guard", "GuardContext", "Verdict"]
