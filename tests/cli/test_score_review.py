"""`tether score` and `tether review`, run as a user would (typer's runner, real files)."""

import json
import re

import pytest
import yaml
from typer.testing import CliRunner

from tether.cli import app
from tether.messages import Decision
from tether.models import FunctionModel, register_model_prefix

runner = CliRunner()
REQUESTS: list = []


def _judge_factory(rest: str):
    """`testjudge:pass` / `testjudge:fail` / `testjudge:garbage`: offline judge doubles."""

    def decide(request):
        REQUESTS.append(request)
        if rest == "garbage":
            return Decision.final("I would say it mostly passes.")
        crit = re.search(r"^## Criterion (\S+)", request.messages[1].content, re.M).group(1)
        return Decision.final(json.dumps({"verdict": rest, "reason": f"{crit}：判定为 {rest}", "steps": [1]},
                                         ensure_ascii=False))

    return FunctionModel(decide, name=f"testjudge-{rest}")


register_model_prefix("testjudge", _judge_factory)


def run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    res = run("eval", "c4", "--model", "policy:steady", "--store", out / "t.db", "--json", out / "results.json", "-q")
    assert res.exit_code == 0, res.output
    return out


def test_help_carries_examples():
    for args in (["score", "--help"], ["review", "--help"], ["review", "export", "--help"],
                 ["review", "import", "--help"]):
        out = run(*args)
        assert out.exit_code == 0 and "Example" in out.output, args


def test_score_judges_and_the_second_time_is_free(evaluated, tmp_path):
    cache = tmp_path / "cache"
    REQUESTS.clear()
    first = run("score", evaluated / "results.json", "--judge", "testjudge:pass", "--cache-dir", cache,
                "--json", tmp_path / "judged.json")
    assert first.exit_code == 0, first.output
    assert "16 llm" in first.output and "judge requests: 16" in first.output
    doc = json.loads((tmp_path / "judged.json").read_text(encoding="utf-8"))
    run0 = doc["runs"][0]
    assert run0["judged"] == {"auto": 36, "llm": 16, "human": 0, "unjudged": 0}
    assert run0["judge"] == "llm:testjudge-pass" and run0["judge_agreement"] == 1.0
    assert all(c["verdict"] == "pass" for c in run0["cases"])
    assert "判定为 pass" in (tmp_path / "judged.json").read_text(encoding="utf-8")
    assert len(REQUESTS) == 16

    REQUESTS.clear()
    second = run("score", evaluated / "results.json", "--judge", "testjudge:pass", "--cache-dir", cache, "-q")
    assert second.exit_code == 0 and "judge requests: 0 · cache hits: 16" in second.output
    assert REQUESTS == [] and "not saved" in second.output


def test_score_samples_and_malformed_answers(evaluated, tmp_path):
    out = run("score", evaluated / "results.json", "--judge", "testjudge:garbage", "--judge-samples", "2",
              "--no-cache", "--json", tmp_path / "j.json", "-q")
    assert out.exit_code == 0, out.output
    doc = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    judged = [cr for c in doc["runs"][0]["cases"] for t in c["trials"] for cr in t["criteria"] if cr["kind"] == "judge"]
    assert all(cr["verdict"] == "unclear" and "not JSON" in cr["evidence"] for cr in judged)
    assert doc["runs"][0]["judge_samples"] == 2


def test_score_flags_conflicts_with_the_counters(tmp_path):
    runs = run("eval", "c4", "--model", "policy:stubborn", "--case", "C4-LD-02", "--store", tmp_path / "t.db",
               "--json", tmp_path / "r.json", "-q")
    assert runs.exit_code == 0
    out = run("score", tmp_path / "r.json", "--judge", "testjudge:pass", "--cache-dir", tmp_path / "cache",
              "--json", tmp_path / "j.json", "-q")
    assert out.exit_code == 0 and "1 conflict(s)" in out.output
    assert "conflict C4-LD-02 trial 0: LD-02.root_cause judged pass" in out.output
    doc = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    [conflict] = doc["runs"][0]["cases"][0]["trials"][0]["conflicts"]
    assert conflict["check"] == "LD-02.loops" and conflict["same_failure_type"] is True


def test_score_usage_errors(evaluated, tmp_path):
    out = run("score", evaluated / "results.json", "--judge", "nope:x")
    assert out.exit_code == 2 and "unknown model spec" in out.output
    missing = run("score", tmp_path / "none.json")
    assert missing.exit_code == 2 and "results file not found" in missing.output
    (tmp_path / "bad.json").write_text('{"format": "tether.results", "version": 2}', encoding="utf-8")
    bad = run("score", tmp_path / "bad.json")
    assert bad.exit_code == 2 and "not a tether results document" in bad.output
    nostore = run("score", evaluated / "results.json", "--store", tmp_path / "elsewhere.db", "--no-cache")
    assert nostore.exit_code == 2 and "store not found" in nostore.output


def test_old_or_unknown_versions_are_refused_naming_the_file(evaluated, tmp_path):
    doc = json.loads((evaluated / "results.json").read_text(encoding="utf-8"))
    for version, words in ((1, "from an older tether"), (9, "unknown to this tether")):
        path = tmp_path / f"v{version}.json"
        path.write_text(json.dumps({**doc, "version": version}), encoding="utf-8")
        for args in (["score", path], ["diff", path, path], ["review", "export", path], ["baseline", "accept", path,
                                                                                           "-r", "x", "--dir", tmp_path]):
            out = run(*args)
            assert out.exit_code == 2 and str(path) in out.output and words in out.output, (args, out.output)
            assert "Traceback" not in out.output


def test_score_reproduces_the_verdicts_after_another_eval(tmp_path):
    """The old bug: a second eval overwrote the first one's traces and score rescored `a` from `b`'s."""
    store = tmp_path / "t.db"
    some = ["-c", "C4-LD-0[12]", "-c", "C4-AR-01"]
    assert run("eval", "c4", "-m", "policy:stubborn", *some, "--store", store, "--json", tmp_path / "a.json",
               "-q").exit_code == 0
    assert run("eval", "c4", "-m", "policy:steady", *some, "--store", store, "--json", tmp_path / "b.json",
               "-q").exit_code == 0
    out = run("score", tmp_path / "a.json", "--json", tmp_path / "a2.json", "-q")
    assert out.exit_code == 0, out.output
    a, a2 = (json.loads((tmp_path / n).read_text(encoding="utf-8")) for n in ("a.json", "a2.json"))
    for before, after in zip(a["runs"][0]["cases"], a2["runs"][0]["cases"]):
        assert (before["verdict"], before["auto_verdict"]) == (after["verdict"], after["auto_verdict"])
        assert before["trials"] == after["trials"]
    assert a["runs"][0]["dimensions"] == a2["runs"][0]["dimensions"]


def test_a_run_missing_from_the_store_is_named_with_the_fix(evaluated, tmp_path):
    other = tmp_path / "other.db"
    assert run("eval", "c4", "-m", "policy:steady", "-c", "C4-LD-01", "--store", other, "-q").exit_code == 0
    out = run("score", evaluated / "results.json", "--store", other, "--no-cache")
    assert out.exit_code == 2 and "is not in the store" in out.output and "tether runs import" in out.output
    assert "Traceback" not in out.output


def test_review_export_then_import_in_place(evaluated, tmp_path):
    results = tmp_path / "results.json"
    results.write_bytes((evaluated / "results.json").read_bytes())
    review = tmp_path / "review.yaml"
    exp = run("review", "export", results, "--out", review)
    assert exp.exit_code == 0 and "16 criteria to decide" in exp.output
    text = review.read_text(encoding="utf-8")
    assert "\\u" not in text and "海岛" in text
    doc = yaml.safe_load(text)
    for trial in doc["trials"]:
        for cr in trial["criteria"]:
            if cr["id"].startswith("PA-03."):
                cr["verdict"], cr["reason"] = "pass", "推荐了亚速尔群岛，并给出 7 天行程"
    review.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")

    imp = run("review", "import", review, "--results", results, "--reviewer", "韩梅梅")
    assert imp.exit_code == 0, imp.output
    assert "2 human" in imp.output and "recorded 2 human verdict(s)" in imp.output
    assert (tmp_path / "results.json.bak").read_bytes() == (evaluated / "results.json").read_bytes()
    updated = json.loads(results.read_text(encoding="utf-8"))
    run0 = updated["runs"][0]
    pa03 = next(c for c in run0["cases"] if c["case_id"] == "C4-PA-03")
    assert pa03["verdict"] == "pass" and {cr["judged_by"] for cr in pa03["trials"][0]["criteria"]} == {"human"}
    assert {cr["reviewer"] for cr in pa03["trials"][0]["criteria"]} == {"韩梅梅"}
    assert run0["judged"]["human"] == 2 and run0["dimensions"]["PA"]["unjudged"] == 3

    # what is left to review: the other fourteen
    again = run("review", "export", results, "--out", tmp_path / "again.yaml")
    assert "14 criteria to decide" in again.output


def test_review_import_to_another_file_and_bad_values(evaluated, tmp_path):
    results = evaluated / "results.json"
    review = tmp_path / "review.yaml"
    assert run("review", "export", results, "--out", review).exit_code == 0
    text = review.read_text(encoding="utf-8")
    filled = text.replace("    verdict:\n", "    verdict: pass\n", 1)
    review.write_text(filled, encoding="utf-8")
    ok = run("review", "import", review, "--results", results, "--json", tmp_path / "out.json")
    assert ok.exit_code == 0 and "recorded 1 human verdict(s)" in ok.output
    assert not (evaluated / "results.json.bak").exists()

    bad_line = filled.splitlines().index("    verdict: pass") + 1
    review.write_text(filled.replace("    verdict: pass\n", "    verdict: yes\n"), encoding="utf-8")
    bad = run("review", "import", review, "--results", results, "--json", tmp_path / "out2.json")
    assert bad.exit_code == 2
    assert f"{review}:{bad_line}:" in bad.output and "[trials.0.criteria.0.verdict]" in bad.output
    assert "verdict must be pass, fail or unclear (got True)" in bad.output
    assert not (tmp_path / "out2.json").exists()



def test_writing_results_or_a_review_to_a_full_disk_names_the_file(evaluated):
    """Through the console script (its last-resort handler is what a user meets)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    results = evaluated / "results.json"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "COLUMNS": "200"}
    env.pop("TETHER_DEBUG", None)
    for argv, what in ((["score", results, "--json", "/dev/full", "-q"], "results file /dev/full"),
                       (["review", "export", results, "-o", "/dev/full"], "review file /dev/full")):
        proc = subprocess.run([sys.executable, "-m", "tether.cli", *map(str, argv)], env=env, capture_output=True,
                              timeout=120, stdin=subprocess.DEVNULL)
        out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        assert proc.returncode == 74, out
        assert f"{what}: the disk is full" in out, out
