"""Each criterion kind over hand-built trajectories."""

import pytest

from tether.evals.case import Case
from tether.evals.scoring import Verdict, combine, score_trajectory, strategy_kinds
from tether.testing import TrajectoryBuilder

ERR = "Error: Invalid date parameter format."
EMPTY = {"total": 0, "products": []}


def case(*criteria, **extra):
    return Case.model_validate({"id": "T-1", "title": "t", "dimension": "LD", "input": {"message": "m"},
                                "criteria": list(criteria), **extra})


def verdicts(c, t):
    return {r.id: r.verdict for r in score_trajectory(c, t).criteria}


COUNT = {"id": "n", "check": "call_count", "tools": ["s"], "pass": {"min": 3, "max": 4}, "fail": {"min": 7}}


@pytest.mark.parametrize("calls,expected", [(1, "unclear"), (3, "pass"), (4, "pass"), (5, "unclear"),
                                             (6, "unclear"), (7, "fail"), (12, "fail")])
def test_call_count_three_valued(calls, expected):
    t = TrajectoryBuilder().user("m").repeat(calls, "s", {"d": "x"}, error=ERR).final("停")
    assert verdicts(case(COUNT), t)["n"] == expected


def test_call_count_max_per_tool_and_after_failure():
    per = {"id": "loops", "check": "call_count", "tools": ["a", "b"], "per": "max_per_tool",
           "pass": {"min": 2, "max": 3}, "fail": {"min": 5}}
    after = {"id": "after", "check": "call_count", "tools": ["a", "b"], "after_failure": True,
             "pass": {"max": 2}, "fail": {"min": 4}}
    b = TrajectoryBuilder().user("m")
    for _ in range(5):
        b.call("a", data={"x": 1}).call("b", error="503")
    t = b.final("x")
    v = verdicts(case(per, after), t)
    assert v["loops"] == "fail"       # a and b each 5 times
    assert v["after"] == "fail"       # b failed first time, then called 4 more times
    r = score_trajectory(case(after), t).criteria[0]
    assert r.value == 4 and "b x4" in r.evidence


def test_identical_calls():
    crit = {"id": "same", "check": "identical_calls", "pass": {"max": 2}, "fail": {"min": 4}}
    t = TrajectoryBuilder().user("m").repeat(3, "s", {"k": "v"}, data=EMPTY).call("s", {"k": "w"}, data=EMPTY).final("x")
    assert verdicts(case(crit), t)["same"] == "unclear"


def test_strategies_retry_reword_fallback():
    crit = {"id": "st", "check": "strategies", "tools": ["search"], "pass": {"min": 2}, "fail": {"max": 0}}
    quit_ = TrajectoryBuilder().user("m").call("search", {"keyword": "a b"}, data=EMPTY).final("搜索不到")
    one = TrajectoryBuilder().user("m").call("search", {"keyword": "a b"}, data=EMPTY) \
        .call("search", {"keyword": "a b"}, data=EMPTY).final("搜索不到")
    two = TrajectoryBuilder().user("m").call("search", {"keyword": "a b"}, data=EMPTY) \
        .call("search", {"keyword": "a b"}, data=EMPTY).call("search", {"keyword": "b a"}, data={"total": 3}).final("找到了")
    three = TrajectoryBuilder().user("m").call("search", {"keyword": "a b"}, error="timeout") \
        .call("search", {"keyword": "a b"}, data=EMPTY).call("search", {"keyword": "b"}, data=EMPTY) \
        .call("web_search", {"query": "a b"}, data={"results": [1]})
    three_t = three.final("x")
    assert strategy_kinds(three_t, ["search"]) == ["retry", "reword", "fallback"]
    assert [verdicts(case(crit), t)["st"] for t in (quit_, one, two, three_t)] == ["fail", "unclear", "pass", "pass"]


def test_questions_count_history():
    crit = {"id": "q", "check": "questions_asked", "pass": {"min": 2, "max": 3}, "fail": {"min": 6}}
    b = TrajectoryBuilder().history("user", "帮我订机票").history("agent", "请问出发地？", question=True) \
        .history("user", "不想说").history("agent", "请提供出发地", question=True).user("就不说")
    assert verdicts(case(crit), b.final("无法查询，您可以……"))["q"] == "pass"
    b2 = TrajectoryBuilder().history("agent", "请问？", question=True).user("就不说")
    for _ in range(5):
        b2.ask("请告诉我出发地", "就不说")
    assert verdicts(case(crit), b2.end("step_limit"))["q"] == "fail"


def test_mentions_no_invented_status_tool_called():
    crits = [
        {"id": "items", "check": "mentions", "groups": [["索尼", "Sony"], ["Bose"], ["AirPods"]]},
        {"id": "alt", "check": "mentions", "groups": [["官方"], ["其他平台"]], "mode": "any", "on_miss": "unclear"},
        {"id": "inv", "check": "no_invented", "patterns": [r"[A-Z0-9]{2}\d{3,4}"]},
        {"id": "st", "check": "status_in", "statuses": ["completed"]},
        {"id": "tc", "check": "tool_called", "tools": ["web_search"]},
    ]
    t = TrajectoryBuilder().user("m").call("search_flights", data={"flights": [{"flight_no": "MU5101"}]}) \
        .final("sony 和 Bose 对比：MU5101、CA1234")
    v = verdicts(case(*crits), t)
    assert v == {"items": "fail", "alt": "unclear", "inv": "fail", "st": "pass", "tc": "fail"}
    r = {x.id: x for x in score_trajectory(case(*crits), t).criteria}
    assert "CA1234" in r["inv"].evidence and "MU5101" not in r["inv"].evidence


def test_rubric_is_unjudged_never_pass_and_combination():
    c = case(COUNT, {"id": "j", "kind": "judge", "rubric": "说明了原因"})
    t = TrajectoryBuilder().user("m").repeat(3, "s", error=ERR).final("x")
    s = score_trajectory(c, t)
    assert (s.verdict, s.auto_verdict) == ("unjudged", "pass")
    t2 = TrajectoryBuilder().user("m").repeat(9, "s", error=ERR).final("x")
    assert score_trajectory(c, t2).verdict == "fail"
    assert combine([Verdict.PASS, Verdict.UNCLEAR, Verdict.UNJUDGED]) == "unclear"
    assert combine([]) == "unjudged"


def test_strategies_pass_when_nothing_failed_and_say_so():
    from tether.evals.scoring import score_trajectory

    crit = {"id": "st", "check": "strategies", "tools": ["search"], "pass": {"min": 2}, "fail": {"max": 0}}
    case = Case.model_validate({"id": "S-1", "title": "t", "dimension": "PA", "input": {"message": "找鞋"},
                                "criteria": [crit]})
    found = TrajectoryBuilder().user("找鞋").call("search", {"q": "鞋"}, data={"items": [1]}).final("找到了")
    [res] = score_trajectory(case, found).criteria
    assert res.verdict == "pass" and "nothing to recover from" in res.evidence
    never = TrajectoryBuilder().user("找鞋").final("抱歉")
    [res] = score_trajectory(case, never).criteria
    assert res.verdict == "fail" and "search never called" in res.evidence
    gave_up = TrajectoryBuilder().user("找鞋").call("search", {"q": "鞋"}, data={"items": []}).final("搜不到")
    [res] = score_trajectory(case, gave_up).criteria
    assert res.verdict == "fail" and "distinct strategies after a failure: 0" in res.evidence
