"""The evals list (the viewer's index and `tether runs evals`): models, guard settings,
rates per dimension in the suite's order, errors; a keyset page of evals."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from tether.cli import _common, app  # noqa: F401  (the CLI's consoles exist before a test sets COLUMNS:
#                                        Rich reads COLUMNS once, when a console is made)
from tether.report.html.server import Viewer
from tether.store import SQLiteStore

runner = CliRunner()
ORDER = ["LD", "DR", "PA", "AR"]          # the C4 seed's order


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """A real eval (two subjects, guards off and on, one case per dimension), then 22 more
    evals that are only begun (no runs, no results) so the list has more than one page."""
    out = tmp_path_factory.mktemp("evals")
    db = str(out / "t.db")
    res = runner.invoke(app, ["eval", "c4", "--model", "policy:stubborn", "--model", "policy:steady",
                              "--guards", "off", "--guards", "on", "--case", "C4-LD-01", "--case", "C4-DR-01",
                              "--case", "C4-PA-02", "--case", "C4-AR-03", "--quiet", "--store", db,
                              "--json", str(out / "r.json")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    store = SQLiteStore(db)
    for i in range(22):
        store.create_eval(f"ev-later-{i:02d}", "c4", {"models": [f"m{i}"], "guards": ["on"]})
    return db, json.loads((out / "r.json").read_text(encoding="utf-8"))


def _evals_table(html: str) -> str:
    return html[html.index('<table id="evals">'):html.index("</table>", html.index('<table id="evals">'))]


def test_the_index_lists_models_guards_rates_and_errors(evaluated):
    db, results = evaluated
    viewer = Viewer(SQLiteStore(db, read_only=True))
    first = viewer.index({})
    table = _evals_table(first)
    for header in ("models", "guards", "rate per dimension", "errors"):
        assert f"<th>{header}</th>" in table or f'<th class="num">{header}</th>' in table
    assert table.count("<tr>") == 1 + Viewer.EVALS_PAGE            # the header and one page
    assert "ev-later-21" in table and results["eval_id"] not in table   # newest first: the real one is older
    older = re.search(r'href="(/\?evals_before=[^"]+)"', first)
    assert older, "no link to the older evals"
    second = _evals_table(viewer.index({"evals_before": older.group(1).split("=", 1)[1].split("#")[0]}))
    assert results["eval_id"] in second and "ev-later-21" not in second and "ev-later-01" in second
    row = second[second.index(results["eval_id"]):]
    row = row[:row.index("</tr>")]
    for model in ("policy:stubborn", "policy:steady"):
        assert f"<div>{model}</div>" in row
    assert "<td>off, on</td>" in row and '<td class="num">0</td>' in row
    assert row.count('data-dim="LD"') == 4                              # 2 models x 2 guard settings
    for subject in results["runs"]:
        label = f"{subject['model']} · {subject['guards']}:"
        part = row[row.index(label):]
        part = part[:part.index("</div>")]
        assert re.findall(r'data-dim="(\w+)"', part) == ORDER
        for dim in ORDER:
            m = subject["dimensions"][dim]
            want = (f"{m['rate']:.0%}" if m["rate"] is not None else
                    f"auto {m['auto_rate']:.0%}" if m["auto_rate"] is not None else
                    "unjudged" if m["unjudged"] else "unclear" if m["unclear"] else "-")
            assert re.search(rf'data-dim="{dim}">{dim}[↑↓] {re.escape(want)}</span>', part), (dim, want, part)


def test_an_eval_report_from_the_store_keeps_the_suite_order(evaluated):
    db, results = evaluated
    html = Viewer(SQLiteStore(db, read_only=True)).eval_report(results["eval_id"])
    matrix = html[html.index('<table id="matrix">'):]
    heads = re.findall(r'<th title="[^"]*">(\w\w) ', matrix[:matrix.index("</tr>")])
    assert heads == ORDER
    table = matrix[:matrix.index("</table>")]
    assert "n/a" not in table and '">unclear</span>' in table       # policy:stubborn, guards on: DR all unclear
    shown = re.findall(r"具体表现 manifestation</th><td>(.*?)</td>", html)       # the zh-CN attribution table
    words = [re.sub(r"[A-Z]{2}-\d\d\.\w+", "", x) for x in shown]                # criterion ids are data
    assert shown and not [x for x in words if re.search(r"\b(calls|reply|mentions|questions)\b", x)], shown


def test_runs_evals_lists_the_same_in_every_format(evaluated):
    db, results = evaluated
    doc = json.loads(runner.invoke(app, ["runs", "evals", "--store", db, "--format", "json", "--limit", "30"],
                                   catch_exceptions=False).stdout)
    assert doc["kind"] == "evals" and len(doc["rows"]) == 23
    row = next(r for r in doc["rows"] if r["eval"] == results["eval_id"])
    assert row["models"] == ["policy:stubborn", "policy:steady"] and row["guards"] == ["off", "on"]
    assert row["runs"] == 16 and row["errors"] == 0 and len(row["subjects"]) == 4
    assert list(row["subjects"][0]["rates"]) == ORDER
    plain = runner.invoke(app, ["runs", "evals", "--store", db, "--limit", "30"], env={"COLUMNS": "40"},
                          catch_exceptions=False).stdout.splitlines()
    assert plain[0].split("\t")[0] == "eval" and len(plain) == 24
    assert {line.split("\t")[0] for line in plain[1:]} == {r["eval"] for r in doc["rows"]}
    line = next(x for x in plain if x.startswith(results["eval_id"] + "\t"))
    assert "policy:steady · guards on: LD" in line


def test_a_viewer_reads_a_finished_evals_results_once(evaluated):
    db, results = evaluated
    store = SQLiteStore(db, read_only=True)
    asked: list = []
    overview = store.eval_overview
    store.eval_overview = lambda ids, results=None: asked.append(results) or overview(ids, results)
    viewer = Viewer(store)
    page = {"evals_before": "ev-later-01"}
    first, second = viewer.index(page), viewer.index(page)
    assert asked[0] == ["ev-later-00", results["eval_id"]] and asked[1] == ["ev-later-00"]   # not finished: asked
    assert _evals_table(first) == _evals_table(second)


def test_a_results_document_from_elsewhere_is_data(evaluated, tmp_path):
    """Rates that are not numbers, dimensions that are not objects: the list shows what it can."""
    from tether.report.overview import eval_rows

    bad = {"suite": "c4", "runs": [{"model": "<b>m</b>", "guards": "off",
                                     "dimensions": {"LD": {"rate": "1e9"}, "DR": [1], "PA": {"rate": True}}}, 7]}
    (row,) = eval_rows([{"eval_id": "x", "suite": "c4", "status": "finished", "created": 0.0, "config": {}}],
                       {"x": {"runs": 0, "errors": 0, "running": 0, "results": bad}})
    (subject,) = row["subjects"]
    assert [(d, m["text"]) for d, m in subject["rates"].items()] == [("LD", "-"), ("PA", "-")]
