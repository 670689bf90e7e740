"""Load case files: YAML in, :class:`Case` out, errors with file, line and field.

PyYAML's composer keeps the line of every node; a pydantic error location
(``criteria.0.pass.min``) is walked down the node tree to the nearest line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import ValidationError

from ..errors import CaseFileError, FileLocation, UsageError
from .case import Case

def builtin_suites() -> list[str]:
    """Suites registered through the ``tether.suites`` entry points (c4 is one)."""
    from ..plugins import suites

    return sorted(suites())


def _node_at(root: yaml.Node | None, loc: Iterable[Any]) -> yaml.Node | None:
    node = root
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    nxt = value
                    break
            if nxt is None:
                return node
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return node
            node = node.value[part]
        else:
            # Union tags (tool_intercept, auto, ...) and such: stay on this node.
            continue
    return node


def _key_node(root: yaml.Node | None, loc: tuple[Any, ...]) -> yaml.Node | None:
    """For an unknown key, point at the key itself."""
    parent = _node_at(root, loc[:-1])
    if isinstance(parent, yaml.MappingNode):
        for key, _ in parent.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(loc[-1]):
                return key
    return None


def load_case_text(text: str, path: str = "<case>") -> Case:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        col = mark.column + 1 if mark else None
        raise CaseFileError([(FileLocation(path, line, col), f"broken YAML: {exc.problem or exc}")]) from None
    if not isinstance(data, dict):
        raise CaseFileError([(FileLocation(path, 1), "a case file must be a YAML mapping (key: value)")])
    try:
        case = Case.model_validate(data)
    except ValidationError as exc:
        raise CaseFileError(_problems(exc, root, path)) from None
    problems = semantic_problems(case, root, path)
    if problems:
        raise CaseFileError(problems)
    return case


def _problems(exc: ValidationError, root: yaml.Node | None, path: str) -> list[tuple[FileLocation, str]]:
    problems = []
    seen = set()
    for err in exc.errors():
        loc = tuple(p for p in err["loc"])
        # Drop union-tag parts (e.g. 'auto', 'call_count', 'tool_mock') from the
        # field path shown to people, but keep them for walking the tree.
        shown = ".".join(str(p) for p in loc if not _is_tag(p))
        node = _key_node(root, _data_loc(loc)) if err["type"] == "extra_forbidden" else None
        node = node or _node_at(root, _data_loc(loc))
        line = node.start_mark.line + 1 if node is not None else None
        col = node.start_mark.column + 1 if node is not None else None
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key (not part of the case schema)"
        elif "input" in err and err["type"] not in ("missing",):
            msg = f"{msg} (got {err['input']!r:.60})"
        key = (line, shown, msg)
        if key in seen:
            continue
        seen.add(key)
        problems.append((FileLocation(path, line, col, shown or None), msg))
    return problems


_TAGS = {"auto", "judge", "tool_intercept", "tool_mock", "call_count", "identical_calls", "strategies",
         "questions_asked", "mentions", "no_invented", "status_in", "tool_called", "function-after", "function-before"}


def _is_tag(part: Any) -> bool:
    return isinstance(part, str) and (part in _TAGS or "[" in part)


def _data_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(p for p in loc if not _is_tag(p))


def semantic_problems(case: Case, root: yaml.Node | None, path: str) -> list[tuple[FileLocation, str]]:
    """Checks the schema cannot express: tools exist, configs name visible tools."""
    from .world import missing_tools

    problems = []
    try:
        missing, offered = missing_tools(case)
    except UsageError as exc:
        field = "toolset" if case.toolset else "world"
        node = _node_at(root, (field,))
        return [(FileLocation(path, _line(node), field=field), str(exc))]
    for i, name in enumerate(case.tools):
        if name in missing:
            node = _node_at(root, ("tools", i))
            problems.append((FileLocation(path, _line(node), field=f"tools.{i}"),
                             f"unknown tool {name!r}; known tools: {', '.join(sorted(set(offered))) or '(none)'}"))
    visible = set(case.tools) or {m.name for m in case.mock_tools}
    if case.toolset and not case.tools:
        visible |= set(offered)
    for name in sorted(case.configured_tools - visible):
        node = _node_at(root, ("tool_config",))
        problems.append((FileLocation(path, _line(node), field="tool_config"),
                         f"tool {name!r} is intercepted or mocked but not listed under tools:"))
    return problems


def _line(node: yaml.Node | None) -> int | None:
    return node.start_mark.line + 1 if node is not None else None


def read_utf8(path: str | Path, what: str = "file") -> str:
    """A file's text, or a clean error: not found (UsageError) or not UTF-8 (CaseFileError)."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{what} not found: {path}") from None
    except UnicodeDecodeError as exc:
        raise CaseFileError([(FileLocation(str(path)), f"not UTF-8: {exc}")]) from None


def load_case(path: str | Path) -> Case:
    return load_case_text(read_utf8(path, "case file"), str(path))


def case_files(source: str | Path) -> list[Path]:
    """YAML files of a suite: a registered suite name, a directory, or one file."""
    from ..plugins import suites

    if isinstance(source, str) and source in suites():
        root = suites()[source].cases
        return sorted(Path(str(p)) for p in root.iterdir() if p.name.endswith((".yaml", ".yml")))
    path = Path(source)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
    if path.is_file():
        return [path]
    raise UsageError(f"no suite named {source!r} and no such file or directory "
                     f"(registered suites: {', '.join(builtin_suites()) or '(none)'})")


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
