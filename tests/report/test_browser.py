"""The report and the viewer in a real browser (Debian's chromium driven by
playwright-python; nothing downloads a browser). Screenshots are saved under
tests/report/artifacts/ (ignored by git) and the test's tmp dir.

The browser is ``browser`` in tests/conftest.py: without
/usr/bin/chromium or playwright these tests skip, unless TETHER_REQUIRE_BROWSER=1
(set by .ci/run after scripts/install-browser.sh), where they fail instead."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli import app

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
runner = CliRunner()


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    out = tmp_path_factory.mktemp("browser")
    res = runner.invoke(app, ["eval", "c4", "--model", "policy:stubborn", "--model", "policy:steady",
                              "--guards", "off", "--guards", "on", "--quiet",
                              "--store", str(out / "t.db"), "--json", str(out / "r.json")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["report", str(out / "r.json"), "--html", str(out / "report.html")],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out


def _save(page, tmp: Path, name: str) -> Path:
    path = tmp / f"{name}.png"
    page.screenshot(path=str(path), full_page=name.endswith("full"))
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(path, ARTIFACTS / path.name)
    print(f"screenshot: {ARTIFACTS / path.name}")
    return path


def _overview_to_guard_trip(page, tmp: Path, prefix: str, run_page: bool = False) -> None:
    """From the overview, click a stubborn C4-LD-01 trial under guards on; its
    transcript shows the loop guard's trip (in the viewer, on the run's own page)."""
    assert page.locator("#overview.on").is_visible()
    assert page.locator("#matrix").get_by_text("policy:stubborn").first.is_visible()
    _save(page, tmp, f"{prefix}-overview")
    chip = page.locator('#cases-table a.v[data-model="policy:stubborn"][data-guards="on"][href*="C4-LD-01"]').first
    chip.click()
    if run_page:
        page.wait_for_url(re.compile(r"/run/"))
        page.wait_for_load_state()
    section = page.locator("section.page.on")
    assert "C4-LD-01" in section.locator("h1").inner_text()
    trip = section.locator(".ev-guard").first
    trip.scroll_into_view_if_needed()
    assert trip.is_visible()
    text = trip.inner_text()
    assert "LOOP.IDENTICAL" in text.upper() and "search_flights" in text
    assert section.locator(".status").inner_text() == "loop_aborted"
    _save(page, tmp, f"{prefix}-transcript")
    # search filters the transcript's events
    section.locator(".toolbar input[type=search]").fill("identical call")
    assert section.locator(".ev-tool:not(.hidden)").count() == 0 or section.locator(".ev-guard:not(.hidden)").count() >= 1
    section.locator(".toolbar input[type=search]").fill("")


def _watch(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: errors.append(f"network request {r.url}")
            if r.url.startswith(("http://", "https://")) and "127.0.0.1" not in r.url else None)
    return errors


@pytest.mark.slow        # the default suite's browser check: tests/hostile/test_pages.py (the report and the viewer)
def test_report_file_in_chromium(evaluated, browser, tmp_path):
    html = (evaluated / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?https?://""", html), "the report must not fetch anything"
    assert "@import" not in html and "url(http" not in html
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors = _watch(page)
    page.goto((evaluated / "report.html").as_uri())
    _overview_to_guard_trip(page, tmp_path, "report")
    page.goto((evaluated / "report.html").as_uri() + "#guards")
    assert page.locator("#guards.on").get_by_text("What the guards changed").is_visible()
    page.goto((evaluated / "report.html").as_uri() + "#charts")
    assert page.locator("#charts.on svg.chart").count() >= 3
    assert errors == []


@pytest.mark.slow        # a server and a click-through; tests/hostile/test_pages.py drives the viewer in chromium by default
def test_view_serves_the_store_in_chromium(evaluated, browser, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "tether.cli", "view", "--port", "0", "--store",
                             str(evaluated / "t.db")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            encoding="utf-8")
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert m, line + proc.stderr.read() if proc.poll() is not None else line
        url = m.group(0)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        errors = _watch(page)
        page.goto(url)
        assert page.locator("#runs").get_by_text("policy:stubborn").first.is_visible()
        _save(page, tmp_path, "view-index")
        # the evals list: models, guard settings, a rate per dimension in the suite's order, errors
        heads = page.locator("#evals th").all_inner_texts()
        assert [h for h in ("models", "guards", "rate per dimension", "errors") if h in heads] == \
            ["models", "guards", "rate per dimension", "errors"], heads
        row = page.locator("#evals tr").nth(1)
        assert row.locator("td.models").inner_text().split() == ["policy:stubborn", "policy:steady"]
        assert "off, on" in row.inner_text()
        dims = row.locator("td.rates div").first.locator(".dimrate").evaluate_all("els => els.map(e => e.dataset.dim)")
        assert dims == ["LD", "DR", "PA", "AR"]
        assert row.locator("td.rates div").count() == 4                  # 2 models x 2 guard settings
        page.locator("#evals a").first.click()
        page.wait_for_load_state()
        _overview_to_guard_trip(page, tmp_path, "view", run_page=True)
        # one run on its own page, and two runs side by side
        page.goto(url)
        boxes = page.locator('#runs input[type=checkbox]')
        boxes.nth(0).check()
        boxes.nth(1).check()
        page.locator("#diffform button").click()
        page.wait_for_load_state()
        assert page.locator("section.page.on h1").inner_text().count("→") == 1
        assert errors == []
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_an_anchor_is_never_under_the_sticky_header(evaluated, browser):
    """#anchors inside a page (a table of the overview) land below the sticky header."""
    page = browser.new_page(viewport={"width": 900, "height": 420})
    errors = _watch(page)
    page.goto((evaluated / "report.html").as_uri() + "#cases-table")
    page.wait_for_timeout(100)
    assert page.locator("#overview.on").is_visible()
    header = page.locator("header.top").bounding_box()
    target = page.locator("#cases-table").bounding_box()
    assert page.evaluate("window.scrollY") > 0, "the page did not scroll to the anchor"
    assert target["y"] >= header["y"] + header["height"], (header, target)
    assert errors == []
