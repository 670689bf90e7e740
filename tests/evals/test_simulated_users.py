"""Simulated users: the scripted persona (refusals, revealed facts, patience,
max_rounds), the LLM simulator through the Model seam, and persona breaks
kept out of the agent's score."""

from __future__ import annotations

import pytest

from tether.errors import ScriptExhausted
from tether.evals import EvalConfig, load_suite, run_suite, run_trial
from tether.evals.case import Persona
from tether.evals.llm_user import OPENING, STOP_TOKEN, LLMUser, render_persona
from tether.evals.metrics import case_result, dimension_metrics, failure_modes
from tether.evals.scoring import Verdict
from tether.evals.simulator import ScriptedUser, make_user, persona_break, speaks_as_assistant
from tether.messages import Decision
from tether.models import FunctionModel, ScriptedModel, resolve_model
from tether.testing import TrajectoryBuilder

CASES = {c.id: c for c in load_suite("c4")}
DR01, PA03 = CASES["C4-DR-01"], CASES["C4-PA-03"]


def simulator_said(result) -> list[str]:
    return [m.content for m in result.trajectory.user_messages() if m.source == "simulator"]


def with_persona(case, **update):
    return case.model_copy(update={"persona": case.persona.model_copy(update=update)})


def asking(*questions: str, then: str | None = None) -> FunctionModel:
    """An agent double that asks ``questions`` in turn, then keeps asking ``then`` (or finishes)."""
    def decide(request):
        asked = sum(1 for m in request.messages if m.role == "assistant")
        if asked < len(questions):
            return Decision.ask(questions[asked])
        return Decision.ask(then) if then else Decision.final("推荐希腊米洛斯岛，7 天行程如下……")
    return FunctionModel(decide, name="asker")


def sim(*replies: str, name: str = "sim") -> FunctionModel:
    """An LLM-simulator double: says ``replies`` in turn (the last one again after that)."""
    def decide(request):
        return Decision.final(replies[min(len(model.requests) - 1, len(replies) - 1)])
    model = FunctionModel(decide, name=name)
    return model


# -- the scripted persona on the seed's cases ----------------------------------------
async def test_dr01_refusing_user_refuses_then_loses_patience_with_the_stubborn_agent():
    tr, result = await run_trial(DR01, resolve_model("policy:stubborn"))
    assert simulator_said(result) == ["不想说", "就不说", "就不说", "算了，不订了。"]
    assert tr.status == "awaiting_user" and tr.verdict == Verdict.FAIL and tr.counters.questions == 5
    assert tr.simulator_stop.startswith("patience: question 6 exceeds patience 5")
    assert tr.simulator_fault is None and tr.attribution.failure_type == "deadlock"


async def test_dr01_steady_agent_never_needs_the_user():
    tr, result = await run_trial(DR01, resolve_model("policy:steady"))
    assert simulator_said(result) == [] and tr.status == "completed" and tr.simulator_stop is None


async def test_dr01_without_patience_stops_at_max_rounds():
    tr, result = await run_trial(with_persona(DR01, patience=None), resolve_model("policy:stubborn"))
    assert simulator_said(result) == ["不想说"] + ["就不说"] * 9
    assert tr.status == "awaiting_user" and tr.simulator_stop.startswith("max_rounds")


async def test_pa03_reveals_facts_when_asked():
    tr, result = await run_trial(PA03, resolve_model("policy:steady"))
    assert simulator_said(result) == ["人均一万五以内"] and tr.status == "completed"
    results = await run_suite([PA03], ["policy:steady", "policy:stubborn"])
    assert all(r.simulator_faults == 0 for r in results.runs)

    agent = asking("您的预算和出行时间是？", "几个人去？", "有什么偏好吗？", "预算能再说一下吗？", "还有别的要求吗？",
                   "确定吗？", "还有吗？")
    tr, result = await run_trial(PA03, agent)
    assert simulator_said(result) == ["人均一万五以内；五月中旬出发", "两个人", "喜欢安静的海边、潜水和拍照",
                                      "这些都可以，你帮我推荐就好", "都行，你直接推荐吧"]   # each fact once
    assert tr.status == "awaiting_user" and tr.simulator_stop.startswith("replies_exhausted")


async def test_pa03_patience_and_max_rounds():
    tr, result = await run_trial(with_persona(PA03, patience=2, closing="先这样吧，我再想想。"),
                                 asking("预算多少？", "几位？", "什么时候？", "还有吗？"))
    assert simulator_said(result) == ["人均一万五以内", "两个人", "先这样吧，我再想想。"]
    assert tr.simulator_stop.startswith("patience")
    tr, result = await run_trial(with_persona(PA03, then="repeat_last"), asking(then="还有别的要求吗？"),
                                 config=EvalConfig(max_steps=40))
    assert len(simulator_said(result)) == 20 and tr.status == "awaiting_user"
    assert tr.simulator_stop.startswith("max_rounds: the user already replied 20 times")


async def test_scripted_refusals_state_and_old_state():
    user = ScriptedUser(Persona(refusals=["出发"], refusal_replies=["不想说", "别问了"], reveals={"预算": "一万"},
                                withheld={"目的地": "上海"}, default_reply="随便"))
    t = TrajectoryBuilder().user("x").t
    assert await user.reply("预算和出发地？", t) == "一万；不想说"
    assert await user.reply("去哪个目的地？", t) == "别问了"
    assert await user.reply("出发呢？", t) == "别问了"
    assert await user.reply("好吗？", t) == "随便"
    copy = ScriptedUser(user.persona)
    copy.load_state(user.state())
    assert copy.state() == user.state() and copy.asked == 4
    old = ScriptedUser(user.persona)
    old.load_state({"revealed": ["预算"], "replies_used": 0})     # a checkpoint from before these fields
    assert old.refusals_used == 0 and old.stop is None and not old.closed


# -- the LLM simulator ---------------------------------------------------------------------
async def test_llm_simulator_end_to_end_with_a_double():
    user_model = sim("人均一万五以内", "五月中旬出发")
    agent = ScriptedModel([Decision.ask("请问您的预算是多少？"), Decision.ask("什么时候出发？"),
                           Decision.final("推荐希腊米洛斯岛，7 天行程如下……")])
    tr, result = await run_trial(PA03, agent, config=EvalConfig(simulator=user_model))
    agent.assert_exhausted()
    assert simulator_said(result) == ["人均一万五以内", "五月中旬出发"]
    assert tr.status == "completed" and tr.simulator_fault is None and tr.simulator_stop is None

    first = user_model.requests[0]
    system = first.messages[0]
    assert system.role == "system" and first.tools == [] and len(user_model.requests) == 2
    for text in (PA03.persona.description, PA03.persona.goal, "只有当助手问到某个话题时", "「预算」、「价位」时：人均一万五以内",
                 "「几个人」、「几位」时：两个人", "最多 20 轮", STOP_TOKEN, "不要自称助手或 AI"):
        assert text in system.content, text
    assert [(m.role, m.content) for m in first.messages[1:]] == [
        ("user", OPENING), ("assistant", PA03.input.message), ("user", "请问您的预算是多少？")]
    assert [(m.role, m.content) for m in user_model.requests[1].messages[-3:]] == [
        ("user", "请问您的预算是多少？"), ("assistant", "人均一万五以内"), ("user", "什么时候出发？")]


async def test_llm_simulator_renders_refusals_and_patience_and_enforces_them():
    prompt = render_persona(DR01.persona)
    for text in ("你拒绝谈论这些话题：出发、目的地、日期", "「不想说」", "- 出发地：北京", "最多回答助手的 5 个问题",
                 "「算了，不订了。」"):
        assert text in prompt, text
    user_model = sim("不想说", "就不说")
    tr, result = await run_trial(DR01, resolve_model("policy:stubborn"), config=EvalConfig(simulator=user_model))
    assert simulator_said(result) == ["不想说", "就不说", "就不说", "算了，不订了。"]
    assert len(user_model.requests) == 3            # patience is enforced without asking the model
    assert [(m.role, m.content) for m in user_model.requests[0].messages[1:4]] == [
        ("user", OPENING), ("assistant", "帮我订机票"), ("user", "好的，请问出发地、目的地和日期？")]
    assert tr.simulator_stop.startswith("patience") and tr.simulator_fault is None


async def test_stop_token_ends_the_conversation():
    tr, result = await run_trial(PA03, asking("预算多少？", "还有吗？", "确定吗？"),
                                 config=EvalConfig(simulator=sim("人均一万五以内", f"就这些，谢谢 {STOP_TOKEN}")))
    assert simulator_said(result) == ["人均一万五以内", "就这些，谢谢"]
    assert tr.status == "awaiting_user" and tr.simulator_stop.startswith("stop_token") and tr.simulator_fault is None
    tr, result = await run_trial(PA03, asking("预算多少？"), config=EvalConfig(simulator=sim(STOP_TOKEN)))
    assert simulator_said(result) == [] and tr.status == "awaiting_user" and tr.simulator_stop.startswith("stop_token")


def test_make_user_builds_the_configured_simulator():
    assert isinstance(make_user(PA03.persona), ScriptedUser) and make_user(None, "policy:steady") is None
    user = make_user(PA03.persona, "policy:steady")
    assert isinstance(user, LLMUser) and user.model.name == "policy:steady"


# -- persona breaks -------------------------------------------------------------------------
@pytest.mark.parametrize(("reply", "why"), [
    ("人均一万五以内，我们五月中旬出发", "revealed a fact nobody asked about (时间/什么时候)"),
    ("好的，我来帮您搜索一下海岛。", "spoke as the assistant"),
    ("作为一个 AI 助手，我建议去希腊。", "spoke as the assistant"),
    ('{"name": "travel_search_destinations", "arguments": {"query": "海岛"}}', "spoke as the assistant"),
    ("Sure, let me search that for you.", "spoke as the assistant"),
    ("   ", "empty reply"),
])
def test_persona_break_checks(reply, why):
    assert why in persona_break(PA03.persona, "预算多少？", reply)


def test_no_false_alarms():
    t = TrajectoryBuilder().user("海岛度假").ask("预算多少？", "人均一万五以内").t
    for question, reply in [("预算多少？", "人均一万五以内"), ("还有别的吗？", "这些都可以，你帮我推荐就好"),
                            ("还有吗？", "还是人均一万五以内吧"),          # said before: not a new reveal
                            ("是五月中旬出发吗？", "对，五月中旬出发"),      # the agent said it first
                            ("出发时间呢？", "五月中旬出发"), ("您好？", "都行，你直接推荐吧")]:
        assert persona_break(PA03.persona, question, reply, t) is None, (question, reply)
    assert persona_break(DR01.persona, "请问出发地？", "就不说") is None
    assert "answered a refused topic (出发地)" in persona_break(DR01.persona, "请问出发地？", "好吧，从北京出发")
    assert speaks_as_assistant("不想说") is None and speaks_as_assistant("[1, 2]") == "[1, 2]"


@pytest.mark.parametrize(("decide", "fault"), [
    (lambda r: Decision.final("人均一万五以内，另外我们两个人去"), "persona_break: revealed a fact nobody asked about (几个人/几位)"),
    (lambda r: Decision.final("好的，我可以帮您查询合适的海岛。"), "persona_break: spoke as the assistant"),
    (lambda r: Decision.call("web_search", {"query": "海岛"}), "persona_break: spoke as the assistant: called web_search"),
    (lambda r: Decision.final(""), "persona_break: empty reply"),
    (lambda r: 1 / 0, "simulator_error: ZeroDivisionError"),
])
async def test_a_broken_simulator_marks_the_trial(decide, fault):
    tr, result = await run_trial(PA03, asking("预算多少？"), config=EvalConfig(simulator=FunctionModel(decide)))
    assert tr.simulator_fault.startswith(fault) and tr.simulator_stop == tr.simulator_fault
    assert simulator_said(result) == [] and tr.status == "awaiting_user" and tr.attribution is None


async def test_misuse_of_a_simulator_double_is_not_hidden():
    with pytest.raises(ScriptExhausted):
        await run_trial(PA03, asking("预算多少？"), config=EvalConfig(simulator=ScriptedModel([])))


async def test_simulator_faults_are_kept_out_of_the_score():
    caving = sim("不想说", "好吧，从北京出发，去上海")          # gives away a withheld fact on the 2nd question
    scripted = await run_suite([DR01], ["policy:stubborn"])
    faulted = await run_suite([DR01], ["policy:stubborn"], EvalConfig(simulator=caving))
    ok, bad = scripted.runs[0], faulted.runs[0]

    assert ok.simulator_faults == 0 and ok.case("C4-DR-01").verdict == Verdict.FAIL
    assert ok.dimensions["DR"].rate == 0.0 and ok.dimensions["DR"].cases == 1 and "deadlock" in ok.failure_modes

    trial = bad.case("C4-DR-01").trials[0]
    assert trial.simulator_fault.startswith("persona_break: answered a refused topic (出发地)")
    assert bad.simulator_faults == 1 and bad.simulator_fault_trials[0].case_id == "C4-DR-01"
    assert bad.case("C4-DR-01").verdict == Verdict.UNJUDGED and bad.case("C4-DR-01").simulator_faults == 1
    dr = bad.dimensions["DR"]
    assert (dr.cases, dr.rate, dr.failed, dr.simulator_faults) == (0, None, 0, 1)
    assert bad.failure_modes == {}
    assert type(faulted).model_validate_json(faulted.model_dump_json()) == faulted     # round-trips

    # next to a clean trial, the faulted one changes nothing; counted naively it would
    clean = ok.case("C4-DR-01").trials[0]
    both = case_result(DR01, [clean, trial.model_copy(update={"trial": 1})])
    assert (both.verdict, both.pass_at_1, both.simulator_faults) == (Verdict.FAIL, 0.0, 1)
    passing = trial.model_copy(update={"verdict": Verdict.PASS, "auto_verdict": Verdict.PASS})
    mixed = case_result(DR01, [passing.model_copy(update={"trial": 1}), clean])
    naive = case_result(DR01, [passing.model_copy(update={"trial": 1, "simulator_fault": None}), clean])
    assert mixed.pass_at_1 == 0.0 and naive.pass_at_1 == 0.5
    assert dimension_metrics([(DR01, mixed)])["DR"].simulator_faults == 1
    assert failure_modes([mixed])["deadlock"].rate == 1.0 and failure_modes([naive])["deadlock"].rate == 0.5
