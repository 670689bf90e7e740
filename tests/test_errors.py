"""errors.py's documented tree is the truth: every exception class the package
defines is in it (or named there as internal control flow), each under its
real base class, and none is built at run time."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import tether
from tether import errors

PACKAGE = Path(tether.__file__).parent


def defined_exceptions() -> dict[str, type]:
    """Every public exception class defined in a tether module (not imported into it)."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(tether.__path__, "tether."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__ \
                    and not name.startswith("_"):
                assert name not in found or found[name] is obj, f"two exception classes named {name}"
                found[name] = obj
    return found


def documented_tree() -> dict[str, str | None]:
    """Class name -> its parent in the tree drawn in errors.py's docstring."""
    doc = errors.__doc__ or ""
    block = doc.split("::", 1)[1].split("\n\n", 2)[1]
    tree: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in block.splitlines():
        m = re.match(r"^([\s│├└─]*)(\w+)", line)
        if not m:
            continue
        depth, name = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        tree[name] = stack[-1][1] if stack else None
        stack.append((depth, name))
    return tree


def internal_control_flow() -> set[str]:
    doc = errors.__doc__ or ""
    paragraph = doc[doc.index("Internal control flow"):].split("\n\n", 1)[0]
    return set(re.findall(r"``(\w+)``", paragraph))


def test_the_tree_lists_every_exception_class_the_package_defines():
    defined, tree, internal = defined_exceptions(), documented_tree(), internal_control_flow()
    assert "TetherError" in tree and tree["TetherError"] is None and len(tree) > 20
    missing = sorted(set(defined) - set(tree) - internal)
    stale = sorted((set(tree) | internal) - set(defined))
    assert not missing, f"exception classes not in errors.py's tree: {missing}"
    assert not stale, f"errors.py names classes the package does not define: {stale}"


def test_each_class_sits_under_its_real_base():
    defined = defined_exceptions()
    for name, parent in documented_tree().items():
        if parent is not None:
            bases = [b.__name__ for b in defined[name].__bases__]
            assert parent in bases, f"{name} is drawn under {parent} but derives from {bases}"


def test_internal_control_flow_is_not_a_tether_error():
    """Internal classes never reach a caller, so they are not part of the TetherError family."""
    defined = defined_exceptions()
    for name in internal_control_flow():
        assert not issubclass(defined[name], errors.TetherError), name


def test_no_class_is_built_at_run_time(tether_sources):
    """No three-argument type(...) call anywhere in the package (exception classes are written out)."""
    offenders = []
    for path, (_, tree) in tether_sources.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" \
                    and len(node.args) == 3:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []
