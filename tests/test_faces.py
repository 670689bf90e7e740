"""Every name the docs and examples import comes from a package face.

A *face* is the ``__init__`` of ``tether`` or of one of its first-level
packages; the faces are listed here, and each one's ``__all__`` is its public
API. The test reads every fenced code block of README.md and docs/**/*.md
(python blocks with ``ast``; other blocks line by line, for code shown as text)
and every file under examples/, collects each ``from tether... import ...``,
and checks that its module is a face (no private ``_`` segment, no submodule
path) and that every name is in the face's ``__all__`` and imports from it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The public faces, the only modules the docs may import from.
FACES = [
    "tether",
    "tether.adapters",
    "tether.diff",
    "tether.evals",
    "tether.guards",
    "tether.models",
    "tether.replay",
    "tether.runtime",
    "tether.store",
    "tether.testing",
    "tether.tools",
]


def _docs_module():
    """tests/test_docs.py's block reader, so both tests see the same blocks."""
    spec = importlib.util.spec_from_file_location("_tether_docs_blocks", ROOT / "tests" / "test_docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module        # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Imported:
    module: str
    names: tuple[str, ...]
    where: str            # file:line


TEXT_IMPORT = re.compile(r"^\s*from\s+(tether(?:\.\w+)*)\s+import\s+\(?([\w ,]+)\)?\s*(?:#.*)?$")


def _from_source(source: str, where: str, first_line: int = 1) -> list[Imported]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "tether":
            found.append(Imported(node.module, tuple(a.name for a in node.names),
                                  f"{where}:{first_line + node.lineno}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "tether":
                    found.append(Imported(alias.name, (), f"{where}:{first_line + node.lineno}"))
    return found


def _from_text(text: str, where: str, first_line: int) -> list[Imported]:
    found = []
    for i, line in enumerate(text.splitlines(), 1):
        m = TEXT_IMPORT.match(line)
        if m:
            names = tuple(n.strip() for n in m.group(2).split(",") if n.strip())
            found.append(Imported(m.group(1), names, f"{where}:{first_line + i}"))
    return found


def collect() -> list[Imported]:
    docs = _docs_module()
    found: list[Imported] = []
    for page in docs.PAGES:
        for block in docs.blocks(page):
            if block.lang in docs.PYTHON:
                found += _from_source(block.body, page, block.line)
            else:
                found += _from_text(block.body, page, block.line)
    for path in sorted((ROOT / "examples").rglob("*.py")):
        found += _from_source(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix(), 0)
    return found


IMPORTS = collect()


def test_the_docs_import_enough_to_mean_something():
    # a reader that finds nothing would pass every check below
    assert len(IMPORTS) >= 60, len(IMPORTS)
    modules = {i.module for i in IMPORTS}
    assert {"tether", "tether.guards", "tether.tools", "tether.adapters"} <= modules, modules
    assert any(i.where.startswith("examples/") for i in IMPORTS)
    assert any(i.where.startswith("README.md:") for i in IMPORTS)


def test_every_import_comes_from_a_face():
    wrong = [f"{i.where}: {i.module}" for i in IMPORTS
             if i.module not in FACES or any(part.startswith("_") for part in i.module.split("."))]
    assert not wrong, "import these from a package face instead:\n" + "\n".join(wrong)


def test_every_imported_name_is_public_on_its_face():
    missing = []
    for i in IMPORTS:
        if i.module not in FACES:
            continue                       # reported by the test above
        face = importlib.import_module(i.module)
        for name in i.names:
            if name == "*" or name not in face.__all__:
                missing.append(f"{i.where}: {name} is not in {i.module}.__all__")
            else:
                getattr(face, name)        # and it imports
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("face", FACES)
def test_a_face_lists_only_names_it_has(face):
    module = importlib.import_module(face)
    assert all(not part.startswith("_") for part in face.split("."))
    absent = [name for name in module.__all__ if not hasattr(module, name)]
    assert not absent, f"{face}.__all__ names what it does not have: {absent}"


def test_the_reader_sees_text_blocks_and_examples():
    text = "```text\nfrom tether.adapters.replay import cassette\n```"
    assert _from_text(text, "x.md", 0) == [Imported("tether.adapters.replay", ("cassette",), "x.md:2")]
    source = "import os\nfrom tether.tools.doubles import (Stub,\n    Fake)\n"
    assert _from_source(source, "ex.py", 0) == [Imported("tether.tools.doubles", ("Stub", "Fake"), "ex.py:2")]
