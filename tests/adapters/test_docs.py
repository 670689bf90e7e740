"""Each adapter's docs page shows the smallest working example: run it."""

from __future__ import annotations

import os
import re
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "adapters"
PAGES = {"pydantic-ai.md": "pydantic_ai", "langchain.md": "langchain_openai", "openai-agents.md": "agents",
         "mcp.md": "mcp"}


def _example(page: Path) -> str:
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, f"{page.name}: one python example expected, found {len(blocks)}"
    return blocks[0]


def test_each_framework_page_leads_with_the_production_line():
    for page in ("pydantic-ai.md", "langchain.md", "openai-agents.md"):
        text = (DOCS / page).read_text(encoding="utf-8")
        headings = re.findall(r"^## (.+)$", text, re.M)
        assert headings[:2] == ["In production: one line", "Under `tether eval`"], (page, headings)


def test_every_adapter_has_a_page():
    assert sorted(p.name for p in DOCS.glob("*.md")) == sorted(PAGES)


# mcp.md's example (a gateway and a server in subprocesses, ~2.5 s) under -m slow: by default
# tests/gateway/test_mcp_gateway.py drives the same gateway to the same 4th-call stop, and checks the store too
@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p == "mcp.md" else p for p in sorted(PAGES)])
def test_the_smallest_example_runs(page, tmp_path, monkeypatch):
    pytest.importorskip(PAGES[page], reason=f"{page} needs {PAGES[page]}")
    code = _example(DOCS / page)
    if page == "mcp.md":   # the example spawns `python -m tether.cli` and names a repo path
        src = str(Path(__import__("tether").__file__).resolve().parents[1])
        monkeypatch.setenv("PYTHONPATH", src + os.pathsep + os.environ.get("PYTHONPATH", ""))
        code = code.replace('"mcp-demo.db"', repr(str(tmp_path / "mcp-demo.db")))
        code = code.replace("StdioServerParameters(", "StdioServerParameters(env=dict(__import__('os').environ), ")
        code = code.replace('"tests/adapters/mcp_flaky_server.py"', repr(str(ROOT / "tests/adapters/mcp_flaky_server.py")))
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    monkeypatch.setattr(sys, "argv", [str(script)])
    monkeypatch.setenv("TETHER_STORE", str(tmp_path / "tether.db"))
    for key in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):      # the page sets them for its loopback server
        monkeypatch.setenv(key, os.environ.get(key, ""))
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        if page == "openai-agents.md":       # guard_runs() installed tether's runner for the process
            from .conftest import reset_agents_sdk

            reset_agents_sdk()
