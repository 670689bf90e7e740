"""A stored run's events as plain records, checked against the shipped trace schema.

``tether runs show`` prints a run and nothing else: it needs every event
checked (a damaged run is refused, naming it, as :func:`tether.store.export.load_run`
refuses it) and read with its defaults, not the pydantic event models, whose
import and build are most of a new process's time. So an event is checked here
against ``tether/schemas/trace.schema.json`` (the caller passes it: the JSON
Schema of those models, which ``tests/test_schemas.py`` keeps current),
strictly: the exact JSON types, every required field, no unknown field where
the model forbids one. An event that passes holds what the model reads (the
same values, its defaults filled in, a pre-format-3 result's outcome read from
its source as the model reads it); :func:`run_records` gives it as a
:class:`Record` with the model's attribute names.

Anything this check does not take, or a schema keyword it does not know, is
not refused here: that event goes to the pydantic model as before (which also
takes the lax forms, e.g. ``"3"`` for an integer), and only the model refuses a
damaged run, with the same message. ``tests/store/test_records.py`` compares
records with the models' reading on real runs, edited ones and damaged ones.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

from .._vocab import outcome_of

_UNDERSTOOD = frozenset({"type", "properties", "required", "additionalProperties", "items", "anyOf", "enum",
                         "const", "$ref", "default", "title", "description"})
_NOT_OURS = object()          # the strict check does not take this value (the pydantic model decides)


class Record(SimpleNamespace):
    """One event or one of its parts (a message, a tool call, usage) read from the store:
    the model's fields as attributes, nothing else."""


def run_records(store: Any, run_id: str, schema: dict) -> list[Record]:
    """The run's events in order, each checked (DamagedRun for a damaged one, as load_run).
    ``schema``: the shipped trace schema (``tether.schemas.shipped("trace.schema.json")``)."""
    out: list[Record] = []
    for raw in store.events(run_id):
        record = _event(schema, raw)
        if record is _NOT_OURS:
            from .export import validated_event

            record = validated_event(store, run_id, raw)       # the pydantic model: it takes or refuses it
        out.append(record)
    return out


def _event(schema: dict, raw: Any) -> Any:
    if not isinstance(raw, dict):
        return _NOT_OURS
    ref = schema.get("discriminator", {}).get("mapping", {}).get(raw.get("type")) if isinstance(raw.get("type"), str) \
        else None
    if ref is None:
        return _NOT_OURS
    if raw["type"] == "tool_result" and raw.get("outcome") is None:
        if "outcome" in raw:             # null: the model infers it too, but keeps the event's field; let it
            return _NOT_OURS
        # a result stored before format 3 has no outcome: read from its source (ToolResultEvent, events.py)
        source, error_type = raw.get("source", "tool"), raw.get("error_type")
        if not isinstance(source, str) or not (error_type is None or isinstance(error_type, str)):
            return _NOT_OURS
        raw = {**raw, "outcome": outcome_of(source, error_type).value}
    return _value(schema, {"$ref": ref}, raw)


def _resolve(root: dict, node: dict) -> dict:
    ref = node.get("$ref")
    if ref is None:
        return node
    if not isinstance(ref, str) or not ref.startswith("#/$defs/") or set(node) - {"$ref", "default", "title",
                                                                                 "description"}:
        return {"not understood": True}
    return root.get("$defs", {}).get(ref[len("#/$defs/"):], {"not understood": True})


def _value(root: dict, node: dict, value: Any, *, exact: bool = False) -> Any:
    """``value`` as the model reads it, or _NOT_OURS. ``exact``: inside a union, where
    an integer stays an integer (the model's smart union keeps its type)."""
    node = _resolve(root, node)
    if set(node) - _UNDERSTOOD:
        return _NOT_OURS
    if "anyOf" in node:
        for branch in node["anyOf"]:
            got = _value(root, branch, value, exact=True)
            if got is not _NOT_OURS:
                return got
        return _NOT_OURS
    if "const" in node and (type(value) is not type(node["const"]) or value != node["const"]):
        return _NOT_OURS
    if "enum" in node and not any(type(value) is type(v) and value == v for v in node["enum"]):
        return _NOT_OURS
    kind = node.get("type")
    if kind is None:
        return value if len(set(node) & {"properties", "items", "required", "additionalProperties"}) == 0 \
            else _NOT_OURS                                       # Any
    if kind == "string":
        return value if type(value) is str else _NOT_OURS
    if kind == "boolean":
        return value if type(value) is bool else _NOT_OURS
    if kind == "null":
        return value if value is None else _NOT_OURS
    if kind == "integer":
        return value if type(value) is int else _NOT_OURS
    if kind == "number":
        if type(value) is float:
            return value
        if type(value) is not int:
            return _NOT_OURS
        if exact:
            return value
        return float(value) if -2 ** 63 <= value < 2 ** 63 else _NOT_OURS     # past that, the model says
    if kind == "array":
        if type(value) is not list:
            return _NOT_OURS
        items = node.get("items")
        if items is None:
            return list(value)
        out = []
        for v in value:
            got = _value(root, items, v)
            if got is _NOT_OURS:
                return _NOT_OURS
            out.append(got)
        return out
    if kind == "object":
        return _object(root, node, value)
    return _NOT_OURS


def _object(root: dict, node: dict, value: Any) -> Any:
    if type(value) is not dict:
        return _NOT_OURS
    extra = node.get("additionalProperties")
    props = node.get("properties")
    if props is None:                         # a mapping: dict[str, X]
        if extra in (None, True):
            return dict(value)
        if not isinstance(extra, dict):
            return _NOT_OURS
        out = {}
        for k, v in value.items():
            got = _value(root, extra, v)
            if got is _NOT_OURS:
                return _NOT_OURS
            out[k] = got
        return out
    if extra not in (None, False):            # a model with extra fields kept: not one of ours
        return _NOT_OURS
    if extra is False and any(k not in props for k in value):
        return _NOT_OURS
    if any(k not in value for k in node.get("required", ())):
        return _NOT_OURS
    fields: dict[str, Any] = {}
    for name, prop in props.items():
        if name in value:
            got = _value(root, prop, value[name])
        else:
            got = _default(root, prop)
        if got is _NOT_OURS:
            return _NOT_OURS
        fields[name] = got
    return Record(**fields)                   # unknown fields of a model that ignores them are dropped, as it does


def _default(root: dict, prop: dict) -> Any:
    """A field left out: its default, or for a field the model fills from a factory
    (the schema gives no default) an empty list or mapping, or the part's own defaults."""
    if "default" in prop:
        default = prop["default"]
        if isinstance(default, (list, dict)):
            return _value(root, {k: v for k, v in prop.items() if k != "default"}, copy.deepcopy(default))
        return default
    node = _resolve(root, prop)
    if set(node) - _UNDERSTOOD:
        return _NOT_OURS
    if node.get("type") == "array":
        return []
    if node.get("type") == "object":
        return {} if "properties" not in node else _object(root, node, {})
    return _NOT_OURS
