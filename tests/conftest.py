"""Shared test setup: real model requests are forbidden in the whole suite; the
session ends with the CPU seconds it cost (the default suite's budget: 150 s)."""

import resource

import pytest

from tether.models import set_model_requests_allowed


@pytest.fixture(autouse=True)
def _forbid_real_model_requests():
    set_model_requests_allowed(False)
    yield
    set_model_requests_allowed(True)


@pytest.fixture(autouse=True)
def _private_run_store(tmp_path, monkeypatch):
    """CLI runs record into the embedded store: keep each test's store private."""
    monkeypatch.setenv("TETHER_STORE", str(tmp_path / "tether-store.db"))


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
