"""Runtime guards: the seam. Built-in guards arrive with the guards issue."""

from ._base import Guard, Verdict

__all__ = ["Guard", "Verdict"]
