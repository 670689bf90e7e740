"""Issue 19 finding 2 (and 5): the viewer and the report with records from elsewhere.

A real store, a real loopback HTTP server (``tether view``'s), real HTTP
requests; the browser half is in test_browser.py."""

from __future__ import annotations

import http.client
import json
import re
import sqlite3
import threading
from pathlib import Path

import pytest

from .payloads import PAYLOAD, poison
from .records import cli, finished_export, write_export


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory):
    """A store with an eval, an imported run whose every text field carries PAYLOAD,
    and the results file of the eval with PAYLOAD in its labels."""
    folder = tmp_path_factory.mktemp("hostile-pages")
    db = folder / "t.db"
    res = cli("eval", "c4", "--model", "policy:steady", "--case", "C4-LD-01", "--store", str(db), "-q",
              "--json", str(folder / "r.json"))
    assert res.exit_code in (0, 1), res.output
    events = poison(finished_export(folder / "src", "xss1"))
    res = cli("runs", "import", str(write_export(folder / "xss.jsonl", events)), "--store", str(db))
    assert res.exit_code == 0, res.output
    doc = json.loads((folder / "r.json").read_text(encoding="utf-8"))
    for run in doc["runs"]:
        run["model"] = PAYLOAD
        for case in run["cases"]:
            case["title"] = PAYLOAD
            for trial in case["trials"]:
                trial["reply"] = PAYLOAD
    (folder / "r.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    con = sqlite3.connect(db)
    con.execute("UPDATE evals SET results=?", (json.dumps(doc, ensure_ascii=False),))
    # a store from elsewhere holds what no import lets in: an eval id that is markup
    con.execute("UPDATE runs SET eval_id=? WHERE run_id='xss1'", ('ev-x"><img src=x onerror=window.__xss=1>',))
    con.commit()
    con.close()
    return folder


class Served:
    def __init__(self, store_path: Path):
        from tether.report.html.server import make_server
        from tether.store import SQLiteStore

        self.store = SQLiteStore(store_path)
        self.server = make_server(self.store, 0)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def get(self, path: str, host: str | None = None) -> tuple[int, dict, str]:
        con = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        con.putrequest("GET", path, skip_host=True)
        con.putheader("Host", host if host is not None else f"127.0.0.1:{self.port}")
        con.endheaders()
        r = con.getresponse()
        body = r.read().decode("utf-8")
        con.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.store.close()


@pytest.fixture
def served(hostile_store):
    s = Served(hostile_store / "t.db")
    yield s
    s.close()


def _script_src(csp: str) -> str:
    m = re.search(r"script-src ([^;]*)", csp)
    return m.group(1) if m else ""


def _no_live_markup(html: str) -> None:
    assert "<img src=x" not in html and "<script>window.__xss" not in html
    assert 'href="javascript:' not in html
    # every script element is ours: no attribute-less <script> holding data
    for m in re.finditer(r"<script([^>]*)>", html):
        assert 'type="application/json"' in m.group(1) or "nonce=" in m.group(1) or m.group(1) == "", m.group(0)


def test_viewer_pages_escape_every_value_and_forbid_inline_script(served, hostile_store):
    evals = json.loads((hostile_store / "r.json").read_text(encoding="utf-8"))["eval_id"]
    for path in ("/", "/run/xss1", f"/eval/{evals}", "/diff?run=xss1&run=xss1", "/?q=%3Cimg%20src%3Dx%3E"):
        status, headers, body = served.get(path)
        assert status == 200, (path, body[:300])
        csp = headers["content-security-policy"]
        assert "unsafe-inline" not in _script_src(csp) and _script_src(csp), csp
        _no_live_markup(body)


def test_viewer_refuses_a_foreign_host_header(served):
    status, _, body = served.get("/", host="evil.example:80")
    assert status in (400, 403, 421), status
    assert "xss1" not in body
    assert served.get("/", host=f"localhost:{served.port}")[0] == 200
    assert served.get("/", host=f"127.0.0.1:{served.port}")[0] == 200


def test_report_file_escapes_every_value_and_forbids_inline_script(hostile_store):
    out = hostile_store / "report.html"
    res = cli("report", str(hostile_store / "r.json"), "--html", str(out), "--store", str(hostile_store / "t.db"))
    assert res.exit_code == 0, res.output
    html = out.read_text(encoding="utf-8")
    m = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert m, "the report carries its CSP"
    policy = __import__("html").unescape(m.group(1))
    assert "unsafe-inline" not in _script_src(policy) and "sha256-" in _script_src(policy)
    _no_live_markup(html)


def test_a_damaged_events_row_is_shown_on_its_own_page_only(tmp_path):
    db = tmp_path / "t.db"
    assert cli("run", "C4-LD-01", "--run-id", "good1", "--store", str(db)).exit_code in (0, 3)
    assert cli("run", "C4-LD-01", "--run-id", "bad1", "--store", str(db)).exit_code in (0, 3)
    con = sqlite3.connect(db)
    con.execute("UPDATE events SET events=? WHERE run_id='bad1' AND seq=(SELECT MAX(seq) FROM events WHERE "
                "run_id='bad1')", (b'{"seq": 9, "type": "tool_re\xff\n',))
    con.commit()
    con.close()
    s = Served(db)
    try:
        assert s.get("/")[0] == 200
        assert s.get("/run/good1")[0] == 200
        status, _, body = s.get("/run/bad1")
        assert status == 500 and "damaged" in body, (status, body[:300])
    finally:
        s.close()
    for argv in (["stats"], ["runs", "show", "good1"], ["runs", "export", "good1"], ["runs", "list"],
                 ["guard-check", "good1"], ["runs", "export-otel", "good1", "--file", str(tmp_path / "o.json")]):
        res = cli(*argv, "--store", str(db))
        assert res.exit_code in (0, 3), (argv, res.output)
    for argv in (["runs", "show", "bad1"], ["runs", "export", "bad1"], ["guard-check", "bad1"],
                 ["runs", "export-otel", "bad1", "--file", str(tmp_path / "o.json")]):
        res = cli(*argv, "--store", str(db))
        assert res.exit_code == 2 and "damaged" in res.output and "bad1" in res.output, (argv, res.output)


# -- in a real browser (chromium: ``browser`` in tests/conftest.py) -------------------------------


def _visit(browser, url: str, clicks: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    page = browser.new_page()
    console: list[str] = []
    violations: list[str] = []
    page.on("console", lambda m: console.append(m.text))
    page.on("pageerror", lambda e: console.append(str(e)))
    page.goto(url)
    page.wait_for_load_state("load")
    for selector in clicks:                      # open what hides text: details, hash pages
        for el in page.locator(selector).all()[:20]:
            try:
                el.click(timeout=500)
            except Exception:
                pass
    page.wait_for_timeout(200)
    assert page.evaluate("window.__xss") is None, f"a payload ran on {url}"
    assert page.locator("img[src=x]").count() == 0, "a payload became an element"
    assert page.evaluate("[...document.scripts].filter(s => s.textContent.includes('__xss') && "
                         "s.type !== 'application/json').length") == 0
    assert page.evaluate("document.body.textContent.includes('onerror=')"), "the payload is shown as text"
    page.close()
    return console, violations


def test_no_payload_runs_in_chromium_viewer_or_report(hostile_store, browser):
    s = Served(hostile_store / "t.db")
    try:
        base = f"http://127.0.0.1:{s.port}"
        eval_id = json.loads((hostile_store / "r.json").read_text(encoding="utf-8"))["eval_id"]
        for path in ("/", "/run/xss1", f"/eval/{eval_id}", "/diff?run=xss1&run=xss1"):
            console, _ = _visit(browser, base + path, ("details > summary", "a[href^='#']"))
            assert not [c for c in console if "XSS" in c], (path, console)
    finally:
        s.close()
    out = hostile_store / "report-browser.html"
    res = cli("report", str(hostile_store / "r.json"), "--html", str(out), "--store", str(hostile_store / "t.db"))
    assert res.exit_code == 0, res.output
    console, _ = _visit(browser, out.as_uri(), ("details > summary", "a[href^='#']"))
    assert not [c for c in console if "XSS" in c], console
    assert not [c for c in console if "Content Security Policy" in c], console   # our own script is allowed
