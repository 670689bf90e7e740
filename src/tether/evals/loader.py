"""Load case files: YAML in, :class:`Case` out, every problem at once with file,
line, column and field.

One pass reports schema errors (in the case format's words, see
:mod:`.case_errors`), whole-case checks and unknown tools together. The YAML
is bounded first (size, alias expansion, depth: see :mod:`.case_yaml`).
"""

from __future__ import annotations

import copy
import difflib
import functools
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import CaseFileError, FileLocation, UsageError
from .case import Case
from .case_errors import data_loc, friendly, shown
from .case_index import builtin_suites, case_files  # noqa: F401 (their home is case_index; imported from here too)
from .case_yaml import key_node, location, node_at, parse


def load_case_text(text: str, path: str = "<case>") -> Case:
    """A case from YAML text; every problem of the file in one CaseFileError, in file order."""
    return check_case_text(text, path)[0]


def check_case_text(text: str, path: str = "<case>") -> tuple[Case, list[tuple[FileLocation, str]]]:
    """(the case, its warnings: what runs as written but probably not as meant); every
    error of the file in one CaseFileError, in file order (see :mod:`.case_checks`)."""
    from .case_checks import semantic_problems

    data, root, problems = _parsed(text, path)
    data, problems = copy.deepcopy(data), list(problems)      # the caller's own: the cached parse stays as read
    if not isinstance(data, dict):
        raise CaseFileError([(FileLocation(path, 1, 1), "a case file must be a YAML mapping (key: value); "
                                                         "start from tether case new NAME")])
    problems = list(problems)
    raw = raw_problems(data, root, path)
    case: Case | None = None
    try:
        case = Case.model_validate(data)
    except ValidationError as exc:
        problems += _problems(exc, root, path, skip_model_checks=bool(raw))
    problems += raw
    problems += tool_problems(data, root, path)
    errors, warnings = semantic_problems(data, root, path)
    problems += errors
    if problems:
        raise CaseFileError(_ordered(problems))
    assert case is not None
    return case, _ordered(warnings)


@functools.lru_cache(maxsize=256)
def _parsed(text: str, path: str) -> tuple[Any, yaml.Node, list[tuple[FileLocation, str]]]:
    """:func:`.case_yaml.parse`, once per (text, path) in a process: a program that loads a suite per run (an eval
    per test, ``tether run`` in-process) otherwise reads the same YAML again each time, ~5 ms a case. Only the
    reading is kept: the checks, which can depend on the tools' sources and the registered worlds, run each time.
    A file that does not parse raises each time (nothing cached). The node tree is shared, read-only."""
    return parse(text, path)


def _ordered(problems: list[tuple[FileLocation, str]]) -> list[tuple[FileLocation, str]]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for loc, msg in sorted(problems, key=lambda p: (p[0].line or 0, p[0].column or 0)):
        key = (loc.line, loc.column, loc.field, msg)
        if key not in seen:
            seen.add(key)
            out.append((loc, msg))
    return out


def _problems(exc: ValidationError, root: yaml.Node | None, path: str, *,
              skip_model_checks: bool) -> list[tuple[FileLocation, str]]:
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        if not loc and err["type"] == "value_error" and skip_model_checks:
            continue                     # the same check, with a line, is in raw_problems
        keys = data_loc(loc)
        field = shown(loc)
        if err["type"] == "list_type" and len(keys) >= 2 and keys[-2] == "groups":
            keys, field = keys[:-1], ".".join(str(k) for k in keys[:-1])   # one message per groups key
            err = {k: v for k, v in err.items() if k != "input"}
        node = key_node(root, keys) if err["type"] == "extra_forbidden" else None
        problems.append((location(path, node or node_at(root, keys), field or None), friendly(err)))
    return problems


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if isinstance(value, dict) else []


def raw_problems(data: dict[str, Any], root: yaml.Node | None, path: str) -> list[tuple[FileLocation, str]]:
    """Whole-case checks, run on the data even when the schema check fails (so they come in the same pass)."""
    problems = []
    inp = data.get("input")
    if isinstance(inp, dict) and not inp.get("message") and not inp.get("history"):
        problems.append((location(path, node_at(root, ("input",)), "input"),
                         "input needs a message (the user's request) or a history (earlier turns), or both"))
    seen: dict[str, int] = {}
    for i, crit in enumerate(data.get("criteria") or [] if isinstance(data.get("criteria"), list) else []):
        cid = crit.get("id") if isinstance(crit, dict) else None
        if isinstance(cid, str):
            if cid in seen:
                problems.append((location(path, node_at(root, ("criteria", i, "id")), f"criteria.{i}.id"),
                                 f"criterion id {cid!r} is used twice (also criteria.{seen[cid]}); ids must differ"))
            seen.setdefault(cid, i)
    return problems


def tool_problems(data: dict[str, Any], root: yaml.Node | None, path: str) -> list[tuple[FileLocation, str]]:
    """Tool names that no source provides, and configs / criteria naming tools the agent does not see."""
    from .world import tool_availability

    def strs(value: Any) -> list[tuple[int, str]]:
        return [(i, v) for i, v in enumerate(value) if isinstance(v, str)] if isinstance(value, list) else []

    tools = strs(data.get("tools"))
    mocks = [m.get("name") for m in _as_list(data.get("mock_tools")) if isinstance(m, dict)]
    mocks = [m for m in mocks if isinstance(m, str)]
    toolset = data.get("toolset") if isinstance(data.get("toolset"), str) else None
    world = data.get("world") if isinstance(data.get("world"), str) else None
    try:
        missing, offered = tool_availability([t for _, t in tools], mocks, toolset, world, f"case {data.get('id')}")
    except UsageError as exc:
        field = "toolset" if toolset else "world" if world else "tools"
        return [(location(path, node_at(root, (field,)), field), str(exc))]
    problems = []
    known = sorted(set(offered))
    for i, name in tools:
        if name in missing:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            problems.append((location(path, node_at(root, ("tools", i)), f"tools.{i}"),
                             f"unknown tool {name!r}; {hint}known tools: {', '.join(known) or '(none)'} "
                             "(declare your own under mock_tools, or give a toolset)"))
    visible = {t for _, t in tools} or set(mocks)
    if toolset and not tools:
        visible |= set(offered)
    for loc, name in _named_tools(data):
        if name not in visible:
            what = "criterion counts" if loc[0] == "criteria" else "tool_config intercepts or mocks"
            problems.append((location(path, node_at(root, loc), ".".join(map(str, loc))),
                             f"the {what} tool {name!r}, which is not listed under tools: "
                             f"(the agent sees: {', '.join(sorted(visible)) or 'no tools'})"))
    return problems


def _named_tools(data: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """(path, name) of every tool a tool config or a criterion names."""
    out: list[tuple[tuple[Any, ...], str]] = []
    raw_cfg = data.get("tool_config")
    single = isinstance(raw_cfg, dict)
    for i, cfg in enumerate(_as_list(raw_cfg)):
        if not isinstance(cfg, dict):
            continue
        base: tuple[Any, ...] = ("tool_config",) if single else ("tool_config", i)
        if isinstance(cfg.get("intercept_tool"), str):
            out.append(((*base, "intercept_tool"), cfg["intercept_tool"]))
        for j, name in enumerate(cfg.get("intercept_tools") or [] if isinstance(cfg.get("intercept_tools"), list) else []):
            if isinstance(name, str):
                out.append(((*base, "intercept_tools", j), name))
        calls = cfg.get("mocked_calls")
        for j, call in enumerate(calls if isinstance(calls, list) else []):
            if isinstance(call, dict) and isinstance(call.get("tool"), str):
                out.append(((*base, "mocked_calls", j, "tool"), call["tool"]))
    crits = data.get("criteria")
    for i, crit in enumerate(crits if isinstance(crits, list) else []):
        names = crit.get("tools") if isinstance(crit, dict) else None
        for j, name in enumerate(names if isinstance(names, list) else []):
            if isinstance(name, str):
                out.append((("criteria", i, "tools", j), name))
    return out


def read_utf8(path: str | Path, what: str = "file") -> str:
    """A file's text, or a clean error: not found (UsageError) or not UTF-8 (CaseFileError)."""
    from ..inputs import read_text
    from .case_yaml import MAX_BYTES

    return read_text(path, what, max_bytes=4 * MAX_BYTES)   # parse() says "file too large" past MAX_BYTES


def load_case(path: str | Path) -> Case:
    return load_case_text(read_utf8(path, "case file"), str(path))


def check_case(path: str | Path) -> tuple[Case, list[tuple[FileLocation, str]]]:
    """(the case, its warnings) from a file; errors raise CaseFileError."""
    return check_case_text(read_utf8(path, "case file"), str(path))


def suite_name(source: str | Path) -> str:
    """The suite a source's cases belong to when they do not say: its registered name or its folder's name."""
    from ..plugins import suites

    if isinstance(source, str) and source in suites():
        return source
    folder = (Path(source) if Path(source).is_dir() else Path(source).parent).resolve()
    for name, suite in suites().items():
        if Path(str(suite.cases)).resolve() == folder:
            return name
    return folder.name or "cases"


def load_suite(*sources: str | Path) -> list[Case]:
    """Load every case of the given suites/dirs/files; all problems reported at once."""
    cases: list[Case] = []
    problems: list[tuple[FileLocation, str]] = []
    for source in sources:
        default = suite_name(source)
        for f in case_files(source):
            try:
                case = load_case(f)
            except CaseFileError as exc:
                problems.extend(exc.problems)
                continue
            if not case.suite:
                case = case.model_copy(update={"suite": default})
            cases.append(case)
    if problems:
        raise CaseFileError(problems)
    ids = [c.id for c in cases]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise UsageError(f"duplicate case ids across the loaded files: {', '.join(dupes)}")
    return cases


def find_case_file(ref: str, suite: str | Path = "c4") -> tuple[Case, Path]:
    """The case with id ``ref`` in ``suite`` (ids match case-insensitively) and its file.

    A miss names the closest ids ("did you mean C4-LD-01?")."""
    from .case_index import summary

    files = case_files(suite)
    # A quick read of every file finds the one with this id, and only that one is loaded and checked (loading
    # all of a suite's cases cost ~0.3 s a command). Anything else takes the checked path over every file.
    quick = [summary(p) for p in files]
    ids = [s.id for s in quick if s is not None]
    if len(ids) == len(files) and len(set(ids)) == len(ids) and ref in ids:
        path = files[ids.index(ref)]
        case = load_case(path)
        if case.id == ref:
            return case, path
    found: list[tuple[Case, Path]] = []
    for path in files:
        found.append((load_case(path), path))
    for case, path in found:
        if case.id == ref:
            return case, path
    folded = [(c, p) for c, p in found if c.id.casefold() == ref.casefold()]
    if len(folded) == 1:
        return folded[0]
    ids = [c.id for c, _ in found]
    close = difflib.get_close_matches(ref.casefold(), [i.casefold() for i in ids], n=1, cutoff=0.6)
    by_fold = {i.casefold(): i for i in ids}
    hint = f"; did you mean {by_fold[close[0]]}?" if close else ""
    where = f"the {suite} suite" if isinstance(suite, str) and not Path(suite).exists() else str(suite)
    raise UsageError(f"no case {ref!r} in {where}{hint} (list them: tether case list {suite})")


def find_case(ref: str, suite: str | Path = "c4") -> Case:
    """A case by id in ``suite`` (see :func:`find_case_file`)."""
    return find_case_file(ref, suite)[0]
