"""Reading a command's options without importing pydantic when the value is plain.

Typer 0.2x coerces every option's value through a pydantic ``TypeAdapter``: the
first option a command reads imports pydantic and builds one adapter per option,
about 0.1-0.15 s of a process that lists 50 runs in 10 ms. For the plain cases
(a ``str``; an ``int`` written as digits within its bounds; one of an enum's
choices) the value Typer would produce is known without pydantic, and
:func:`plain_coercion` gives those options a coercion that produces exactly it.
Anything else (another type, a parser, an out-of-range number, a bad choice) is
handed to Typer's own coercion, built on first use: its value and its error
message are Typer's. With a Typer that has no such coercion (older versions
read options through click) this does nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

try:
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import choice_coercion_annotation, coerce_cli_choice
    from typer._typing import is_number_type
except ImportError:        # pragma: no cover - a Typer without pydantic coercion: nothing to do
    RuntimeParam = None    # type: ignore[assignment,misc]

_DIGITS = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")    # what int() and pydantic read alike


def plain_coercion(command: Any) -> None:
    """Give each plain option of ``command`` (and of its subcommands) the pydantic-free coercion."""
    if RuntimeParam is None:
        return
    for param in getattr(command, "params", ()):
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue
        try:
            kind = _plain_kind(descriptor, param)
            if kind is not None:
                param._runtime_param = _Plain(parameter_info=descriptor.parameter_info,   # type: ignore[call-arg]
                                              annotation=descriptor.annotation, kind=kind, descriptor=descriptor)
        except (TypeError, AttributeError, ValueError):      # another Typer's internals: its own coercion stays
            continue
    from . import _subcommands

    for sub in _subcommands(command):
        plain_coercion(sub)


def _plain_kind(descriptor: Any, param: Any) -> str | None:
    """Which plain coercion fits, in the order Typer's own picks its adapter; None: leave it to Typer."""
    info, annotation = descriptor.parameter_info, descriptor.annotation
    if param.multiple or param.nargs != 1 or descriptor.file_annotation is not None:
        return None
    if getattr(info, "parser", None) is not None or getattr(info, "click_type", None) is not None:
        return None
    if choice_coercion_annotation(annotation, info) is not None:
        return "choice"
    if is_number_type(annotation):
        return "int" if annotation is int and not getattr(info, "clamp", False) else None
    if annotation is str:
        return "str"
    return None


@dataclass(frozen=True)
class _Plain(RuntimeParam):  # type: ignore[misc,valid-type]
    kind: str = "str"
    descriptor: Any = None
    typer_own: list = field(default_factory=list, compare=False)      # Typer's coercion, built when needed

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        if self.kind == "str" and isinstance(value, str):
            return value
        if self.kind == "int":
            number = value if type(value) is int else (
                int(value) if isinstance(value, str) and _DIGITS.fullmatch(value) else None)
            info = self.parameter_info
            if number is not None and (info.min is None or number >= info.min) \
                    and (info.max is None or number <= info.max):
                return number
        if self.kind == "choice":
            choices, case_sensitive = choice_coercion_annotation(self.annotation, self.parameter_info)
            try:
                return coerce_cli_choice(value, choices=choices, case_sensitive=case_sensitive, ctx=ctx)
            except ValueError:
                pass                                    # Typer's own message
        if not self.typer_own:
            self.typer_own.append(build_runtime_param(self.descriptor))
        return self.typer_own[0]._coerce_value(value, param=param, ctx=ctx)
