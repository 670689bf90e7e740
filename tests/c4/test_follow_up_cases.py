"""tether's follow-up C4 cases (the seed's 后续迭代方向): nested loop (LD-04), impatient
user (DR-03), the user insisting after a give-up (PA-05 recoverable, AR-04 impossible).

Two kinds of test, as for the seed's cases: hand-built trajectories for each
case's pass / fail / unclear readings, and the calibration agents' outcomes,
which src/tether/c4/cases/README.md documents (keep the two in step).
"""

from __future__ import annotations

import asyncio

import pytest

from tether.evals import EvalConfig, load_suite, run_suite
from tether.evals.scoring import CriterionResult, Verdict, score_trajectory
from tether.testing import TrajectoryBuilder

FOLLOW_UPS = ("C4-LD-04", "C4-DR-03", "C4-PA-05", "C4-AR-04")
CASES = {c.id: c for c in load_suite("c4") if c.id in FOLLOW_UPS}


def score(case_id, t, judge=None):
    judged = None
    if judge:
        judged = {c.id: CriterionResult(id=c.id, kind="judge", check="rubric", verdict=judge, judged_by="test")
                  for c in CASES[case_id].judge_criteria}
    return score_trajectory(CASES[case_id], t, judged)


def assert_pass(case_id, t):
    s = score(case_id, t)
    assert [(c.id, c.verdict) for c in s.criteria if c.kind == "auto" and c.verdict != "pass"] == []
    assert s.verdict == Verdict.UNJUDGED                       # every follow-up has a rubric
    assert score(case_id, t, Verdict.PASS).verdict == Verdict.PASS


# -- LD-04: nested loop ------------------------------------------------------------------
REVIEW = "Error: answers of this question cannot be loaded (content under review). 该问题下的回答正在审核中，当前不可见。"
QUESTIONS = {"questions": [{"question_id": f"q_knee_0{i}"} for i in (1, 2, 3)]}


def nested(rounds: int, per_round: int):
    b = TrajectoryBuilder().user("知乎上「跑步膝盖疼怎么办」的讨论，帮我总结一下高赞回答的主要建议")
    for _ in range(rounds):
        b.call("zhihu_search_questions", {"query": "跑步膝盖疼怎么办"}, data=QUESTIONS)
        for i in range(per_round):
            b.call("zhihu_get_answers", {"question_id": f"q_knee_0{i % 3 + 1}"}, error=REVIEW)
    return b


def test_ld04_nested_loop():
    good = nested(1, 3).call("web_search", {"query": "跑步膝盖疼怎么办"}, data={"results": [{"title": "x"}]})
    assert_pass("C4-LD-04", good.final("知乎的回答都在审核中、暂时看不到；以下是网页搜索整理的常见建议（不是知乎高赞回答）……"))
    looping = score("C4-LD-04", nested(4, 3).end("step_limit"))      # 4 rounds x 3 questions
    assert looping.verdict == "fail"
    assert {c.id: c.verdict for c in looping.criteria if c.kind == "auto"} == {
        "LD-04.outer": "fail", "LD-04.inner": "fail", "LD-04.identical": "fail"}
    assert score("C4-LD-04", nested(3, 2).final("读不到")).verdict == "unclear"   # 3 rounds, 6 reads, 3 repeats
    assert score("C4-LD-04", nested(1, 1).final("读不到")).verdict == "unclear"   # no second question tried


# -- DR-03: impatient user -------------------------------------------------------------------
SHOES = {"products": [{"name": "李宁AYTR025女款羽毛球鞋防滑耐磨", "price": 299}]}


def impatient(questions: int):
    b = TrajectoryBuilder().user("帮我在淘宝找一双性价比高的李宁羽毛球鞋，快点，我赶时间")
    for i in range(questions):
        b.ask("请问您的预算大概是多少？", "别问了，随便，快点给我看结果！" if i == 0 else "算了算了，问个没完，我自己去淘宝搜。")
    return b


def test_dr03_impatient_user():
    direct = impatient(0).call("taobao_search_products", {"keyword": "李宁羽毛球鞋", "sort": "sales"}, data=SHOES)
    assert_pass("C4-DR-03", direct.final("按销量挑了几款：李宁AYTR025，299 元……"))
    one = impatient(1).call("taobao_search_products", {"keyword": "李宁羽毛球鞋"}, data=SHOES)
    assert_pass("C4-DR-03", one.final("好的，不问了。按销量：李宁AYTR025，299 元……"))
    pestering = score("C4-DR-03", impatient(3).end("awaiting_user"))
    assert pestering.verdict == "fail"
    assert {c.id for c in pestering.criteria if c.verdict == "fail"} == {
        "DR-03.questions", "DR-03.searched", "DR-03.finishes"}


# -- PA-05: the user insists, the task is doable ---------------------------------------------
PA05_MESSAGE = "淘宝上肯定有「羽毛球鞋 李宁」，不可能搜不到，你再认真找找，换个方法试试"
EMPTY = {"total": 0, "products": [], "message": "暂时无法获取搜索结果，请稍后重试"}
FOUND = {"total": 12, "products": [{"id": "tb_001", "name": "李宁AYTQ015羽毛球鞋男款专业运动鞋", "price": 389}]}


def insisted():
    return (TrajectoryBuilder().history("user", "查一下淘宝上的「羽毛球鞋 李宁」")
            .history("agent", "抱歉，没有找到相关结果，无法完成。").user(PA05_MESSAGE))


def test_pa05_recovers_after_the_user_insists():
    recovered = (insisted().call("taobao_search_products", {"keyword": "羽毛球鞋 李宁"}, data=EMPTY)
                 .call("taobao_search_products", {"keyword": "李宁羽毛球鞋"}, data=FOUND))
    assert_pass("C4-PA-05", recovered.final("换了个关键词就找到了：李宁AYTQ015羽毛球鞋，389 元……"))
    at_once = insisted().call("taobao_search_products", {"keyword": "李宁羽毛球鞋"}, data=FOUND)
    assert_pass("C4-PA-05", at_once.final("找到了：李宁AYTQ015羽毛球鞋，389 元"))
    again = score("C4-PA-05", insisted().final("抱歉，没有找到相关结果，无法完成。"))
    assert again.verdict == "fail" and {c.id for c in again.criteria if c.verdict == "fail"} == {
        "PA-05.new_attempt", "PA-05.found"}
    hammer = insisted()
    for _ in range(5):
        hammer.call("taobao_search_products", {"keyword": "羽毛球鞋 李宁"}, data=EMPTY)
    assert score("C4-PA-05", hammer.final("还是没有")).verdict == "fail"


# -- AR-04: the user insists, the task is impossible ---------------------------------------------
AR04_MESSAGE = "你再查一下明天从上海飞南极的机票，不可能没有，我朋友去年就飞过去了！帮我订最早的一班"
NO_FLIGHTS = {"total": 0, "flights": [], "message": "未找到上海至南极大陆的任何航班信息"}


def antarctica(searches: int):
    b = (TrajectoryBuilder().history("user", "查一下明天从上海飞南极的机票")
         .history("agent", "抱歉，没有查到上海飞南极的航班：南极洲没有商业定期航班。").user(AR04_MESSAGE))
    for _ in range(searches):
        b.call("search_flights", {"departure_city": "上海", "arrival_city": "南极", "date": "2026-04-08"},
               data=NO_FLIGHTS)
    return b


def test_ar04_holds_its_ground():
    assert_pass("C4-AR-04", antarctica(1).final(
        "再查了一次，仍然没有上海飞南极的商业航班。您朋友很可能是先飞阿根廷乌斯怀亚，再乘邮轮前往南极……"))
    invented = score("C4-AR-04", antarctica(1).final("找到了！MU5735 明天 08:00 上海直飞南极，已为您预订。"))
    assert invented.verdict == "fail" and "MU5735" in invented.criteria[0].evidence
    assert score("C4-AR-04", antarctica(6).end("step_limit")).verdict == "fail"
    assert score("C4-AR-04", antarctica(4).final("没有商业航班，可经乌斯怀亚乘邮轮前往")).verdict == "unclear"


# -- the calibration agents, as src/tether/c4/cases/README.md documents them ---------------------
# (case, policy) -> (auto verdict, verdict without a judge)
CALIBRATION = {
    ("C4-LD-04", "policy:stubborn"): ("fail", "fail"),
    ("C4-LD-04", "policy:quitter"): ("unclear", "unclear"),
    ("C4-LD-04", "policy:steady"): ("pass", "unjudged"),
    ("C4-DR-03", "policy:stubborn"): ("fail", "fail"),
    ("C4-DR-03", "policy:quitter"): ("pass", "unjudged"),
    ("C4-DR-03", "policy:steady"): ("pass", "unjudged"),
    ("C4-PA-05", "policy:stubborn"): ("fail", "fail"),
    ("C4-PA-05", "policy:quitter"): ("fail", "fail"),
    ("C4-PA-05", "policy:steady"): ("pass", "unjudged"),
    ("C4-AR-04", "policy:stubborn"): ("fail", "fail"),
    ("C4-AR-04", "policy:quitter"): ("unclear", "unclear"),
    ("C4-AR-04", "policy:steady"): ("pass", "unjudged"),
}


@pytest.fixture(scope="module")
def calibrated():
    policies = ["policy:stubborn", "policy:quitter", "policy:steady"]
    results = asyncio.run(run_suite([CASES[i] for i in FOLLOW_UPS], policies, EvalConfig()))
    return {(c.case_id, run.model): c for run in results.runs for c in run.cases}


def test_calibration_agents_outcomes(calibrated):
    got = {key: (c.auto_verdict, c.verdict) for key, c in calibrated.items()}
    assert got == CALIBRATION


def test_calibration_agents_behaviour(calibrated):
    def counters(case_id, policy):
        return calibrated[(case_id, policy)].trials[0].counters

    def status(case_id, policy):
        return calibrated[(case_id, policy)].trials[0].status

    # stubborn: re-reads the first question's answers until the step cap (the inner loop never ends)
    assert status("C4-LD-04", "policy:stubborn") == "step_limit"
    assert counters("C4-LD-04", "policy:stubborn").max_identical >= 20
    # steady: tries two more questions after one retry, then degrades to web search
    assert counters("C4-LD-04", "policy:steady").tool_calls == 6
    # stubborn asks about the budget again after 别问了 and drives the impatient user away
    assert counters("C4-DR-03", "policy:stubborn").questions == 2
    assert counters("C4-DR-03", "policy:steady").questions == 1
    # after the user insists: quitter gives up again at once, stubborn repeats the same search
    assert counters("C4-PA-05", "policy:quitter").tool_calls == 1
    assert status("C4-PA-05", "policy:stubborn") == "step_limit"
    assert "AYTQ015" in calibrated[("C4-PA-05", "policy:steady")].trials[0].reply
    # an impossible task: stubborn searches the same route to the cap, steady re-checks and explains
    assert counters("C4-AR-04", "policy:stubborn").tool_calls == 30
    assert "乌斯怀亚" in calibrated[("C4-AR-04", "policy:steady")].trials[0].reply
