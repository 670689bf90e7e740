"""Shared test setup: real model requests are forbidden in the whole suite; the
session ends with the CPU seconds it cost (the default suite's budget: 150 s)."""

import ast
import compileall
import gc
import itertools
import os
import resource
import sys
from pathlib import Path

import pytest

import tether
from tether.models import set_model_requests_allowed


def pytest_sessionstart(session):
    """Byte-compile tether once, as its first import does where bytecode is written: the suite starts hundreds
    of processes (the CLI, docs blocks, killed runs), and under PYTHONDONTWRITEBYTECODE=1 each of them would
    compile every module it imports from source again. Only missing or stale files are compiled."""
    compileall.compile_dir(Path(tether.__file__).parent, quiet=2)
    # The cyclic collector's default (a pass every 700 allocations, a full pass every 100 of those) costs ~10 s of
    # CPU over the suite: its heap holds every test module, the framework SDKs and the pydantic schemas, and each
    # full pass walks all of it. Fewer passes free the same garbage a little later.
    gc.set_threshold(10_000, 10, 10)


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """Let pytest cache its assertion-rewritten test modules (tests/**/__pycache__, ignored by git) while it
    collects: under PYTHONDONTWRITEBYTECODE=1 it would otherwise parse and rewrite all of them on every run
    (~8 s of CPU). The user's setting is back in force before the first test runs."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        yield
    finally:
        sys.dont_write_bytecode = before


@pytest.fixture(scope="session")
def tether_sources() -> dict[Path, tuple[str, ast.Module]]:
    """Every module of src/tether, read and parsed once for the tests that scan the source (layers, the
    error tree, the C4 wing): path -> (text, tree), in path order. Read-only: parse a copy to change one."""
    package = Path(tether.__file__).parent
    out = {}
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        out[path] = (text, ast.parse(text))
    return out


@pytest.fixture(autouse=True)
def _forbid_real_model_requests():
    set_model_requests_allowed(False)
    yield
    set_model_requests_allowed(True)


@pytest.fixture(scope="session", autouse=True)
def _stores(tmp_path_factory):
    """The folder of the tests' stores. Its shared.db is the store of module- and session-scoped fixtures too (they
    are set up before a test's own store), so no eval a fixture runs writes .tether/ into the working directory."""
    folder = tmp_path_factory.mktemp("stores")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TETHER_STORE", str(folder / "shared.db"))
        yield folder


_STORE_NUMBERS = itertools.count(1)


@pytest.fixture(autouse=True)
def _private_run_store(_stores, monkeypatch):
    """CLI runs record into the embedded store: keep each test's store private (a file of its own in one folder:
    asking every test for a tmp_path cost a folder per test, and pytest lists its parent to number each one)."""
    monkeypatch.setenv("TETHER_STORE", str(_stores / f"{next(_STORE_NUMBERS)}.db"))


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium driven by playwright-python (nothing downloads a browser), one per module: while
    playwright's sync API is open, its event loop runs in the main thread, so no other fixture may call
    asyncio.run (the CLI does) after this one starts; ask for it last.

    Without /usr/bin/chromium ($TETHER_CHROMIUM) or playwright the tests using it skip, unless
    TETHER_REQUIRE_BROWSER=1 (set by .ci/run after scripts/install-browser.sh), where they fail instead."""
    chromium = os.environ.get("TETHER_CHROMIUM", "/usr/bin/chromium")
    why = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        why = "playwright is not installed (pip install playwright; never `playwright install`)"
    if why is None and not Path(chromium).exists():
        why = f"no chromium at {chromium} (scripts/install-browser.sh)"
    if why:
        if os.environ.get("TETHER_REQUIRE_BROWSER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield b
        b.close()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """tests/test_docs.py: how many blocks each page ran and skipped, with the reasons."""
    report = getattr(config, "docs_blocks_report", None)
    if report:
        terminalreporter.section("docs blocks")
        for page in sorted(report):
            terminalreporter.write_line(report[page])
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    own, sub = me.ru_utime + me.ru_stime, children.ru_utime + children.ru_stime
    terminalreporter.write_line(f"CPU: {own + sub:.0f} s ({own:.0f} s in pytest, {sub:.0f} s in subprocesses; "
                                "the default suite's budget is 150 s)")
