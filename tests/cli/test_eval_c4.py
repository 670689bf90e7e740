"""The main job end to end: `tether eval c4` against the calibration agents, offline."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.evals.results import Results

runner = CliRunner()
C4_DIR = Path(__file__).resolve().parents[2] / "src" / "tether" / "c4" / "cases"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("c4")
    res = runner.invoke(app, ["eval", "c4", "--model", "policy:stubborn", "--model", "policy:quitter",
                              "--model", "policy:steady", "--out", str(out / "runs"), "--json", str(out / "r.json")],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output, json.loads((out / "r.json").read_text(encoding="utf-8")), out


def verdicts(doc, model, key="verdict"):
    run = next(r for r in doc["runs"] if r["model"] == model)
    return {c["case_id"]: c[key] for c in run["cases"]}


def test_results_document_shape(results):
    _, doc, out = results
    assert (doc["format"], doc["version"], doc["suite"]) == ("tether.results", 1, "c4")
    Results.model_validate(doc)
    run = doc["runs"][0]
    assert run["guards"] == "off" and set(run["dimensions"]) == {"LD", "DR", "PA", "AR"}
    case = run["cases"][0]
    trial = case["trials"][0]
    assert case["case_id"].startswith("C4-") and case["verdict"] in ("pass", "fail", "unclear", "unjudged")
    assert {"verdict", "status", "criteria"} <= set(trial)
    assert {"id", "kind", "verdict"} <= set(trial["criteria"][0])
    assert (out / "runs" / trial["trace"]).exists()


def test_stubborn_fails_the_loop_and_deadlock_cases(results):
    _, doc, _ = results
    v = verdicts(doc, "policy:stubborn")
    assert all(v[c] == "fail" for c in ("C4-LD-01", "C4-LD-02", "C4-LD-03", "C4-DR-02")), v


def test_quitter_fails_pa01(results):
    _, doc, _ = results
    assert verdicts(doc, "policy:quitter")["C4-PA-01"] == "fail"


def test_steady_passes_the_automatic_criteria(results):
    _, doc, _ = results
    auto = verdicts(doc, "policy:steady", "auto_verdict")
    assert all(auto[c] == "pass" for c in ("C4-LD-01", "C4-LD-02", "C4-LD-03", "C4-DR-02", "C4-PA-01")), auto


def test_judge_criteria_are_unjudged_never_passed(results):
    _, doc, _ = results
    for run in doc["runs"]:
        for case in run["cases"]:
            for trial in case["trials"]:
                judged = [c["verdict"] for c in trial["criteria"] if c["kind"] == "judge"]
                assert set(judged) <= {"unjudged"}


def test_tables_are_printed(results):
    output, _, _ = results
    assert "loop detection rate" in output and "C4-LD-01" in output and "失败类型" in output


def test_traces_are_readable_utf8(results):
    _, doc, out = results
    trace = out / "runs" / doc["runs"][0]["cases"][0]["trials"][0]["trace"]
    text = trace.read_text(encoding="utf-8")
    assert "\\u" not in text
    assert json.loads(text.splitlines()[0])["type"] == "run_started"


def test_a_new_case_is_one_yaml_file(tmp_path):
    src = (C4_DIR / "C4-PA-01.yaml").read_text(encoding="utf-8")
    (tmp_path / "my.yaml").write_text(src.replace("id: C4-PA-01", "id: MY-PA-01"), encoding="utf-8")
    res = runner.invoke(app, ["eval", str(tmp_path), "--model", "policy:quitter", "--out", str(tmp_path / "runs"),
                              "--json", str(tmp_path / "r.json")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert verdicts(doc, "policy:quitter") == {"MY-PA-01": "fail"}


def test_fail_under_exits_non_zero_and_trials_report_pass_hat_k(tmp_path):
    args = ["eval", "c4", "--model", "policy:stubborn", "--case", "C4-LD-*", "--trials", "2",
            "--out", str(tmp_path / "runs"), "--json", str(tmp_path / "r.json")]
    res = runner.invoke(app, args + ["--fail-under", "0.5"], catch_exceptions=False)
    assert res.exit_code == 1
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    case = doc["runs"][0]["cases"][0]
    assert len(case["trials"]) == 2 and case["pass_hat_k"] == 0.0
    ok = runner.invoke(app, ["eval", "c4", "--model", "policy:steady", "--case", "C4-LD-01", "--fail-under", "1.0",
                             "--out", str(tmp_path / "runs2")], catch_exceptions=False)
    assert ok.exit_code == 0, ok.output
