"""Words (issue 23): one language per sentence with --lang zh, JSON where data is printed
(never a Python repr), the legend and the rate cells in the documented vocabulary."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from tether.cli import _common, app  # noqa: F401  (the CLI's consoles exist before a test sets COLUMNS:
#                                        Rich reads COLUMNS once, when a console is made)
from tether.evals import load_suite

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "100"}, catch_exceptions=False)


def test_lang_zh_attribution_has_no_english_sentence(tmp_path):
    cases = ["C4-LD-01", "C4-DR-01", "C4-PA-04", "C4-LD-03", "C4-PA-05"]
    res = run("eval", "c4", "--model", "policy:stubborn", "--model", "policy:quitter", "--verbose", "--lang", "zh",
              *(a for c in cases for a in ("--case", c)), "--store", str(tmp_path / "t.db"))
    assert res.exit_code == 0, res.output
    data = {t for c in load_suite("c4") for t in c.tools}            # tool names are data, not words
    lines = [line for line in res.stdout.splitlines() if line.strip().startswith(("具体表现", "根本原因"))]
    assert len(lines) >= 8 and "失败归因 · policy:stubborn · 守卫 off" in res.stdout
    for line in lines:
        words = re.sub(r"［[^］]*］", "", line)                        # a call's tool and arguments: data
        words = re.sub(r"\b[A-Z]{2}-\d\d\.\w+", "", words)            # criterion ids
        words = re.sub(r"\b(" + "|".join(sorted(data, key=len, reverse=True)) + r")\b", "", words)
        words = re.sub(r"\b(awaiting_user|completed|loop_aborted|step_limit|needs_human)\b", "", words)
        english = re.findall(r"[A-Za-z]{3,}", re.sub(r"[A-Z0-9-]{4,}", "", words))
        english = [w for w in english if w not in ("Sony", "Bose", "AirPods")]   # the case's own terms
        assert not english, (english, line)


def test_run_and_approve_print_data_as_json(tmp_path):
    db = str(tmp_path / "t.db")
    held = run("run", "C4-PA-01", "--approve", "taobao_*", "--run-id", "w1", "--store", db)
    assert 'taobao_search_products({"keyword": "羽毛球鞋 李宁"})' in held.stdout, held.stdout
    done = run("approve", "w1", "--edit", '{"keyword": "李宁羽毛球鞋"}', "--approver", "allow", "--store", db)
    assert '-> {"keyword": "李宁羽毛球鞋"}' in done.stdout and '"total": 12' in done.stdout
    shown = run("runs", "show", "w1", "--store", db)
    for out in (held.stdout, done.stdout, shown.stdout):
        assert not re.search(r"[{\[(, ]'[^']*':", out), out             # no {'key': ...} anywhere


def test_legend_names_each_dimension_once(tmp_path):
    """A suite that names no dimension reads `LD pass rate`, never `LD LD pass rate`."""
    assert run("case", "new", str(tmp_path / "mine")).exit_code == 0
    res = run("eval", str(tmp_path / "mine.yaml"), "--model", "policy:steady", "--store", str(tmp_path / "t.db"))
    assert res.exit_code == 0, res.output
    assert "  LD pass rate" in res.stdout and "LD LD" not in res.stdout


def test_a_rate_nobody_decided_reads_unclear_or_unjudged_never_na(tmp_path):
    res = run("eval", "c4", "--model", "policy:stubborn", "--guards", "on", "--case", "C4-DR-01", "--case", "C4-PA-03",
              "--store", str(tmp_path / "t.db"))
    assert res.exit_code == 0, res.output
    assert "n/a" not in res.stdout
    summary = res.stdout[res.stdout.index("rate per dimension"):]
    assert "unclear" in summary.split("LD loop")[0] and "unjudged" in summary.split("LD loop")[0]


def test_one_call_is_singular(tmp_path):
    db = str(tmp_path / "t.db")
    assert run("run", "C4-PA-01", "--model", "policy:quitter", "--run-id", "q1", "--store", db).exit_code in (0, 1)
    res = runner.invoke(app, ["guard-check", "q1", "--store", db, "--format", "table"], catch_exceptions=False)
    assert "1 tool call executed" in res.output and "1 tool calls" not in res.output, res.output
    (tmp_path / "pa01.yaml").write_text(run("case", "show", "C4-PA-01").stdout, encoding="utf-8")
    cal = run("case", "calibrate", str(tmp_path / "pa01.yaml"))
    assert "(1 call, " in cal.stdout and "1 calls" not in cal.stdout, cal.stdout
