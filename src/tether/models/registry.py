"""Models named by spec strings: ``policy:steady``, ``openai:gpt-4.1-mini``.

A spec is ``prefix:rest``. Each prefix has a factory; third parties can add
their own with :func:`register_model_prefix`.
"""

from __future__ import annotations

from typing import Callable

from ..errors import UnknownModelSpec
from ._base import Model

ModelFactory = Callable[[str], Model]
_FACTORIES: dict[str, ModelFactory] = {}


def register_model_prefix(prefix: str, factory: ModelFactory) -> None:
    _FACTORIES[prefix] = factory


def _lazy(module: str, attr: str) -> ModelFactory:
    """A factory that imports its module on first use (provider SDKs are extras)."""

    def factory(rest: str) -> Model:
        import importlib

        return getattr(importlib.import_module(module, __package__), attr)(rest)

    return factory


def _builtin() -> None:
    if "policy" not in _FACTORIES:
        from .policies import make_policy

        _FACTORIES["policy"] = make_policy
    # Provider adapters (see docs/models.md); a prefix registered by the user wins.
    _FACTORIES.setdefault("openai", _lazy(".openai_compat", "from_openai_spec"))
    _FACTORIES.setdefault("openai-compat", _lazy(".openai_compat", "from_compat_spec"))
    _FACTORIES.setdefault("anthropic", _lazy(".anthropic", "from_anthropic_spec"))


def resolve_model(spec: str | Model) -> Model:
    """Turn a spec string into a model; a model object passes through."""
    if not isinstance(spec, str):
        return spec
    _builtin()
    prefix, sep, rest = spec.partition(":")
    if not sep or prefix not in _FACTORIES:
        raise UnknownModelSpec(spec, list(_FACTORIES))
    return _FACTORIES[prefix](rest)


def known_prefixes() -> list[str]:
    _builtin()
    return sorted(_FACTORIES)
