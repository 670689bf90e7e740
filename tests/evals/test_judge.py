"""The LLM judge: structured verdicts, samples and agreement, conflicts, the cache.

Every judge here is a FunctionModel or ScriptedModel double: no network.
"""

import json
import re

import pytest

from tether.evals import EvalConfig, load_suite, run_suite
from tether.evals.judge import (
    Judge,
    JudgeCache,
    find_conflicts,
    judge_messages,
    judge_trial,
    parse_judge_answer,
    render_run,
)
from tether.evals.rescore import rescore_results
from tether.evals.results import Results
from tether.evals.review import import_review, review_document, write_review
from tether.evals.scoring import CriterionResult, Verdict
from tether.events import ModelRequestEvent, RunFinished, Trajectory
from tether.store import SQLiteStore
from tether.store.export import load_run
from tether.messages import Decision
from tether.models import FunctionModel, ScriptedModel

C4 = {c.id: c for c in load_suite("c4")}
RUBRIC_IDS = {(c.id, r.id) for c in C4.values() for r in c.judge_criteria}


def criterion_of(request) -> str:
    return re.search(r"^## Criterion (\S+)", request.messages[1].content, re.M).group(1)


def answer(verdict: str, reason: str = "理由", steps=(1,)) -> Decision:
    return Decision.final(json.dumps({"verdict": verdict, "reason": reason, "steps": list(steps)}, ensure_ascii=False))


def counting_judge(verdict_of=lambda request: "pass", name="judge-double") -> FunctionModel:
    def decide(request):
        return answer(verdict_of(request), f"{criterion_of(request)} 满足要求")
    return FunctionModel(decide, name=name)


@pytest.fixture(scope="module")
def steady(tmp_path_factory):
    """The C4 suite against policy:steady, every trial a run in a store."""
    import asyncio

    out = tmp_path_factory.mktemp("steady")
    results = asyncio.run(run_suite(list(C4.values()), ["policy:steady"], EvalConfig(store=out / "t.db")))
    return results, out


def trajectory_of(results, case_id):
    trial = results.runs[0].case(case_id).trials[0]
    return load_run(SQLiteStore(results.store), trial.run_id)


def without_times(run) -> dict:
    dump = run.model_dump()
    for case in dump["cases"]:
        for trial in case["trials"]:
            for cr in trial["criteria"]:
                cr.pop("judged_at")
    return dump


# -- parsing ---------------------------------------------------------------------
@pytest.mark.parametrize("text, verdict", [
    ('{"verdict": "pass", "reason": "ok", "steps": [3, 7]}', "pass"),
    ('```json\n{"verdict": "FAIL", "reason": "编造了航班", "steps": ["#4"]}\n```', "fail"),
    ('Here is my verdict:\n{"Verdict": "unclear", "reason": "no reply"}\nThanks.', "unclear"),
    ('判断如下：{"verdict": "通过", "reason": "说明了原因"}', "pass"),
    ('{"note": 1} then {"verdict": "fail", "reason": "r"}', "fail"),
])
def test_answers_are_parsed_through_fences_and_prose(text, verdict):
    sample = parse_judge_answer(text)
    assert sample.verdict == verdict and sample.problem is None


def test_steps_are_event_numbers():
    assert parse_judge_answer('{"verdict": "pass", "steps": ["#3", 7, "#12, #13"]}').steps == [3, 7, 12, 13]


@pytest.mark.parametrize("text, problem", [
    ("", "empty answer"),
    ("I think it passes.", "no JSON object in the answer"),
    ('{"verdict": "pass", "reason": "unterminated', "no JSON object in the answer"),
    ('{"score": 5}', "no verdict key"),
    ('{"verdict": "maybe", "reason": "hm"}', "bad verdict value"),
    ('{"verdict": true}', "bad verdict value"),
])
def test_malformed_answers_are_unclear_with_the_problem(text, problem):
    sample = parse_judge_answer(text)
    assert sample.verdict == "unclear" and sample.problem == problem and sample.reason


# -- the prompt --------------------------------------------------------------------
def test_prompt_shows_criterion_tool_calls_results_and_reply(steady):
    results, _ = steady
    case = C4["C4-LD-02"]
    t = trajectory_of(results, "C4-LD-02")
    system, user = judge_messages(case, case.judge_criteria[0], t)
    assert system.role == "system" and '"verdict"' in system.content
    text = user.content
    assert "## Criterion LD-02.root_cause" in text and "未识别出数据不足的根本问题" in text
    assert "call weibo_search_posts" in text and "结果不含点赞数据" in text      # a result, Chinese as is
    assert "\\u" not in text
    assert t.final_reply.strip().splitlines()[0] in text
    first_call = t.tool_calls()[0]
    assert f"#{first_call.seq} call {first_call.tool}" in render_run(t)


def test_long_results_are_shortened_with_a_marker():
    from tether.events import RunFinished, ToolCallEvent, ToolResultEvent
    from tether.status import TerminalStatus

    t = Trajectory()
    t.append(ToolCallEvent(step=1, call_id="c1", tool="web_search", arguments={"query": "q"}))
    t.append(ToolResultEvent(step=1, call_id="c1", tool="web_search", ok=True, data={"text": "长" * 5000}))
    t.append(RunFinished(status=TerminalStatus.COMPLETED, reply="好的"))
    rendered = render_run(t)
    assert "chars)" in rendered and len(rendered) < 2000


# -- judging the C4 suite ---------------------------------------------------------------
async def test_every_rubric_criterion_gets_a_structured_verdict(steady, tmp_path):
    results, _ = steady
    judge = counting_judge()
    scored = await rescore_results(results, C4.values(), judge, 1, cache_dir=tmp_path / "cache")
    run = scored.runs[0]
    judged = {(c.case_id, cr.id): cr for c in run.cases for t in c.trials for cr in t.criteria if cr.kind == "judge"}
    assert set(judged) == RUBRIC_IDS and len(judge.requests) == len(RUBRIC_IDS)
    for (case_id, cid), cr in judged.items():
        assert cr.verdict == Verdict.PASS and cr.judged_by == "llm:judge-double", cid
        assert f"{cid} 满足要求" in cr.evidence and "#1" in cr.evidence and cr.value == 1.0
    assert run.judged.llm == len(RUBRIC_IDS) and run.judged.unjudged == 0 and run.judged.human == 0
    assert run.judge == "llm:judge-double" and run.judge_agreement == 1.0
    # steady passes every automatic check, so with a passing judge every case passes
    assert all(c.verdict == Verdict.PASS for c in run.cases)
    assert run.dimensions["PA"].rate == 0.0 and run.dimensions["PA"].unjudged == 0
    # the input is not modified
    assert results.runs[0].case("C4-PA-03").verdict == Verdict.UNJUDGED


async def test_judge_trial_api_returns_criterion_results(steady):
    results, _ = steady
    case = C4["C4-AR-02"]
    judged = await judge_trial(case, trajectory_of(results, case.id), counting_judge(), cache_dir=None)
    assert set(judged) == {r.id for r in case.judge_criteria}
    assert all(isinstance(r, CriterionResult) and r.check == "rubric" for r in judged.values())


async def test_without_a_judge_rubric_criteria_stay_unjudged(steady, tmp_path):
    results, _ = steady
    scored = await rescore_results(results, C4.values(), None, cache_dir=tmp_path / "cache")
    run = scored.runs[0]
    assert run.judged.llm == 0 and run.judged.unjudged == len(RUBRIC_IDS)
    assert run.case("C4-PA-03").verdict == Verdict.UNJUDGED


# -- samples and agreement ----------------------------------------------------------------
async def test_samples_that_disagree_are_reported_as_disagreement(steady, tmp_path):
    results, _ = steady
    flip = counting_judge(lambda request: "fail" if request.step == 1 else "pass")   # sample 1 of 3 fails
    scored = await rescore_results(results, [C4["C4-PA-03"]] + [c for c in C4.values() if c.id != "C4-PA-03"],
                                   flip, 3, cache_dir=tmp_path / "cache")
    run = scored.runs[0]
    trial = run.case("C4-PA-03").trials[0]
    cr = next(c for c in trial.criteria if c.id == "PA-03.completes")
    assert cr.verdict == Verdict.UNCLEAR and cr.value == pytest.approx(2 / 3, abs=1e-3)
    assert "disagree" in cr.evidence and "pass 2, fail 1 of 3" in cr.evidence
    assert cr.samples == ["pass", "fail", "pass"] and cr.agreement == pytest.approx(2 / 3, abs=1e-3)
    assert cr.judged_by == "llm:judge-double" and cr.judged_at
    assert run.judge_samples == 3 and run.judge_agreement == pytest.approx(2 / 3, abs=1e-3)
    assert len(flip.requests) == 3 * len(RUBRIC_IDS)


async def test_unanimous_samples_keep_their_verdict(steady):
    results, _ = steady
    case = C4["C4-LD-02"]
    judge = Judge(counting_judge(lambda r: "fail"), samples=3, cache_dir=None)
    judged = await judge_trial(case, trajectory_of(results, case.id), judge)
    cr = judged["LD-02.root_cause"]
    assert cr.verdict == Verdict.FAIL and cr.value == 1.0 and cr.evidence.startswith("3/3 samples agree")
    assert judge.stats.requests == 3


# -- conflicts -----------------------------------------------------------------------
async def test_a_judge_pass_against_a_failed_counter_is_flagged(tmp_path):
    case = C4["C4-LD-02"]
    results = await run_suite([case], ["policy:stubborn"], EvalConfig(store=tmp_path / "t.db"))
    assert results.runs[0].case(case.id).auto_verdict == Verdict.FAIL          # the loop counter failed
    scored = await rescore_results(results, [case], counting_judge(), cache_dir=tmp_path / "cache")
    run = scored.runs[0]
    trial = run.case(case.id).trials[0]
    assert trial.verdict == Verdict.FAIL                                      # not silently merged into a pass
    [conflict] = trial.conflicts
    assert (conflict.criterion, conflict.check, conflict.same_failure_type) == ("LD-02.root_cause", "LD-02.loops", True)
    assert conflict.judged_by == "llm:judge-double" and "LD-02.loops failed" in conflict.message
    assert run.conflicts == 1


def test_find_conflicts_only_for_judge_passes_against_failed_checks():
    case = C4["C4-LD-03"]
    auto_fail = CriterionResult(id="LD-03.searches", kind="auto", check="call_count", verdict=Verdict.FAIL, evidence="calls: 9")
    judge_pass = CriterionResult(id="LD-03.conclusion", kind="judge", check="rubric", verdict=Verdict.PASS, judged_by="human")
    judge_fail = judge_pass.model_copy(update={"verdict": Verdict.FAIL})
    assert [c.check for c in find_conflicts(case, [auto_fail, judge_pass])] == ["LD-03.searches"]
    assert find_conflicts(case, [auto_fail, judge_fail]) == []
    assert find_conflicts(case, [auto_fail.model_copy(update={"verdict": Verdict.PASS}), judge_pass]) == []


# -- the cache ----------------------------------------------------------------------
async def test_the_cache_makes_a_second_scoring_free(steady, tmp_path):
    results, _ = steady
    first = counting_judge()
    one = await rescore_results(results, C4.values(), first, 2, cache_dir=tmp_path / "cache")
    assert len(first.requests) == 2 * len(RUBRIC_IDS)
    second = counting_judge()
    two = await rescore_results(results, C4.values(), second, 2, cache_dir=tmp_path / "cache")
    assert second.requests == []
    assert without_times(two.runs[0]) == without_times(one.runs[0])
    # a third sample per criterion is the only new request
    third = counting_judge()
    await rescore_results(results, C4.values(), third, 3, cache_dir=tmp_path / "cache")
    assert len(third.requests) == len(RUBRIC_IDS) and {r.step for r in third.requests} == {2}


async def test_cache_file_is_readable_json_lines_keyed_by_request(steady, tmp_path):
    results, _ = steady
    await rescore_results(results, [C4["C4-PA-03"]] + [c for c in C4.values() if c.id != "C4-PA-03"],
                          counting_judge(), cache_dir=tmp_path / "cache")
    text = (tmp_path / "cache" / "answers.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == len(RUBRIC_IDS) and len({r["key"] for r in rows}) == len(rows)
    assert all(len(r["key"]) == 64 for r in rows)
    assert "满足要求" in text and "\\u" not in text                              # UTF-8 as is
    assert {"model", "sample", "case_id", "criterion", "answer"} <= set(rows[0])
    # another judge model never shares answers
    other = counting_judge(name="another-judge")
    await rescore_results(results, C4.values(), other, cache_dir=tmp_path / "cache")
    assert len(other.requests) == len(RUBRIC_IDS)


def test_cache_skips_broken_lines(tmp_path):
    (tmp_path / "answers.jsonl").write_text('not json\n{"key": "k", "answer": "a"}\n', encoding="utf-8")
    cache = JudgeCache(tmp_path)
    assert cache.get("k") == "a" and cache.skipped == 1


# -- robustness ------------------------------------------------------------------------
async def test_malformed_judge_json_is_unclear_never_a_crash(steady, tmp_path):
    results, _ = steady
    garbage = FunctionModel(lambda request: Decision.final('{"verdict": "pass", "reason": '), name="garbage")
    scored = await rescore_results(results, C4.values(), garbage, cache_dir=tmp_path / "cache")
    run = scored.runs[0]
    judged = [cr for c in run.cases for t in c.trials for cr in t.criteria if cr.kind == "judge"]
    assert judged and all(cr.verdict == Verdict.UNCLEAR for cr in judged)
    assert all("not JSON" in cr.evidence for cr in judged)
    assert run.case("C4-PA-03").verdict == Verdict.UNCLEAR


async def test_a_judge_that_raises_gives_no_verdict_and_is_not_cached(steady, tmp_path):
    results, _ = steady
    case = C4["C4-DR-01"]

    def boom(request):
        raise RuntimeError("provider timeout")

    judge = Judge(FunctionModel(boom, name="flaky"), cache_dir=tmp_path / "cache")
    judged = await judge_trial(case, trajectory_of(results, case.id), judge)
    cr = judged["DR-01.explains"]
    assert cr.verdict == Verdict.UNJUDGED and "provider timeout" in cr.evidence and cr.judged_by is None
    assert judge.stats.failures == 1 and not (tmp_path / "cache" / "answers.jsonl").exists()


async def test_a_failing_judge_makes_its_trials_errors_not_verdicts(steady, tmp_path):
    results, _ = steady

    def down(request):
        from tether.models._http import ProviderFailure

        raise ProviderFailure("judge-x", 0, "connection failed: refused", reason="connection")

    scored = await rescore_results(results, C4.values(), FunctionModel(down, name="judge-x"), cache_dir=None)
    run = scored.runs[0]
    with_rubric = {c.id for c in C4.values() if c.judge_criteria}
    errored = {e.case_id for e in run.error_trials}
    assert errored == with_rubric and run.errors == len(with_rubric)
    for c in run.cases:
        if c.case_id in with_rubric:
            assert c.verdict == Verdict.ERROR and c.pass_at_1 is None
            trial = c.trials[0]
            assert trial.error_kind == "infrastructure" and "judge llm:judge-x" in trial.error
            assert trial.attribution is None
    assert all(m.rate is None or m.cases for m in run.dimensions.values())
    # a later scoring with a judge that answers gives the verdicts back
    again = await rescore_results(scored, C4.values(), counting_judge(), cache_dir=None)
    assert again.runs[0].errors == 0 and all(c.verdict == Verdict.PASS for c in again.runs[0].cases)


async def test_judge_requests_are_events_of_the_judged_run(tmp_path):
    results = await run_suite([C4["C4-PA-03"]], ["policy:steady"], EvalConfig(store=tmp_path / "s.db"))
    trial = results.runs[0].cases[0].trials[0]
    before = trajectory_of(results, "C4-PA-03")
    judge = counting_judge()
    await rescore_results(results, [C4["C4-PA-03"]], judge, 2, cache_dir=None)
    after = trajectory_of(results, "C4-PA-03")
    added = after.events[len(before):]
    assert len(added) == 2 * 2 * len(C4["C4-PA-03"].judge_criteria)          # request + decision per sample
    finished = next(i for i, e in enumerate(after.events) if isinstance(e, RunFinished))
    assert finished == len(before) - 1 and all(e.role == "judge" for e in added)
    assert [e.seq for e in after.events] == list(range(len(after)))
    assert after.digest() == before.digest() == trial.digest                # the run's own record is unchanged
    requests = after.requests(role="judge")
    assert len(requests) == len(judge.requests)
    assert requests[0][1][1].content == judge.requests[0].messages[1].content   # what the judge was sent
    assert requests[1][0].keep >= 1                                         # a delta against the previous one
    assert after.usage("agent") == before.usage("agent")                    # the judge's cost is apart
    assert {e.params["criterion"] for e in added if isinstance(e, ModelRequestEvent)} == \
        {r.id for r in C4["C4-PA-03"].judge_criteria}


async def test_a_tool_call_instead_of_an_answer_is_unclear(steady):
    results, _ = steady
    case = C4["C4-DR-01"]
    scripted = ScriptedModel([Decision.call("web_search", {"query": "x"})], name="confused")
    judged = await judge_trial(case, trajectory_of(results, case.id), scripted, cache_dir=None)
    assert judged["DR-01.explains"].verdict == Verdict.UNCLEAR
    scripted.assert_exhausted()


# -- humans outrank the LLM ---------------------------------------------------------------
async def test_human_verdicts_survive_a_later_llm_scoring(steady, tmp_path):
    results, out = steady
    doc = review_document(results, C4.values())
    for trial in doc["trials"]:
        for cr in trial["criteria"]:
            if cr["id"] == "PA-03.completes":
                cr["verdict"], cr["reason"] = "fail", "没有给出行程"
    path = write_review(doc, tmp_path / "review.yaml")
    reviewed, count = import_review(path, results, C4.values())
    assert count == 1
    rescored = await rescore_results(reviewed, C4.values(), counting_judge(), cache_dir=tmp_path / "cache")
    trial = rescored.runs[0].case("C4-PA-03").trials[0]
    by_id = {cr.id: cr for cr in trial.criteria}
    assert by_id["PA-03.completes"].judged_by == "human" and by_id["PA-03.completes"].verdict == Verdict.FAIL
    assert by_id["PA-03.constraints"].judged_by == "llm:judge-double"
    assert rescored.runs[0].judged.human == 1
    assert Results.parse(rescored.model_dump_json()).runs[0].judged.human == 1
    # provenance: the human replaced nothing decided (it was unjudged); the LLM kept its own
    assert by_id["PA-03.completes"].history == [] and by_id["PA-03.completes"].judged_at
