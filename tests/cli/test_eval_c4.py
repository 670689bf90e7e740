"""The main job end to end: `tether eval c4` against the calibration agents, offline."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.evals.results import Results
from tether.store import SQLiteStore
from tether.store.export import load_run

runner = CliRunner()
C4_DIR = Path(__file__).resolve().parents[2] / "src" / "tether" / "c4" / "cases"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("c4")
    res = runner.invoke(app, ["eval", "c4", "--model", "policy:stubborn", "--model", "policy:quitter",
                              "--model", "policy:steady", "--store", str(out / "t.db"), "--json", str(out / "r.json")],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output, json.loads((out / "r.json").read_text(encoding="utf-8")), out


def verdicts(doc, model, key="verdict"):
    run = next(r for r in doc["runs"] if r["model"] == model)
    return {c["case_id"]: c[key] for c in run["cases"]}


def test_results_document_shape(results):
    _, doc, out = results
    assert (doc["format"], doc["version"], doc["suite"]) == ("tether.results", 2, "c4")
    assert re.fullmatch(r"ev-\d{8}-[0-9a-f]{6}", doc["eval_id"]) and doc["store"] == str(out / "t.db")
    Results.model_validate(doc)
    run = doc["runs"][0]
    assert run["guards"] == "off" and set(run["dimensions"]) == {"LD", "DR", "PA", "AR"}
    case = run["cases"][0]
    trial = case["trials"][0]
    assert case["case_id"].startswith("C4-") and case["verdict"] in ("pass", "fail", "unclear", "unjudged")
    assert {"verdict", "status", "criteria"} <= set(trial)
    assert {"id", "kind", "verdict"} <= set(trial["criteria"][0])
    assert trial["run_id"].startswith(doc["eval_id"]) and len(trial["digest"]) == 64 and "trace" not in trial


def test_every_trial_is_a_stored_run_of_the_eval(results):
    output, doc, out = results
    store = SQLiteStore(out / "t.db")
    trials = [t for r in doc["runs"] for c in r["cases"] for t in c["trials"]]
    runs = store.list_runs(1000, eval_id=doc["eval_id"])
    assert len(runs) == len(trials) == 3 * len(doc["runs"][0]["cases"]) and {r["kind"] for r in runs} == {"eval"}
    assert {r["run_id"] for r in runs} == {t["run_id"] for t in trials}
    for t in trials[:3]:
        assert load_run(store, t["run_id"]).digest() == t["digest"] == store.get_run(t["run_id"])["digest"]
    stored = store.get_eval(doc["eval_id"])
    assert stored["status"] == "finished" and stored["results"]["runs"][0]["cases"] == doc["runs"][0]["cases"]
    assert output.count(doc["eval_id"]) >= 2                            # at the start and at the end


def test_two_evals_never_touch_each_others_runs(tmp_path):
    args = ["eval", "c4", "-m", "policy:stubborn", "-c", "C4-LD-01", "--store", str(tmp_path / "t.db"), "-q"]
    first = runner.invoke(app, args + ["--json", str(tmp_path / "a.json")], catch_exceptions=False)
    second = runner.invoke(app, args + ["--json", str(tmp_path / "b.json")], catch_exceptions=False)
    assert first.exit_code == second.exit_code == 0
    a, b = (Results.load(tmp_path / n) for n in ("a.json", "b.json"))
    assert a.eval_id != b.eval_id
    ta, tb = a.runs[0].cases[0].trials[0], b.runs[0].cases[0].trials[0]
    assert ta.run_id != tb.run_id
    store = SQLiteStore(tmp_path / "t.db")
    assert load_run(store, ta.run_id).digest() == ta.digest and load_run(store, tb.run_id).digest() == tb.digest


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
    assert "loop detection rate" in output and "C4-LD-01" in output
    assert re.search(r"\d+ of 16 cases need the judge \(add --judge MODEL\)", output)
    assert "failure type" not in output                       # attributions: --verbose or the report


def test_verbose_adds_counts_criteria_and_attribution(tmp_path):
    res = runner.invoke(app, ["eval", "c4", "-m", "policy:stubborn", "-c", "C4-LD-01", "--store", str(tmp_path / "t.db"),
                              "--verbose"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "failure type" in res.output and "LD-01." in res.output and "rtry" in res.output


def test_piped_output_at_80_columns_keeps_every_case_id_whole(tmp_path):
    """`COLUMNS=80 tether eval c4 | cat`: every case id whole, at most 60 lines."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80", "TETHER_STORE": str(tmp_path / "t.db")}
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run([sys.executable, "-m", "tether.cli", "eval", "c4"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    ids = sorted(p.stem for p in C4_DIR.glob("C4-*.yaml"))
    assert len(ids) == 16 and all(cid in proc.stdout for cid in ids)
    assert "…" not in proc.stdout and len(lines) <= 60, proc.stdout
    assert max(len(line.rstrip()) for line in lines if not line.startswith("eval ")) <= 80


def test_out_exports_readable_utf8_runs(tmp_path):
    res = runner.invoke(app, ["eval", "c4", "-m", "policy:steady", "-c", "C4-PA-03", "--store", str(tmp_path / "t.db"),
                              "--out", str(tmp_path / "runs"), "--json", str(tmp_path / "r.json"), "-q"],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    trial = Results.load(tmp_path / "r.json").runs[0].cases[0].trials[0]
    text = (tmp_path / "runs" / f"{trial.run_id}.jsonl").read_text(encoding="utf-8")
    assert "\\u" not in text and "海岛" in text
    first = json.loads(text.splitlines()[0])
    assert (first["type"], first["kind"], first["run_id"]) == ("run_started", "eval", trial.run_id)


def test_a_new_case_is_one_yaml_file(tmp_path):
    src = (C4_DIR / "C4-PA-01.yaml").read_text(encoding="utf-8")
    (tmp_path / "my.yaml").write_text(src.replace("id: C4-PA-01", "id: MY-PA-01"), encoding="utf-8")
    res = runner.invoke(app, ["eval", str(tmp_path), "--model", "policy:quitter", "--store", str(tmp_path / "t.db"),
                              "--json", str(tmp_path / "r.json")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert verdicts(doc, "policy:quitter") == {"MY-PA-01": "fail"}


def test_fail_under_exits_non_zero_and_trials_report_pass_hat_k(tmp_path):
    args = ["eval", "c4", "--model", "policy:stubborn", "--case", "C4-LD-0[12]", "--trials", "2",
            "--store", str(tmp_path / "t.db"), "--json", str(tmp_path / "r.json")]
    res = runner.invoke(app, args + ["--fail-under", "0.5"], catch_exceptions=False)
    assert res.exit_code == 1
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    case = doc["runs"][0]["cases"][0]
    assert len(case["trials"]) == 2 and case["pass_hat_k"] == 0.0
    ok = runner.invoke(app, ["eval", "c4", "--model", "policy:steady", "--case", "C4-LD-01", "--fail-under", "1.0",
                             "--store", str(tmp_path / "t.db")], catch_exceptions=False)
    assert ok.exit_code == 0, ok.output


TINY_AGENT = '''
from tether.messages import ToolCallRequest


class Tiny:
    """Searches the web once for the user's message and says how it went."""

    name = "tiny"

    async def run(self, session, task):
        result = await session.tool(ToolCallRequest(id="c1", name="web_search", arguments={"query": task.message}))
        return "网页搜索" + ("成功" if result.ok else "失败") + "，工具之外的信息我没有编造。"


def make():
    return Tiny()
'''


def test_your_own_agent_runs_every_trial_as_a_stored_run(tmp_path):
    (tmp_path / "my_agent.py").write_text(TINY_AGENT, encoding="utf-8")
    ref = f"{tmp_path / 'my_agent.py'}:make"
    res = runner.invoke(app, ["eval", "c4", "--agent", ref, "-c", "C4-LD-01", "-c", "C4-DR-01", "--trials", "2",
                              "--store", str(tmp_path / "t.db"), "--json", str(tmp_path / "r.json"), "-q"],
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    results = Results.load(tmp_path / "r.json")
    [run] = results.runs
    assert run.model == ref and sorted(c.case_id for c in run.cases) == ["C4-DR-01", "C4-LD-01"]
    store = SQLiteStore(tmp_path / "t.db")
    for case in run.cases:
        assert len(case.trials) == 2 and case.verdict != "error"
        for trial in case.trials:
            t = load_run(store, trial.run_id)
            assert t.digest() == trial.digest and t.started.kind == "eval" and t.started.eval_id == results.eval_id
            assert t.started.model == "tiny" and [c.tool for c in t.tool_calls()] == ["web_search"]
            assert t.tool_results()[0].ok and t.final_reply.startswith("网页搜索成功")
            assert trial.counters.tool_calls == 1 and trial.status == "completed"
    assert run.case("C4-LD-01").auto_verdict in ("fail", "unclear")   # scored as behaviour, like any agent


def test_agent_refs_that_do_not_resolve_are_usage_errors(tmp_path):
    (tmp_path / "bad.py").write_text("make = 3\n", encoding="utf-8")
    for ref, words in ((f"{tmp_path / 'nope.py'}:make", "no file"), ("no_such_agent", "unknown agent"),
                       (f"{tmp_path / 'bad.py'}:make", "neither an agent")):
        res = runner.invoke(app, ["eval", "c4", "--agent", ref, "--store", str(tmp_path / "t.db")])
        assert res.exit_code == 2 and words in res.output, (ref, res.output)


def test_unjudged_headline_rates_show_the_automatic_rate_not_n_a(results):
    output, doc, _ = results
    steady = next(r for r in doc["runs"] if r["model"] == "policy:steady")
    assert steady["dimensions"]["DR"]["rate"] is None and steady["dimensions"]["DR"]["auto_rate"] == 1.0
    summary = output.split("failure modes")[0]
    assert "n/a" not in summary
    assert "unjudged" in summary and "auto 100%" in summary and "[" in summary     # Wilson intervals shown
