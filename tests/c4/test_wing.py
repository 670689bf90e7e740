"""The C4 wing plugs in like a third-party package: nothing in the seams imports it."""

from __future__ import annotations

import ast
from pathlib import Path

from tether import plugins

SRC = Path(__file__).resolve().parents[2] / "src" / "tether"
SEAMS = ("models", "tools", "evals", "runtime", "guards", "store", "replay", "diff", "report", "testing")


def _imports(path: Path, tree: ast.Module | None = None, src: Path = SRC) -> set[str]:
    tree = tree or ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(src.parent).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.add(".".join([*base, *(node.module.split(".") if node.module else [])]))
            else:
                found.add(node.module or "")
    return found


def test_no_seam_module_imports_the_c4_package(tether_sources):
    offenders = []
    src = Path(plugins.__file__).parent                # the package the fixture parsed
    seams = {p: tree for p, (_, tree) in tether_sources.items() if p.relative_to(src).parts[0] in SEAMS}
    assert {p.relative_to(src).parts[0] for p in seams} == set(SEAMS)
    for path, tree in seams.items():
        bad = sorted(m for m in _imports(path, tree, src) if m == "tether.c4" or m.startswith("tether.c4."))
        if bad:
            offenders.append(f"{path.relative_to(src)}: {', '.join(bad)}")
    assert offenders == []


def test_the_checker_sees_a_relative_import(tmp_path):
    # guard the guard: a relative import of the wing from a seam module is caught
    fake = SRC / "evals" / "_probe_import.py"
    fake.write_text("from ..c4 import SUITE\n", encoding="utf-8")
    try:
        assert "tether.c4" in _imports(fake)
    finally:
        fake.unlink()


def test_c4_registers_through_the_public_entry_points():
    assert "c4" in plugins.suites() and plugins.suites()["c4"].world == "c4"
    assert "c4" in plugins.worlds() and "search_flights" in plugins.worlds()["c4"].names()
    assert "policy" in plugins.registered("tether.models")
