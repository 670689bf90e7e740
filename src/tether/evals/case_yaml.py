"""Reading a case file safely, and pointing at its lines.

A case file comes from anyone, so its YAML is bounded before it becomes data:
at most :data:`MAX_BYTES`, at most :data:`MAX_NODES` values once aliases are
expanded (a "billion laughs" file is refused before it is expanded), nesting
at most :data:`MAX_DEPTH` deep, no alias that contains itself, no key twice in
one mapping. Other kinds of tether files (a results document, a run trace, a
cassette) are named as such.

PyYAML's composer keeps the line and column of every node; :func:`node_at`
walks a field path (``criteria.0.pass.min``) down the node tree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

import yaml

from ..errors import CaseFileError, FileLocation

MAX_BYTES = 1_000_000
MAX_NODES = 20_000
MAX_DEPTH = 40
# libyaml's parser when PyYAML has it (about 20x faster: a 1 MB case reads in well under a second);
# the pure-Python one otherwise. Both give every node its line and column.
_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _TextDates(_BASE):  # type: ignore[misc, valid-type]
    """No implicit timestamps: ``date: 2026-04-08`` in a case is the text a tool receives
    (tool arguments are JSON), never a Python date the tool's schema then refuses."""


_TextDates.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BASE.yaml_implicit_resolvers.items()}
LOADER: Any = _TextDates
_CONTROL = __import__("re").compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ufffe\uffff]")


@dataclass(frozen=True)
class Bounds:
    """How much YAML a kind of file may hold (a case file by default; a review file holds more)."""

    what: str = "case file"
    max_bytes: int = MAX_BYTES
    max_nodes: int = MAX_NODES
    max_depth: int = MAX_DEPTH


CASE_BOUNDS = Bounds()


def _fail(path: str, msg: str, line: int | None = 1, column: int | None = None, field: str | None = None):
    return CaseFileError([(FileLocation(path, line, column, field), msg)])


def other_kind(text: str) -> str | None:
    """What a non-case tether file is, in one line (None when it may be a case)."""
    head = text.lstrip("\ufeff \t\r\n")
    if not head.startswith("{"):
        return None
    first = head.split("\n", 1)[0]
    for candidate in (head, first):
        try:
            doc = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if not isinstance(doc, dict):
            return None
        fmt = doc.get("format")
        if fmt == "tether.results":
            return "this is a results document (written by tether eval --json), not a case file"
        if fmt == "tether.cassette":
            return "this is a replay cassette, not a case file"
        if isinstance(doc.get("type"), str) and "seq" in doc:
            return ("this is a run trace (JSON Lines of events), not a case file; "
                    "make a case from a run with: tether case from-trace RUN")
        return None
    return None


def parse(text: str, path: str, bounds: Bounds = CASE_BOUNDS) -> tuple[Any, yaml.Node, list[tuple[FileLocation, str]]]:
    """(data, root node, duplicate-key problems) of a case file's text; a CaseFileError
    for text that cannot safely become data."""
    size = len(text.encode("utf-8"))
    if size > bounds.max_bytes:
        raise _fail(path, f"file too large ({size:,} bytes); a {bounds.what} may be at most {bounds.max_bytes:,} bytes")
    kind = other_kind(text) if bounds is CASE_BOUNDS else None
    if kind:
        raise _fail(path, kind)
    bad = _CONTROL.search(text)
    if bad:                                   # what PyYAML's reader refuses, found before any parsing
        line = text.count("\n", 0, bad.start()) + 1
        column = bad.start() - (text.rfind("\n", 0, bad.start()) + 1) + 1
        raise _fail(path, f"a character YAML does not allow (U+{ord(bad.group()):04X}): a {bounds.what} is "
                    "printable text", line, column)
    loader = None
    try:
        _events_first(text, path, bounds)
        loader = LOADER(text)
        root = loader.get_single_node()
        if root is None:
            raise _fail(path, "the file is empty; a case is a YAML mapping (key: value), see tether case new"
                        if bounds is CASE_BOUNDS else f"the file is empty; a {bounds.what} is a YAML mapping")
        fatal, dupes = graph_problems(root, path, bounds)
        if fatal:
            raise CaseFileError(dupes + fatal)
        data = loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        if "expected a single document" in str(exc.context or ""):
            problem = "more than one YAML document (---); a case file holds one case"
        elif "maximum nesting depth" in str(problem):    # libyaml's own limit, met before the event count's
            raise _fail(path, f"nested too deeply (a {bounds.what} nests at most {bounds.max_depth} levels)",
                        mark.line + 1 if mark else None, mark.column + 1 if mark else None) from None
        raise _fail(path, f"broken YAML: {problem}", mark.line + 1 if mark else None,
                    mark.column + 1 if mark else None) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        raise _fail(path, f"a character YAML does not allow (U+{char:04X}): a {bounds.what} is printable text",
                    line, column) from None
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):     # libyaml's own limit, met before the event count's
            raise _fail(path, f"nested too deeply (a {bounds.what} nests at most {bounds.max_depth} levels)") \
                from None
        raise _fail(path, f"broken YAML: {exc}") from None
    except ValueError as exc:              # an integer too long to convert
        why = "a number too long to read" if "integer string conversion" in str(exc) else str(exc)[:200]
        raise _fail(path, f"a value YAML cannot read: {why}") from None
    except RecursionError:
        raise _fail(path, f"nested too deeply (a {bounds.what} nests at most {bounds.max_depth} levels)") from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, root, dupes


def _events_first(text: str, path: str, bounds: Bounds) -> None:
    """Refuse deep nesting and too many values from the event stream, before the
    composer builds nodes (recursive in the depth; a node per value). Aliases
    are counted here too: the message names what the file really holds."""
    depth = values = aliases = 0
    for event in yaml.parse(text, Loader=LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            values += 1
            if depth > bounds.max_depth:
                mark = event.start_mark
                raise _fail(path, f"nested too deeply (a {bounds.what} nests at most {bounds.max_depth} levels)",
                            mark.line + 1 if mark else None, mark.column + 1 if mark else None)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.ScalarEvent):
            values += 1
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
        if values > bounds.max_nodes:
            mark = event.start_mark
            used = f"; it uses {aliases} alias(es) (*name)" if aliases else ""
            raise _fail(path, f"too many values (more than {bounds.max_nodes:,} keys, items and scalars{used}); "
                              f"a {bounds.what} holds at most {bounds.max_nodes:,}", mark.line + 1 if mark else None,
                        mark.column + 1 if mark else None)


def graph_problems(root: yaml.Node, path: str, bounds: Bounds = CASE_BOUNDS) -> tuple[list[tuple[FileLocation, str]], list[tuple[FileLocation, str]]]:
    """(fatal problems: alias bombs, self-containing aliases, deep nesting;
    duplicate keys, which still leave data to check)."""
    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    active: set[int] = set()
    problems: list[tuple[FileLocation, str]] = []
    dupes: list[tuple[FileLocation, str]] = []

    def where(node: yaml.Node) -> FileLocation:
        return FileLocation(path, node.start_mark.line + 1, node.start_mark.column + 1)

    class Stop(Exception):
        pass

    def walk(node: yaml.Node, depth: int) -> None:
        key = id(node)
        if key in active:
            problems.append((where(node), "an alias refers to a value that contains it (a cycle)"))
            raise Stop
        if key in sizes:
            if depth + heights[key] > bounds.max_depth:
                problems.append((where(node), f"nested too deeply (a {bounds.what} nests at most {bounds.max_depth} levels)"))
                raise Stop
            return
        if depth > bounds.max_depth:
            problems.append((where(node), f"nested too deeply (a {bounds.what} nests at most {bounds.max_depth} levels)"))
            raise Stop
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            seen: dict[str, yaml.Node] = {}
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.value in seen and k.value != "<<":
                        first = seen[k.value].start_mark.line + 1
                        dupes.append((where(k), f"key {k.value!r} appears twice in this mapping "
                                                   f"(first on line {first}); the second would silently win"))
                    seen.setdefault(k.value, k)
                children += [k, v]
        active.add(key)
        total, height = 1, 0
        for child in children:
            walk(child, depth + 1)
            total += sizes[id(child)]
            height = max(height, heights[id(child)] + 1)
            if total > bounds.max_nodes:
                problems.append((where(node), f"too many values once aliases are expanded (more "
                                              f"than {bounds.max_nodes:,}); a {bounds.what} may not use aliases "
                                              "(&anchor / *alias) to build large structures"))
                raise Stop
        active.discard(key)
        sizes[key], heights[key] = total, height

    try:
        walk(root, 0)
    except Stop:
        pass
    return problems, dupes


# -- locations ----------------------------------------------------------------------
def node_at(root: yaml.Node | None, loc: Iterable[Any]) -> yaml.Node | None:
    """The node a data path points at, or the nearest enclosing one."""
    node = root
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            if isinstance(part, int):
                continue        # a single object where a list is expected (tool_config: {...})
            nxt = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)), None)
            if nxt is None:
                return node
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return node
            node = node.value[part]
        else:
            return node
    return node


def key_node(root: yaml.Node | None, loc: tuple[Any, ...]) -> yaml.Node | None:
    """The key node of the last part of ``loc`` (for an unknown key), if there is one."""
    if not loc:
        return None
    parent = node_at(root, loc[:-1])
    if isinstance(parent, yaml.MappingNode):
        for key, _ in parent.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(loc[-1]):
                return key
    return None


def location(path: str, node: yaml.Node | None, field: str | None = None) -> FileLocation:
    if node is None:
        return FileLocation(path, None, None, field)
    return FileLocation(path, node.start_mark.line + 1, node.start_mark.column + 1, field)
