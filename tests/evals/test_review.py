"""Human review: export the undecided criteria, import verdicts, metrics follow."""

import asyncio

import pytest
import yaml

from tether.errors import CaseFileError
from tether.evals import EvalConfig, load_suite, run_suite
from tether.evals.results import Results
from tether.evals.review import export_review, import_review, read_review, review_document, write_review
from tether.evals.scoring import Verdict

C4 = {c.id: c for c in load_suite("c4")}


@pytest.fixture(scope="module")
def steady(tmp_path_factory):
    out = tmp_path_factory.mktemp("steady")
    results = asyncio.run(run_suite(list(C4.values()), ["policy:steady"], EvalConfig(store=out / "t.db")))
    path = results.save(out / "results.json")
    return results, path


def fill(path, verdicts: dict[str, tuple[str, str]]):
    """Fill verdicts into a review file by criterion id, keeping the rest of the text."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    for trial in doc["trials"]:
        for cr in trial["criteria"]:
            if cr["id"] in verdicts:
                cr["verdict"], cr["reason"] = verdicts[cr["id"]]
    write_review(doc, path)


def test_export_lists_unjudged_criteria_with_what_a_reviewer_needs(steady, tmp_path):
    results, rpath = steady
    path, count = export_review(results, C4.values(), tmp_path / "review.yaml", results_path=rpath)
    text = path.read_text(encoding="utf-8")
    assert "\\u" not in text and "不要东南亚" in text                            # Chinese as is
    doc = yaml.safe_load(text)
    assert doc["format"] == "tether.review" and doc["version"] == 1
    rubric_count = sum(len(c.judge_criteria) for c in C4.values())
    assert count == rubric_count == sum(len(t["criteria"]) for t in doc["trials"])
    pa03 = next(t for t in doc["trials"] if t["case_id"] == "C4-PA-03")
    assert (pa03["model"], pa03["guards"], pa03["trial"]) == ("policy:steady", "off", 0)
    assert pa03["run"]["user_input"].startswith("我想去一个人少景美的海岛度假")
    assert any(" call travel_search_destinations " in s and "-> ok:" in s for s in pa03["run"]["steps"])
    assert pa03["run"]["final_reply"]
    crit = {c["id"]: c for c in pa03["criteria"]}
    assert set(crit) == {"PA-03.completes", "PA-03.constraints"}
    entry = crit["PA-03.completes"]
    assert entry["current"] == "unjudged" and entry["rubric"] and entry["pass_when"] and entry["fail_when"]
    assert entry["seed_text"].startswith("Pass：")
    assert entry["verdict"] is None and entry["reason"] is None
    assert "\n    verdict:\n    reason:\n" in text                                 # empty, ready to fill
    assert "tether review import review.yaml" in text


def test_decided_criteria_are_not_exported(steady):
    results, _ = steady
    doc = review_document(results, C4.values())
    exported = {cr["id"] for t in doc["trials"] for cr in t["criteria"]}
    assert "LD-01.retries" not in exported and "PA-03.completes" in exported
    assert all(cr["kind"] == "judge" for t in doc["trials"] for cr in t["criteria"])


def test_import_changes_the_metrics_and_marks_them_human(steady, tmp_path):
    results, rpath = steady
    before = results.runs[0]
    assert before.case("C4-PA-03").verdict == Verdict.UNJUDGED and before.dimensions["PA"].unjudged == 4
    path, _ = export_review(results, C4.values(), tmp_path / "review.yaml", results_path=rpath)
    fill(path, {"PA-03.completes": ("pass", "找到了亚速尔群岛并给出 7 天行程"),
                "PA-03.constraints": ("PASS", "葡萄牙，不在东南亚，预算内")})
    updated, count = import_review(path, results, C4.values(), reviewer="李雷")
    assert count == 2 and isinstance(updated, Results)
    run = updated.runs[0]
    case = run.case("C4-PA-03")
    assert case.verdict == Verdict.PASS and case.pass_at_1 == 1.0
    crit = {cr.id: cr for cr in case.trials[0].criteria}
    assert crit["PA-03.completes"].judged_by == "human" and crit["PA-03.completes"].verdict == Verdict.PASS
    assert crit["PA-03.completes"].evidence == "human: 找到了亚速尔群岛并给出 7 天行程"
    assert crit["PA-03.completes"].reviewer == "李雷" and crit["PA-03.completes"].judged_at
    pa = run.dimensions["PA"]
    assert (pa.passed, pa.unjudged) == (before.dimensions["PA"].passed + 1, 3)
    assert pa.rate == 0.0                                                        # 0 abandoned of 2 decided
    assert run.judged.human == 2
    # the rest is untouched
    assert run.case("C4-LD-01").verdict == Verdict.PASS and run.case("C4-AR-01").verdict == Verdict.UNJUDGED


def test_a_human_fail_becomes_the_failure_attribution(steady, tmp_path):
    results, rpath = steady
    path, _ = export_review(results, C4.values(), tmp_path / "review.yaml", results_path=rpath)
    fill(path, {"PA-03.completes": ("fail", "说这个要求比较难满足就放弃了")})
    updated, _ = import_review(path, results, C4.values())
    run = updated.runs[0]
    trial = run.case("C4-PA-03").trials[0]
    assert trial.verdict == Verdict.FAIL and trial.attribution.failure_type == "abandonment"
    assert run.dimensions["PA"].rate == 0.5 and run.failure_modes["abandonment"].cases == ["C4-PA-03"]


def test_empty_verdicts_are_skipped(steady, tmp_path):
    results, rpath = steady
    path, _ = export_review(results, C4.values(), tmp_path / "review.yaml", results_path=rpath)
    updated, count = import_review(path, results, C4.values())
    assert count == 0 and updated.runs[0].judged.human == 0


def test_bad_verdicts_are_errors_with_file_and_line(steady, tmp_path):
    results, rpath = steady
    path, _ = export_review(results, C4.values(), tmp_path / "review.yaml", results_path=rpath)
    fill(path, {"PA-03.completes": ("maybe", ""), "AR-01.explains": ("通过了", "")})
    lines = path.read_text(encoding="utf-8").splitlines()
    with pytest.raises(CaseFileError) as exc:
        read_review(path)
    problems = {loc.line: (loc.field, msg) for loc, msg in exc.value.problems}
    assert len(problems) == 2
    for line, (field, msg) in problems.items():
        assert lines[line - 1].strip().startswith("verdict:") and field.endswith(".verdict")
        assert "verdict must be pass, fail or unclear" in msg
    assert "got 'maybe'" in str(exc.value) and str(path) in str(exc.value)


def test_unknown_criterion_or_trial_is_an_error_with_line(steady, tmp_path):
    results, rpath = steady
    path, _ = export_review(results, C4.values(), tmp_path / "review.yaml", results_path=rpath)
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["trials"][0]["criteria"][0].update(id="NOPE.1", verdict="pass")
    doc["trials"][1]["trial"] = 7
    doc["trials"][1]["criteria"][0]["verdict"] = "fail"
    write_review(doc, path)
    with pytest.raises(CaseFileError) as exc:
        import_review(path, results, C4.values())
    text = str(exc.value)
    assert "has no criterion 'NOPE.1'" in text and "no trial 7 of" in text
    assert all(loc.line for loc, _ in exc.value.problems)


def test_not_a_review_file(tmp_path):
    bad = tmp_path / "x.yaml"
    bad.write_text("a: [1, 2\n", encoding="utf-8")
    with pytest.raises(CaseFileError, match="broken YAML"):
        read_review(bad)
    bad.write_text("format: other\n", encoding="utf-8")
    with pytest.raises(CaseFileError, match="not a tether review file"):
        read_review(bad)


def test_unquoted_off_guards_still_match(steady, tmp_path):
    results, rpath = steady
    path, _ = export_review(results, C4.values(), tmp_path / "review.yaml", results_path=rpath)
    text = path.read_text(encoding="utf-8").replace("guards: 'off'", "guards: off")
    path.write_text(text, encoding="utf-8")
    fill(path, {"PA-03.completes": ("pass", "ok")})
    _, count = import_review(path, results, C4.values())
    assert count == 1


def test_a_human_decision_on_an_unclear_count_keeps_the_counters_view(steady, tmp_path):
    results, _ = steady
    doc = results.model_copy(deep=True)
    trial = doc.runs[0].case("C4-LD-01").trials[0]
    trial.criteria[0] = trial.criteria[0].model_copy(update={"verdict": Verdict.UNCLEAR})
    trial.verdict = trial.auto_verdict = Verdict.UNCLEAR
    exported = review_document(doc, C4.values())
    ld01 = next(t for t in exported["trials"] if t["case_id"] == "C4-LD-01")
    assert [c["id"] for c in ld01["criteria"]] == [trial.criteria[0].id] and ld01["criteria"][0]["kind"] == "auto"
    ld01["criteria"][0].update(verdict="pass", reason="第 4 次调用换了日期格式，不算重复")
    path = write_review(exported, tmp_path / "review.yaml")
    updated, _ = import_review(path, doc, C4.values())
    tr = updated.runs[0].case("C4-LD-01").trials[0]
    assert tr.verdict == Verdict.PASS and tr.auto_verdict == Verdict.UNCLEAR
    assert tr.criteria[0].judged_by == "human" and tr.criteria[0].kind == "auto"
    assert updated.runs[0].judged.human == 1
    [edit] = tr.criteria[0].history                       # what the person replaced, and who had decided it
    assert (edit.previous, edit.previous_by, edit.by) == (Verdict.UNCLEAR, "auto", "human:unknown")


def test_every_change_of_a_decided_verdict_is_kept(steady, tmp_path):
    results, _ = steady
    first = review_document(results, C4.values())
    for trial in first["trials"]:
        for cr in trial["criteria"]:
            if cr["id"] == "PA-03.completes":
                cr.update(verdict="pass", reason="给出了行程")
    once, _ = import_review(write_review(first, tmp_path / "one.yaml"), results, C4.values(), reviewer="ann")
    second = review_document(once, C4.values(), include=[Verdict.PASS])
    for trial in second["trials"]:
        for cr in trial["criteria"]:
            if cr["id"] == "PA-03.completes":
                cr.update(verdict="fail", reason="行程超出预算")
    twice, _ = import_review(write_review(second, tmp_path / "two.yaml"), once, C4.values(), reviewer="bob")
    cr = next(c for c in twice.runs[0].case("C4-PA-03").trials[0].criteria if c.id == "PA-03.completes")
    assert (cr.verdict, cr.reviewer) == (Verdict.FAIL, "bob")
    [edit] = cr.history
    assert (edit.previous, edit.previous_by, edit.by) == (Verdict.PASS, "human:ann", "human:bob")
    assert edit.previous_evidence == "human: 给出了行程" and edit.at
    # and it survives a save and the one loader
    path = twice.save(tmp_path / "r.json")
    loaded = Results.load(path).runs[0].case("C4-PA-03").trials[0].criteria
    assert next(c for c in loaded if c.id == "PA-03.completes").history == cr.history


def test_the_review_excerpt_shows_a_repeated_step_once_with_its_count():
    from tether.evals.review import collapse_repeats

    lines = ["#1 user: 查机票", *(f"#{n} call search_flights {{}} -> ok: []" for n in (4, 8, 12)),
             "#16 call web_search {} -> ok: []", "(truncated)"]
    assert collapse_repeats(lines) == ["#1 user: 查机票", "#4..#12 (x3) call search_flights {} -> ok: []",
                                       "#16 call web_search {} -> ok: []", "(truncated)"]
