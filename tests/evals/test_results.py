"""Results v2: errors are no verdicts, the one loader checks format and version."""

import json

import pytest

from tether.errors import CaseFileError
from tether.evals import load_suite
from tether.evals.metrics import case_result, dimension_metrics, failure_modes
from tether.evals.results import RESULTS_VERSION, Attribution, Results, TrialResult
from tether.evals.scoring import Verdict

CASE = {c.id: c for c in load_suite("c4")}["C4-LD-01"]


def trial(k, verdict, **kw):
    return TrialResult(trial=k, verdict=verdict, auto_verdict=verdict, status="error" if verdict == "error" else
                       "completed", **kw)


def test_errored_trials_are_left_out_of_the_case_and_its_rates():
    failed = trial(1, Verdict.FAIL, attribution=Attribution(case_id=CASE.id, trial=1, failure_type="loop",
                                                            manifestation="m", root_cause="r", fix_suggestion="f"))
    mixed = case_result(CASE, [trial(0, Verdict.ERROR, error_kind="infrastructure", error="refused"), failed,
                               trial(2, Verdict.PASS)])
    assert mixed.verdict == Verdict.FAIL and mixed.pass_at_1 == 0.5 and mixed.pass_hat_k == 0.0 and mixed.errors == 1
    modes = failure_modes([mixed])
    assert modes["loop"].count == 1 and modes["loop"].rate == 0.5             # of the 2 scored trials

    dead = case_result(CASE, [trial(0, Verdict.ERROR, error_kind="infrastructure"),
                              trial(1, Verdict.ERROR, error_kind="harness")])
    assert dead.verdict == dead.auto_verdict == Verdict.ERROR and dead.pass_at_1 is None and dead.pass_hat_k is None
    dims = dimension_metrics([(CASE, dead)])
    ld = dims["LD"]
    assert (ld.rate, ld.auto_rate, ld.cases, ld.errors) == (None, None, 0, 2)
    assert failure_modes([dead]) == {}


def test_the_loader_refuses_other_formats_and_versions(tmp_path):
    good = Results(suite="c4", runs=[])
    assert good.version == RESULTS_VERSION == 2
    assert Results.load(good.save(tmp_path / "ok.json")).suite == "c4"
    cases = {"v1.json": ({**good.model_dump(), "version": 1}, "older tether"),
             "v3.json": ({**good.model_dump(), "version": 3}, "unknown to this tether"),
             "other.json": ({"format": "something", "version": 2}, "not a tether results document"),
             "list.json": ([1, 2], "not a tether results document")}
    for name, (doc, words) in cases.items():
        (tmp_path / name).write_text(json.dumps(doc), encoding="utf-8")
        with pytest.raises(CaseFileError) as exc:
            Results.load(tmp_path / name)
        assert words in str(exc.value) and str(tmp_path / name) in str(exc.value)
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(CaseFileError, match="not JSON"):
        Results.load(tmp_path / "broken.json")
