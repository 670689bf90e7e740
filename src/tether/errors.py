"""The tether error family.

Three families are kept apart (see STYLE.md item 5)::

    TetherError
    ├── UsageError                 misuse by the developer: fix your code or file
    │   ├── CaseFileError          a case / results / trace file that does not load
    │   ├── UnknownModelSpec       a model spec string nobody understands
    │   ├── ModelRequestsForbidden a real model was asked while requests are off
    │   └── ScriptExhausted        a scripted double was called once too often
    │       ScriptLeftover         ... or not often enough (checked at teardown)
    ├── RunFailure                 the run could not go on (surfaced in the trace)
    │   └── ModelFailure           the model seam raised or answered garbage
    └── LoopSignal                 internal signals the run loop uses (never leak)

Errors carry structured fields and numbers, not just words.
"""

from __future__ import annotations

from dataclasses import dataclass


class TetherError(Exception):
    """Base class of every error tether raises on purpose."""


class UsageError(TetherError):
    """The developer used tether wrongly: the message says how to fix it."""


@dataclass
class FileLocation:
    path: str
    line: int | None = None
    column: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.field:
            where += f" [{self.field}]"
        return where


class CaseFileError(UsageError):
    """A file that does not load. ``problems`` lists every problem found."""

    def __init__(self, problems: list[tuple[FileLocation, str]]):
        self.problems = problems
        lines = [f"{loc}: {msg}" for loc, msg in problems]
        super().__init__("\n".join(lines) if lines else "invalid file")


class UnknownModelSpec(UsageError):
    def __init__(self, spec: str, known: list[str]):
        self.spec = spec
        self.known = known
        super().__init__(
            f"unknown model spec {spec!r}; known prefixes: {', '.join(sorted(known))}"
        )


class ModelRequestsForbidden(UsageError):
    def __init__(self, model: str):
        self.model = model
        super().__init__(
            f"model {model!r} would make a real request, but real model requests are "
            "forbidden here; use tether.models.allow_model_requests() to opt in"
        )


class ScriptExhausted(UsageError):
    """A scripted model was called after its last decision."""

    def __init__(self, model: str, step: int, scripted: int):
        self.model = model
        self.step = step
        self.scripted = scripted
        super().__init__(
            f"{model}: request at step {step} but only {scripted} decision(s) were "
            f"scripted (call {scripted + 1} of a script of {scripted})"
        )


class ScriptLeftover(UsageError):
    """A scripted model ended with decisions nobody asked for."""

    def __init__(self, model: str, used: int, scripted: int, next_step: int):
        self.model = model
        self.used = used
        self.scripted = scripted
        super().__init__(
            f"{model}: {scripted - used} scripted decision(s) left unused; "
            f"the run stopped after {used} of {scripted} (first unused: step {next_step})"
        )


class RunFailure(TetherError):
    """The run could not continue. Recorded in the trace as status ``error``."""


class ModelFailure(RunFailure):
    def __init__(self, model: str, step: int, detail: str):
        self.model = model
        self.step = step
        self.detail = detail
        super().__init__(f"model {model!r} failed at step {step}: {detail}")


class LoopSignal(TetherError):
    """Signals between the run loop and its guards; never raised to users."""
