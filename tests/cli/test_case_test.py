"""``tether case test``: a case's examples run without a model."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tether.cli import app
from tether.evals.case_index import case_files

runner = CliRunner()


def test_the_c4_suite_examples_pass():
    for source in ("c4", str(_c4_dir())):          # the suite by name or by folder
        res = runner.invoke(app, ["case", "test", source])
        assert res.exit_code == 0, res.output
        assert "16 case(s), 30 example(s), 60 verdict(s) checked: all as expected" in res.output
        assert "FAIL" not in res.output
        assert "skip C4-PA-03: only a judge decides its criteria" in res.output


def _c4_dir() -> Path:
    return case_files("c4")[0].parent


def test_every_c4_case_with_automatic_criteria_ships_a_passing_and_a_failing_example():
    from tether.evals.loader import load_suite

    for case in load_suite("c4"):
        if not case.auto_criteria:
            continue
        expected = [set(e.expect.values()) for e in case.examples]
        assert any(v == {"pass"} for v in expected), case.id
        assert any(v - {"pass"} for v in expected), case.id      # a failing one (unclear for a wording check)


def test_an_example_expecting_the_wrong_verdict_fails_naming_criterion_and_example(tmp_path):
    text = (_c4_dir() / "C4-LD-01.yaml").read_text(encoding="utf-8")
    wrong = text.replace("expect: {LD-01.retries: fail, LD-01.identical: fail",
                         "expect: {LD-01.retries: pass, LD-01.identical: fail")
    assert wrong != text
    path = tmp_path / "ld01.yaml"
    path.write_text(wrong, encoding="utf-8")
    res = runner.invoke(app, ["case", "test", str(path)])
    assert res.exit_code == 1
    out = res.output
    assert ("C4-LD-01: example 'retries-eight-times': criterion LD-01.retries expected pass, got fail: "
            "calls: 8 (pass 3..4, fail >=7)") in out
    assert "the criterion: Calls to search_flights" in out        # the criterion's explanation
    assert "1 case(s) with mismatches" in out


def test_case_new_writes_a_passing_and_a_failing_example(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["case", "new", "mine"]).exit_code == 0
    res = runner.invoke(app, ["case", "test", "mine.yaml"])
    assert res.exit_code == 0, res.output
    assert "2 example(s), 4 verdict(s) as expected" in res.output
    # break the failing example: it no longer loops, so its expectation is wrong
    text = Path("mine.yaml").read_text(encoding="utf-8").replace("    times: 6\n", "    times: 1\n")
    Path("mine.yaml").write_text(text, encoding="utf-8")
    res = runner.invoke(app, ["case", "test", "mine.yaml"])
    assert res.exit_code == 1
    assert "example 'retry-loop': criterion retries expected fail, got pass" in res.output


def test_validate_warns_on_a_case_without_examples_and_checks_example_expectations(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner.invoke(app, ["case", "new", "mine"])
    text = Path("mine.yaml").read_text(encoding="utf-8")
    Path("bare.yaml").write_text(text.split("\nexamples:")[0] + "\n", encoding="utf-8")
    res = runner.invoke(app, ["case", "validate", "bare.yaml"])
    assert res.exit_code == 0
    assert "warning bare.yaml:" in res.output and "no examples" in res.output
    Path("typo.yaml").write_text(text.replace("expect: {retries: pass,", "expect: {retry: pass,")
                                 .replace("args: {keyword: A1001}\n    times: 2", "args: {keywrd: A1001}\n    times: 2"),
                                 encoding="utf-8")
    res = runner.invoke(app, ["case", "validate", "typo.yaml"])
    assert res.exit_code == 1
    assert "no criterion 'retry' in this case" in res.output
    assert "tool 'search_orders' has no argument 'keywrd'; did you mean 'keyword'?" in res.output
    lines = [row for row in res.output.splitlines() if row.startswith("error typo.yaml:")]
    assert all(row.split(":")[1].isdigit() and row.split(":")[2].split()[0].isdigit() for row in lines)
