"""Models named by spec strings: ``openai:gpt-4.1-mini``, ``policy:steady``, ``mypkg.models:make``.

A spec is ``prefix:rest``. Each prefix has a factory ``factory(rest) -> Model``:
the provider adapters are built in; packages add theirs through the
``tether.models`` entry-point group (the C4 wing registers ``policy`` that
way) or :func:`register_model_prefix`. A spec whose prefix is a module path
or a ``.py`` file (``mypkg.models:make``, ``./my_model.py:MyModel``) loads
that object from your code and calls it with no arguments (a class is
instantiated), so your own Model needs no registration.
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
    from .. import plugins

    for name in plugins.registered("tether.models"):
        if name not in _FACTORIES:
            _FACTORIES[name] = _plugin(name)
    # Provider adapters (see docs/models.md); a prefix registered by the user wins.
    _FACTORIES.setdefault("openai", _lazy(".openai_compat", "from_openai_spec"))
    _FACTORIES.setdefault("openai-compat", _lazy(".openai_compat", "from_compat_spec"))
    _FACTORIES.setdefault("anthropic", _lazy(".anthropic", "from_anthropic_spec"))


def _plugin(name: str) -> ModelFactory:
    def factory(rest: str) -> Model:
        from .. import plugins

        return plugins.get("tether.models", name)(rest)

    return factory


def resolve_model(spec: str | Model) -> Model:
    """Turn a spec string into a model; a model object passes through."""
    if not isinstance(spec, str):
        return spec
    _builtin()
    prefix, sep, rest = spec.partition(":")
    if sep and prefix in _FACTORIES:
        return _FACTORIES[prefix](rest)
    if sep and ("." in prefix or "/" in prefix) and rest and "/" not in rest:
        return _user_model(spec)
    if sep and rest.isidentifier() and _importable(prefix):
        return _user_model(spec)                     # module:factory, as --agent takes it
    raise UnknownModelSpec(spec, list(_FACTORIES))


def _importable(name: str) -> bool:
    """A top-level module the user could mean: on the path or in the current folder."""
    import importlib.util
    from pathlib import Path

    if not name.isidentifier():
        return False
    if (Path.cwd() / f"{name}.py").is_file() or (Path.cwd() / name / "__init__.py").is_file():
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def untrusted_reason(spec: str) -> str | None:
    """Why ``spec``, read from a record (a stored or imported run), must not be
    resolved without the user's say-so; None for a built-in spec that runs no
    code of the record's choosing and sends no key to a host it names.

    Code: a ``module:attr`` or ``file.py:attr`` spec (importing runs it), or a
    prefix nobody registered. A key: ``openai-compat:URL`` with a URL that is
    not loopback (the request carries $OPENAI_COMPAT_API_KEY)."""
    if not isinstance(spec, str) or not spec:
        return "it is not a model spec"
    _builtin()
    prefix, sep, rest = spec.partition(":")
    if not sep or prefix not in _FACTORIES:
        if sep and ("." in prefix or "/" in prefix or "\\" in prefix):
            return "it names code to import and call (module:attribute or file.py:attribute)"
        return "no built-in model has that prefix"
    if prefix == "openai-compat":
        from urllib.parse import urlsplit

        try:
            host = (urlsplit(rest.partition("#")[0]).hostname or "").lower()
        except ValueError:
            host = ""
        if host not in ("127.0.0.1", "localhost", "::1"):
            return "it sends $OPENAI_COMPAT_API_KEY to a host the record names"
    return None


def _user_model(spec: str) -> Model:
    """``module:factory`` or ``file.py:factory`` from the user's code."""
    from ..errors import UsageError
    from ..plugins import load_object

    obj = load_object(spec, what="--model")
    try:
        model = obj() if callable(obj) and not _is_model(obj) else obj
    except Exception as exc:
        raise UsageError(f"--model {spec!r}: calling it failed: {type(exc).__name__}: {exc}") from None
    if not _is_model(model):
        raise UsageError(f"--model {spec!r} gave {type(model).__name__}, not a Model (an object with a `name` "
                         "and an async `request(ModelRequest) -> ModelResponse`)")
    if not isinstance(getattr(model, "name", None), str):
        try:
            model.name = spec
        except AttributeError:
            pass
    return model


def _is_model(obj: object) -> bool:
    import inspect

    return not inspect.isclass(obj) and callable(getattr(obj, "request", None))


def known_prefixes() -> list[str]:
    _builtin()
    return sorted(_FACTORIES)


# Request fields tether writes itself: a --model-arg cannot replace them.
_RESERVED_ARGS = frozenset({"model", "messages", "tools", "stream", "system"})
MAX_MODEL_ARGS = 32


def parse_model_args(items: list[str] | None) -> dict:
    """``--model-arg key=value`` items -> {key: value}. A value that is valid JSON is
    taken as JSON (``0`` a number, ``{"type": "function", ...}`` an object, ``null``),
    anything else as a string (``tool_choice=auto``)."""
    import json
    import re

    from ..errors import UsageError

    out: dict = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", key):
            raise UsageError(f"--model-arg {item[:80]!r}: expected key=value, e.g. max_tokens=256 or tool_choice=auto")
        if key in _RESERVED_ARGS:
            raise UsageError(f"--model-arg {key}: tether sets {key!r} itself; it cannot be given as a model argument")
        if len(raw) > 10_000:
            raise UsageError(f"--model-arg {key}: the value is longer than 10,000 characters")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        out[key] = value
    if len(out) > MAX_MODEL_ARGS:
        raise UsageError(f"at most {MAX_MODEL_ARGS} --model-arg options")
    return out


def with_limits(model: Model, *, max_connections: int | None = None, timeout: float | None = None,
                args: dict | None = None) -> Model:
    """``model`` with a per-model connection limit, a per-attempt timeout (seconds on
    the wire) and request parameters ``args`` (``temperature``, ``max_tokens`` and
    anything else, such as ``tool_choice``, sent as extra body fields), for the
    provider adapters (``openai:``, ``openai-compat:``, ``anthropic:``: anything with
    ``ModelOptions`` and a ``ConnectionLimit``). Other models take none of these: a
    UsageError says so when one is asked for."""
    if max_connections is None and timeout is None and not args:
        return model
    options = getattr(model, "options", None)
    from dataclasses import is_dataclass, replace

    from ._http import ConnectionLimit, ModelOptions

    if not (isinstance(options, ModelOptions) and is_dataclass(options) and hasattr(model, "limit")):
        from ..errors import UsageError

        raise UsageError(f"model {getattr(model, 'name', model)!r} takes no --max-connections / --timeout / "
                         "--model-arg (only the provider adapters: openai:, openai-compat:, anthropic:)")
    if max_connections is not None and max_connections < 1:
        from ..errors import UsageError

        raise UsageError(f"--max-connections must be at least 1, got {max_connections}")
    changes: dict = {}
    if timeout is not None:
        changes["timeout"] = float(timeout)
    if max_connections is not None:
        changes["max_connections"] = max_connections
        model.limit = ConnectionLimit(max_connections)  # type: ignore[attr-defined]
    if args:
        changes.update(_option_args(args, options))
    model.options = replace(options, **changes)  # type: ignore[attr-defined]
    return model


def _option_args(args: dict, options) -> dict:
    """--model-arg values as ModelOptions changes: temperature and max_tokens are
    options (checked), the rest goes into extra_body as given."""
    from ..errors import UsageError

    changes: dict = {}
    extra = dict(options.extra_body or {})
    for key, value in args.items():
        if key == "temperature":
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise UsageError(f"--model-arg temperature={value!r}: expected a number")
            changes["temperature"] = None if value is None else float(value)
        elif key == "max_tokens":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise UsageError(f"--model-arg max_tokens={value!r}: expected a whole number of at least 1")
            changes["max_tokens"] = value
        else:
            extra[key] = value
    if extra:
        changes["extra_body"] = extra
    return changes
