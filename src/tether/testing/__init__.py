"""Helpers for testing agents and scorers with tether."""

from .builder import TrajectoryBuilder

__all__ = ["TrajectoryBuilder"]
