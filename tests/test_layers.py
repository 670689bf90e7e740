"""The seams are layered: a part of tether imports only from its own part and from
parts in lower layers, never upward, and parts of one layer do not import each other.

A *part* is a first-level package (``tether/guards/``) or module (``tether/events.py``)
of src/tether. Every import counts: at the top of a module, inside a function (a
lazy import), under ``TYPE_CHECKING``. An import that must go upward says so on its
line with ``# upward import: <why>``; there is none today.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tether

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "tether"

# Bottom first. See /work/shared/design/ARCHITECTURE.md: the event spine and the seams
# (model, tool, guard) at the bottom, the loop on them, then store and replay, the
# agents of other shapes (adapters, gateways), evals, diffs and reports, the C4 wing,
# and the CLI; the root face (tether/__init__.py) re-exports from all of them.
LAYERS: list[set[str]] = [
    {"errors", "_vocab", "_held_files"},
    {"_assess", "_faces", "_terminal", "_version", "i18n", "ids", "inputs", "messages", "mismatch", "plugins",
     "status"},
    {"events"},
    {"models"},
    {"tools"},
    {"guards"},
    {"runtime"},
    {"store"},
    {"replay"},
    {"adapters", "testing"},
    {"evals", "gateway"},
    {"diff"},
    {"report"},
    {"c4", "schemas"},
    {"cli"},
    {"tether"},
]
LAYER_OF = {part: i for i, layer in enumerate(LAYERS) for part in layer}
MARK = "# upward import:"


def part_of(dotted: str) -> str:
    """``tether.guards.loop`` -> ``guards``; ``tether`` (the root face) -> ``tether``."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "tether"


def _is_part(name: str) -> bool:
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file()


def imports_of(path: Path, text: str | None = None, tree: ast.Module | None = None) -> list[tuple[str, int, str]]:
    """(imported module, line, source line) for every tether import in ``path`` (or its given text and tree)."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    names = list(rel.parts)
    package = names[:-1] if names[-1] == "__init__" else names[:-1]
    if names[-1] == "__init__":
        names = names[:-1]
    text = path.read_text(encoding="utf-8") if text is None else text
    lines = text.splitlines()
    found = []
    for node in ast.walk(tree or ast.parse(text)):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "tether":
                continue
            if node.module is None or module == "tether":
                # `from . import x` / `from .. import i18n`: each name is a module, or an attribute of the package
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    targets.append(sub if module != "tether" or _is_part(alias.name) else module)
            else:
                targets.append(module)
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.split(".")[0] == "tether"]
        for target in targets:
            found.append((target, node.lineno, lines[node.lineno - 1]))
    return found


def edges(sources: dict[Path, tuple[str, ast.Module]]) -> list[tuple[str, str, str, str]]:
    """(from part, to part, where, source line) for every import between two parts."""
    out = []
    assert {p.resolve() for p in sources} == {p.resolve() for p in PACKAGE.rglob("*.py")}
    for path, (text, tree) in sources.items():
        path = PACKAGE / path.relative_to(Path(tether.__file__).parent)
        here = part_of(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"))
        for target, line, source in imports_of(path, text, tree):
            there = part_of(target)
            if there != here:
                out.append((here, there, f"{path.relative_to(ROOT)}:{line}", source.strip()))
    return out


@pytest.fixture(scope="module")
def import_edges(tether_sources):
    return edges(tether_sources)


def test_every_part_has_a_layer():
    parts = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | \
            {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert parts - set(LAYER_OF) == set(), "place these in LAYERS: " + ", ".join(sorted(parts - set(LAYER_OF)))
    assert set(LAYER_OF) - parts - {"tether"} == set(), "LAYERS names parts that do not exist"


def test_the_scan_sees_imports_everywhere(import_edges):
    # a top-level import, a lazy one inside a function, and `from .. import module`
    seen = {(a, b) for a, b, _, _ in import_edges}
    assert ("runtime", "guards") in seen and ("cli", "evals") in seen and ("guards", "i18n") in seen
    lazy = [w for a, b, w, src in import_edges if a == "store" and b == "runtime"]
    assert lazy, "the store's lazy import of the approver names is not seen"
    assert len(import_edges) > 300, len(import_edges)


def test_no_import_runs_upward(import_edges):
    upward = [f"{where}: {a} (layer {LAYER_OF[a]}) imports {b} (layer {LAYER_OF[b]}): {src}"
              for a, b, where, src in import_edges
              if a in LAYER_OF and b in LAYER_OF and LAYER_OF[b] > LAYER_OF[a] and MARK not in src]
    assert not upward, "imports that run upward (move the shared piece down, or invert the dependency):\n" \
        + "\n".join(upward)


def test_parts_of_one_layer_are_independent(import_edges):
    across = [f"{where}: {a} imports {b}, both in layer {LAYER_OF[a]}: {src}"
              for a, b, where, src in import_edges
              if a in LAYER_OF and b in LAYER_OF and LAYER_OF[b] == LAYER_OF[a] and MARK not in src]
    assert not across, "\n".join(across)
