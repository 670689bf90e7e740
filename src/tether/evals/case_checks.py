"""Checks a schema cannot make: the traps a case file validates through.

Each returns problems as (location, message) pairs with the file's line and
column, split into errors (the case would run, but not as written) and
warnings (it runs as written, but probably not as meant):

* ``params_match`` keys and example call arguments the tool does not take
  (checked against the tool's JSON Schema: ``mock_tools``, a world or a toolset);
* pass and fail ranges that are inverted (min > max) or overlap (a count in
  both passes: pass is checked first);
* schema property names that read like prose: YAML's flow-mapping comma trap,
  ``{type: integer, description: page number, from 1.}`` makes a property
  ``from 1.`` with no schema;
* criteria no run can decide: a regular expression that does not compile, a
  status no run ends with, an empty term group, an empty tool list.

Every check reads the raw data, so it runs even when the schema check failed
elsewhere in the file, and reports in the same pass.
"""

from __future__ import annotations

import difflib
import functools
import re
from datetime import datetime
from typing import Any, Iterator

import yaml

from ..errors import FileLocation
from .case_yaml import key_node, location, node_at

Problem = tuple[FileLocation, str]

_KEYWORDS = {"type", "description", "enum", "default", "minimum", "maximum", "exclusiveMinimum",
             "exclusiveMaximum", "items", "properties", "required", "format", "pattern", "minLength", "maxLength",
             "minItems", "maxItems", "additionalProperties", "anyOf", "oneOf", "allOf", "const", "title",
             "examples", "nullable", "$ref", "uniqueItems", "multipleOf", "not"}
_PROSE = re.compile(r"\s|[.,;:!?，。；：！？]$")


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if isinstance(value, dict) else []


def _at(root: yaml.Node | None, path: str, loc: tuple[Any, ...], *, key: bool = False) -> FileLocation:
    node = key_node(root, loc) if key else None
    return location(path, node or node_at(root, loc), ".".join(map(str, loc)))


# -- the tools' argument schemas -------------------------------------------------------
def tool_parameters(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each tool's parameters schema, as far as it can be known without running the case
    (a tool whose source cannot be loaded is left out: its arguments are not checked)."""
    out: dict[str, dict[str, Any]] = {}
    for spec in _as_list(data.get("mock_tools")):
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            params = spec.get("parameters")
            out[spec["name"]] = params if isinstance(params, dict) else {"type": "object", "properties": {}}
    tools = [t for t in data.get("tools") or [] if isinstance(t, str) and t not in out] \
        if isinstance(data.get("tools"), list) else []
    try:
        if isinstance(data.get("toolset"), str):
            from .world import user_toolset

            own = user_toolset(data["toolset"])
            for name in own.names():
                out.setdefault(name, own.tools[name].parameters or {})
            tools = [t for t in tools if t not in out]
        if tools:
            from .world import _find_world

            world = _find_world(data.get("world") if isinstance(data.get("world"), str) else None, tools, "case")
            if world is not None:
                known = _world_parameters(world.name)
                out.update({t: known[t] for t in tools if t in known})
    except Exception:            # an unloadable source is reported by the tool check; here: unknown schema
        pass
    return out


@functools.lru_cache(maxsize=8)
def _world_parameters(name: str) -> dict[str, dict[str, Any]]:
    """Every tool's parameters schema in the registered world ``name`` (built once)."""
    from ..plugins import worlds
    from .case import CaseInput

    world = worlds()[name]
    built = world.build(world.names(), datetime.fromisoformat(CaseInput().now), 0)
    return {n: built.tools[n].parameters or {} for n in built.names()}


def _properties(schema: Any) -> dict[str, Any] | None:
    """The named properties of an object schema, or None when any name goes."""
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties")
    if not isinstance(props, dict) or not props or schema.get("additionalProperties") not in (None, False):
        return None             # no names declared (a skeleton from an old trace): any name goes
    return props


def unknown_argument(tool: str, name: str, schema: Any) -> str | None:
    props = _properties(schema)
    if props is None or name in props:
        return None
    close = difflib.get_close_matches(name, list(props), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return (f"tool {tool!r} has no argument {name!r}; {hint}its arguments: {', '.join(props) or '(none)'}")


def _mocked_calls(data: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    raw = data.get("tool_config")
    single = isinstance(raw, dict)
    for i, cfg in enumerate(_as_list(raw)):
        if not isinstance(cfg, dict) or not isinstance(cfg.get("mocked_calls"), list):
            continue
        base: tuple[Any, ...] = ("tool_config",) if single else ("tool_config", i)
        for j, call in enumerate(cfg["mocked_calls"]):
            if isinstance(call, dict):
                yield (*base, "mocked_calls", j), call


def argument_problems(data: dict[str, Any], root: yaml.Node | None, path: str,
                      schemas: dict[str, dict[str, Any]]) -> list[Problem]:
    problems: list[Problem] = []
    for loc, call in _mocked_calls(data):
        match = call.get("params_match")
        tool = call.get("tool")
        if not isinstance(match, dict) or not isinstance(tool, str):
            continue
        for name, want in match.items():
            msg = unknown_argument(tool, str(name), schemas.get(tool)) if tool in schemas else None
            if msg:
                problems.append((_at(root, path, (*loc, "params_match", name), key=True),
                                 f"params_match: {msg} (a call never has it, so this mock never matches)"))
            problems += _operator_problems(want, root, path, (*loc, "params_match", name))
    return problems


def _operator_problems(want: Any, root: yaml.Node | None, path: str, loc: tuple[Any, ...]) -> list[Problem]:
    from ..tools.injection import operator_error

    msg = operator_error(want)
    return [(_at(root, path, loc), msg)] if msg else []


# -- ranges ---------------------------------------------------------------------------
def _bounds(value: Any) -> tuple[int | None, int | None] | None:
    if not isinstance(value, dict):
        return None
    lo, hi = value.get("min"), value.get("max")
    if any(v is not None and (isinstance(v, bool) or not isinstance(v, int)) for v in (lo, hi)):
        return None
    return lo, hi


def _show(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"{lo}..{hi}" if lo != hi else str(lo)
    return f">={lo}" if lo is not None else f"<={hi}" if hi is not None else "any count"


def range_problems(data: dict[str, Any], root: yaml.Node | None, path: str) -> list[Problem]:
    problems: list[Problem] = []
    crits = data.get("criteria")
    for i, crit in enumerate(crits if isinstance(crits, list) else []):
        if not isinstance(crit, dict):
            continue
        ranges = {}
        for key in ("pass", "fail"):
            b = _bounds(crit.get(key))
            if b is None:
                continue
            lo, hi = b
            if lo is not None and hi is not None and lo > hi:
                problems.append((_at(root, path, ("criteria", i, key)),
                                 f"inverted {key} range: min {lo} is above max {hi}, so no count is in it "
                                 f"(did you mean {{min: {hi}, max: {lo}}}?)"))
                continue
            ranges[key] = b
        if "pass" in ranges and "fail" in ranges:
            (plo, phi), (flo, fhi) = ranges["pass"], ranges["fail"]
            lo = max(v for v in (plo, flo, -(10 ** 18)) if v is not None)
            hi = min(v for v in (phi, fhi, 10 ** 18) if v is not None)
            if lo <= hi:
                both = _show(lo if lo > -(10 ** 18) else None, hi if hi < 10 ** 18 else None)
                problems.append((_at(root, path, ("criteria", i, "fail")),
                                 f"the pass range ({_show(plo, phi)}) and the fail range ({_show(flo, fhi)}) "
                                 f"overlap on {both}: a count there passes (pass is checked first); make them "
                                 "disjoint (a gap between them is unclear)"))
    return problems


# -- schema property names that read like prose -----------------------------------------
def _schema_props(schema: Any, loc: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str, Any]]:
    if not isinstance(schema, dict):
        return
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            yield (*loc, "properties", name), str(name), sub
            yield from _schema_props(sub, (*loc, "properties", name))
    if isinstance(schema.get("items"), dict):
        yield from _schema_props(schema["items"], (*loc, "items"))


def prose_problems(data: dict[str, Any], root: yaml.Node | None, path: str) -> tuple[list[Problem], list[Problem]]:
    errors: list[Problem] = []
    warnings: list[Problem] = []
    for i, spec in enumerate(_as_list(data.get("mock_tools"))):
        if not isinstance(spec, dict):
            continue
        base = ("mock_tools", i, "parameters") if isinstance(data.get("mock_tools"), list) else ("mock_tools", "parameters")
        before = len(errors)
        for loc, name, sub in _schema_props(spec.get("parameters"), base):
            where = _at(root, path, loc, key=True)
            trap = ("; a comma inside a {...} flow mapping ends the value: quote the description "
                    "(description: 'page number, from 1.') or write the mapping on several lines")
            if sub is None:
                errors.append((where, f"property {name!r} has no schema (it is null), which is what YAML makes of "
                                      f"the text after a comma{trap if _PROSE.search(name) else ''}"))
            elif not isinstance(sub, dict):
                errors.append((where, f"property {name!r}: a property's schema is a mapping like "
                                      f"{{type: string, description: ...}} (got {type(sub).__name__})"))
            elif _PROSE.search(name):
                warnings.append((where, f"property name {name!r} reads like prose (spaces or a closing "
                                        f"punctuation mark){trap}"))
            else:
                for key, value in sub.items():
                    if not isinstance(key, str) or key in _KEYWORDS or not (value is None or _PROSE.search(key)):
                        continue
                    errors.append((_at(root, path, (*loc, key), key=True),
                                   f"property {name!r} has a schema key {key!r}" + (" with no value" if value is None
                                   else "") + f", which reads like prose, not a JSON Schema keyword{trap}"))
        if len(errors) == before:
            errors += _meta_schema_problems(spec.get("parameters"), root, path, base)
    return errors, warnings


def _meta_schema_problems(schema: Any, root: yaml.Node | None, path: str, base: tuple[Any, ...]) -> list[Problem]:
    """A mock tool's parameters checked as a JSON Schema (the tool is built from them when
    the case runs: ``type: [`` or ``required: [null]`` must fail here, with its line)."""
    if not isinstance(schema, dict):
        return []
    import jsonschema

    validator = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
    problems = []
    for err in sorted(validator.iter_errors(schema), key=lambda e: list(map(str, e.absolute_path)))[:5]:
        loc = (*base, *err.absolute_path)
        problems.append((_at(root, path, loc), f"not a valid JSON Schema: {str(err.message)[:200]}"))
    return problems


# -- criteria no run can decide ------------------------------------------------------------
def criterion_problems(data: dict[str, Any], root: yaml.Node | None, path: str) -> list[Problem]:
    from ..status import TerminalStatus

    problems: list[Problem] = []
    crits = data.get("criteria")
    statuses = [s.value for s in TerminalStatus]
    for i, crit in enumerate(crits if isinstance(crits, list) else []):
        if not isinstance(crit, dict):
            continue
        check = crit.get("check")
        if "tools" in crit and isinstance(crit["tools"], list) and not crit["tools"] and check != "identical_calls":
            problems.append((_at(root, path, ("criteria", i, "tools")),
                             f"a {check} criterion over no tools can never be decided; name the tools it watches"))
        if check == "no_invented" and isinstance(crit.get("patterns"), list):
            for j, pattern in enumerate(crit["patterns"]):
                if not isinstance(pattern, str):
                    continue
                try:
                    re.compile(pattern)
                except re.error as exc:
                    problems.append((_at(root, path, ("criteria", i, "patterns", j)),
                                     f"not a regular expression ({exc}); quote it in single quotes, and "
                                     "escape a literal . ( [ with a backslash"))
        if check == "status_in" and isinstance(crit.get("statuses"), list):
            for j, status in enumerate(crit["statuses"]):
                if isinstance(status, str) and status not in statuses:
                    close = difflib.get_close_matches(status, statuses, n=1)
                    hint = f"did you mean {close[0]!r}? " if close else ""
                    problems.append((_at(root, path, ("criteria", i, "statuses", j)),
                                     f"no run ends with status {status!r}; {hint}statuses: {', '.join(statuses)}"))
        if check == "mentions" and isinstance(crit.get("groups"), list):
            for j, group in enumerate(crit["groups"]):
                if isinstance(group, list) and (not group or any(isinstance(t, str) and not t.strip() for t in group)):
                    problems.append((_at(root, path, ("criteria", i, "groups", j)),
                                     "an empty group (or an empty term) cannot be decided: every reply contains "
                                     "the empty text, and no reply hits a group of no terms"))
    return problems


def semantic_problems(data: dict[str, Any], root: yaml.Node | None, path: str) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) of the checks above, plus the examples' (see :mod:`.case_examples`)."""
    from .case_examples import example_problems

    schemas = tool_parameters(data)
    prose_errors, warnings = prose_problems(data, root, path)
    errors = [*argument_problems(data, root, path, schemas), *range_problems(data, root, path), *prose_errors,
              *criterion_problems(data, root, path)]
    ex_errors, ex_warnings = example_problems(data, root, path, schemas)
    return errors + ex_errors, warnings + ex_warnings
