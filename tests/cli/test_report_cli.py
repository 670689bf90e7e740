"""tether report: one self-contained file, clean errors, a diff page."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from tether.cli import app

runner = CliRunner()


def _eval(tmp_path, name, model="policy:stubborn"):
    res = runner.invoke(app, ["eval", "c4", "--model", model, "--guards", "off", "--guards", "on", "--case", "C4-LD-0[12]",
                              "--quiet", "--store", str(tmp_path / "t.db"), "--json", str(tmp_path / name)])
    assert res.exit_code == 0, res.output
    return tmp_path / name


def test_report_is_self_contained(tmp_path):
    r = _eval(tmp_path, "r.json")
    res = runner.invoke(app, ["report", str(r), "--html", str(tmp_path / "out.html")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "out.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert html.count("<script") == 1 + html.count('type="application/json"')     # one inline script, data blocks
    assert "查一下下周五北京到上海的机票" in html
    assert not re.search(r"\\u[3-9][0-9a-f]{3}", html)      # Chinese kept as is (only <>&' escaped in JSON data)
    assert 'id="overview"' in html and 'id="guards"' in html and 'id="case-C4-LD-01"' in html
    assert "[21%, 100%] n=1" in html                                                 # a Wilson interval
    assert html.count('class="page" id="t-policy_stubborn-') == 4                     # 2 cases x 2 guard settings
    assert 'href="#diff-policy_stubborn-off-on-C4-LD-01"' in html                   # guards off -> on, side by side


def test_report_against_a_base(tmp_path):
    base = _eval(tmp_path, "base.json", "policy:stubborn")
    new = _eval(tmp_path, "new.json", "policy:steady")
    res = runner.invoke(app, ["report", str(new), "--html", str(tmp_path / "d.html"), "--against", str(base)])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "d.html").read_text(encoding="utf-8")
    assert 'id="diff"' in html and "policy:stubborn" in html and "improved" in html


def test_report_errors_are_one_line(tmp_path):
    res = runner.invoke(app, ["report", str(tmp_path / "nope.json")])
    assert res.exit_code == 2 and "not found" in res.output and "Traceback" not in res.output
    (tmp_path / "bad.json").write_text('{"format": "other"}', encoding="utf-8")
    res = runner.invoke(app, ["report", str(tmp_path / "bad.json")])
    assert res.exit_code == 2 and "not a tether results document" in res.output


def test_report_without_its_store_says_what_to_pass(tmp_path):
    r = _eval(tmp_path, "r.json")
    doc = json.loads(r.read_text(encoding="utf-8"))
    doc["store"] = str(tmp_path / "gone.db")             # the results name a store that is not there
    r.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    res = runner.invoke(app, ["report", str(r), "--html", str(tmp_path / "x.html")])
    assert res.exit_code == 2 and "--store" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["report", str(r), "--html", str(tmp_path / "x.html"), "--store", str(tmp_path / "t.db")])
    assert res.exit_code == 0, res.output
