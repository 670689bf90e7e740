"""Calibration policies: extraction, assessment, behaviour on synthetic tools, C4 end to end."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from tether.errors import UsageError
from tether.messages import DecisionKind, Message, ToolCallRequest, canonical_json
from tether.models import ModelRequest, resolve_model
from tether.c4.policies import POLICY_NAMES, QuitterPolicy, SteadyPolicy, StubbornPolicy, make_policy
from tether.c4.policies._assess import Status, assess, ids_for
from tether.c4.policies._extract import parse_task, resolve_date
from tether.runtime import RunConfig, Turn, run_agent, run_agent_sync
from tether.tools import Tool, ToolResult, ToolSet


def _tool(name: str, description: str, props: dict, fn, required: list[str] | None = None) -> Tool:
    schema = {"type": "object", "properties": props, "required": list(props) if required is None else required}
    return Tool(name, description, schema, fn)


def _s(description: str) -> dict:
    return {"type": "string", "description": description}


def _compact(text: str) -> str:
    return "".join(text.split())


def _calls(result, tool: str | None = None) -> list:
    return [c for c in result.trajectory.tool_calls() if tool is None or c.tool == tool]


def _count(result) -> Counter:
    return Counter(c.tool for c in result.trajectory.tool_calls())


# -- extraction ------------------------------------------------------------------
def test_route_date_and_subject():
    t = parse_task("查一下下周五杭州到成都的机票")
    assert (t.origin, t.destination) == ("杭州", "成都")
    assert t.date_phrase == "下周五"
    assert resolve_date(t.date_phrase, date(2026, 4, 7)) == "2026-04-17"
    assert t.query() == "杭州 成都 机票"


def test_route_patterns_and_places():
    assert parse_task("明天从广州飞东京的航班").origin == "广州"
    assert parse_task("明天从广州飞东京的航班").destination == "东京"
    t = parse_task("帮我查上海浦东新区的租房")
    assert t.city == "上海" and t.district == "浦东新区"
    assert parse_task("帮我看看北京朝阳的房子").district == "朝阳区"


@pytest.mark.parametrize("phrase, iso", [
    ("今天", "2026-04-07"), ("明天", "2026-04-08"), ("后天", "2026-04-09"), ("下周一", "2026-04-13"),
    ("周三", "2026-04-08"), ("周一", "2026-04-13"), ("5月1日", "2026-05-01"), ("3天后", "2026-04-10"),
    ("2026-06-01", "2026-06-01"), ("下周", None),
])
def test_resolve_date(phrase, iso):
    assert resolve_date(phrase, date(2026, 4, 7)) == iso


def test_quoted_subject_and_filters():
    t = parse_task("问答社区里关于「怎么学游泳」的问题，找出提到“换气”的回答")
    assert t.subject == "怎么学游泳"
    assert t.filters == ("换气",)


def test_subject_without_quotes_strips_fillers_and_slots():
    t = parse_task("推荐一款 300 元以内的机械键盘，要能打游戏")
    assert t.subject == "机械键盘"
    assert t.max_price == 300


def test_enumerated_items_and_aspects():
    t = parse_task("帮我对比两款相机：甲相机 A1、乙相机 B2，要看价格、重量")
    assert t.items == ("甲相机 A1", "乙相机 B2")
    assert t.aspects == ("价格", "重量")
    assert t.core == "相机"


def test_budget_days_exclusions_and_replies():
    t = parse_task("想去海边玩，不要日本，别太贵，5 天左右", ("人均一万五以内",))
    assert t.days == 5
    assert t.exclusions == ("日本",)
    assert t.max_price == 15000
    assert not t.vague_price
    assert parse_task("想去海边玩，不要太贵").vague_price


def test_refusals_are_counted():
    t = parse_task("帮我订酒店", ("不想说", "就不说"))
    assert t.refusals == 2


# -- assessment ------------------------------------------------------------------------
def test_assess_kinds():
    err = assess({"ok": False, "error": "Error: Service unavailable (HTTP 503). Please try again later."})
    assert err.status == Status.ERROR and err.transient and err.outage
    fmt = assess({"ok": False, "error": "Invalid date format, expected YYYY-MM-DD"})
    assert fmt.status == Status.ERROR and fmt.bad_format and not fmt.transient
    empty = assess({"ok": True, "data": {"total": 0, "items": [], "message": "暂时无法获取，请稍后重试"}})
    assert empty.status == Status.EMPTY and empty.transient
    assert assess({"ok": True, "data": {"results": []}}).status == Status.EMPTY
    partial = assess({"ok": True, "data": {"name": "B", "price": 10, "weight": None, "message": "暂未同步"}})
    assert partial.status == Status.PARTIAL and partial.null_fields == ("weight",)
    short = assess({"ok": True, "data": {"threads": [{"thread_id": "t1"}], "note": "结果不含点赞数据"}})
    assert short.status == Status.INSUFFICIENT and short.reason == "结果不含点赞数据"
    assert assess({"ok": True, "data": {"items": [{"id": 1}]}}).status == Status.GOOD


def test_ids_from_results():
    data = {"threads": [{"thread_id": "t1"}, {"thread_id": "t2"}]}
    assert ids_for("thread_id", data) == ["t1", "t2"]
    assert ids_for("question_id", {"questions": [{"id": "q9"}, {"id": "q8"}]}) == ["q9", "q8"]
    assert ids_for("city_id", {"city_id": "310000", "name": "上海"}) == ["310000"]


# -- names ------------------------------------------------------------------------------
def test_make_policy_and_spec_strings():
    assert POLICY_NAMES == ("stubborn", "quitter", "steady")
    assert isinstance(make_policy("steady"), SteadyPolicy)
    assert isinstance(make_policy("quitter"), QuitterPolicy)
    assert isinstance(resolve_model("policy:stubborn"), StubbornPolicy)
    assert resolve_model("policy:steady").name == "policy:steady"
    with pytest.raises(UsageError) as exc:
        make_policy("reckless")
    assert all(n in str(exc.value) for n in POLICY_NAMES)


# -- synthetic tools ---------------------------------------------------------------------
def _web(log: list | None = None) -> Tool:
    def web_search(query: str):
        if log is not None:
            log.append(query)
        return {"results": [{"title": f"关于{query}", "snippet": "网页摘要：可以在官方渠道购买。"}]}
    return _tool("web_search", "网页搜索：通用搜索引擎，返回标题和摘要。", {"query": _s("搜索词")}, web_search)


def _shop(found: str = "雨伞红色") -> Tool:
    def shop_search_items(keyword: str):
        if _compact(keyword) == found:
            return {"total": 1, "items": [{"id": "u1", "name": "晴雨两用红色雨伞", "price": 59}]}
        return {"total": 0, "items": [], "message": "未找到相关商品"}
    return _tool("shop_search_items", "商城商品搜索：按关键词搜索商品，返回名称和价格。",
                 {"keyword": _s("搜索关键词")}, shop_search_items)


def test_steady_retries_then_rewords_and_summarizes():
    r = run_agent_sync(make_policy("steady"), ToolSet([_shop(), _web()]), message="帮我在商城找「红色 雨伞」")
    keywords = [c.arguments["keyword"] for c in _calls(r)]
    assert keywords == ["红色 雨伞", "红色 雨伞", "雨伞 红色"]
    assert r.status == "completed" and "晴雨两用红色雨伞" in r.reply and "59" in r.reply


def test_quitter_gives_up_at_the_first_empty_result():
    r = run_agent_sync(make_policy("quitter"), ToolSet([_shop(), _web()]), message="帮我在商城找「红色 雨伞」")
    assert len(_calls(r)) == 1
    assert r.status == "completed" and r.reply.startswith("抱歉")


def test_stubborn_repeats_the_same_call_until_the_step_cap():
    r = run_agent_sync(make_policy("stubborn"), ToolSet([_shop(), _web()]), message="帮我在商城找「红色 雨伞」",
                       config=RunConfig(max_steps=6))
    assert r.status == "step_limit"
    assert len(_calls(r)) == 6 and r.trajectory.max_identical_calls() == 6


def test_steady_stops_after_variants_falls_back_and_explains():
    queries: list[str] = []
    r = run_agent_sync(make_policy("steady"), ToolSet([_shop(found="nothing"), _web(queries)]),
                       message="帮我在商城找「复古 黄铜 台灯 灯罩」")
    assert _count(r) == {"shop_search_items": 4, "web_search": 1}
    assert queries == ["复古 黄铜 台灯 灯罩"]
    assert "shop_search_items 4 次" in r.reply and "未找到相关商品" in r.reply
    assert "官方渠道" in r.reply and "其他平台" in r.reply


def _trains(log: list) -> Tool:
    def search_trains(departure_city: str, arrival_city: str, date: str):
        log.append(date)
        if len(date) != 10 or date[4] != "-":
            return ToolResult.failure("Invalid date format. Expected YYYY-MM-DD.", "invalid_arguments")
        return {"total": 1, "trains": [{"train_no": "G7501", "price": 117, "date": date}]}
    return _tool("search_trains", "查询火车票：按出发城市、到达城市和日期搜索车次。",
                 {"departure_city": _s("出发城市"), "arrival_city": _s("到达城市"), "date": _s("日期")}, search_trains)


def test_steady_resolves_a_date_the_error_says_must_be_iso():
    dates: list[str] = []
    r = run_agent_sync(make_policy("steady", today=date(2026, 4, 7)), ToolSet([_trains(dates)]),
                       message="查一下后天杭州到南京的火车票")
    assert dates == ["后天", "后天", "2026-04-09"]
    assert _calls(r)[0].arguments["departure_city"] == "杭州" and "G7501" in r.reply


def _outage_tools() -> list[Tool]:
    down = ToolResult.failure("Error: Service unavailable (HTTP 503). Please try again later.", "tool_error")
    return [
        _tool("svc_lookup_region_id", "区域查询：根据城市名获取区域ID。", {"city_name": _s("城市名称")}, lambda city_name: down),
        _tool("svc_search_listings", "房源搜索：查询某城市的租房房源。",
              {"region_id": _s("区域ID，需先调用 svc_lookup_region_id 获取")}, lambda region_id: {"listings": []}),
        _tool("svc_listing_photos", "房源照片：获取房源照片。", {"listing_id": _s("房源ID，需先调用 svc_search_listings 获取")},
              lambda listing_id: {"photos": []}),
        _tool("geo_find_places", "地点搜索：搜索周边的咖啡馆、餐厅等地点。", {"query": _s("关键词"), "city": _s("城市")},
              lambda query, city: down),
        _tool("geo_plan_route", "路线规划：地铁、公交路线。", {"origin": _s("起点"), "destination": _s("终点")},
              lambda origin, destination: down),
    ]


def test_steady_recognizes_an_outage_and_falls_back():
    queries: list[str] = []
    r = run_agent_sync(make_policy("steady"), ToolSet([*_outage_tools(), _web(queries)]),
                       message="帮我查杭州的租房房源，查周边的咖啡馆，查去那里的地铁路线")
    counts = _count(r)
    assert counts["svc_lookup_region_id"] == 3            # one call, two retries (503 is transient)
    assert counts["geo_find_places"] == 1                 # a second tool down: no retry
    assert "geo_plan_route" not in counts and "svc_search_listings" not in counts
    assert counts["web_search"] == 3 and queries[0] == "杭州 租房房源"
    assert "系统性故障" in r.reply and "稍后重试" in r.reply


def _forum(note: bool = True) -> list[Tool]:
    def forum_search_threads(keyword: str):
        out = {"threads": [{"thread_id": "t1", "title": "露营装备清单"}, {"thread_id": "t2", "title": "帐篷怎么选"}]}
        return {**out, "note": "结果不含点赞数据"} if note else out

    def forum_get_replies(thread_id: str):
        out = {"thread_id": thread_id, "replies": [{"reply_id": "r1", "text": "推荐带防潮垫"}]}
        return {**out, "note": "回复列表不含点赞数，无法排序"} if note else out

    return [
        _tool("forum_search_threads", "论坛搜索：按关键词搜索帖子讨论。", {"keyword": _s("关键词")}, forum_search_threads),
        _tool("forum_get_replies", "获取帖子回复：根据帖子ID获取回复列表（含点赞）。",
              {"thread_id": _s("帖子ID，需先调用 forum_search_threads 获取")}, forum_get_replies),
    ]


FORUM_ASK = "论坛上关于「露营装备」的讨论，看回复里点赞最多的是哪条"


def test_steady_runs_an_insufficient_chain_twice_then_degrades():
    r = run_agent_sync(make_policy("steady"), ToolSet(_forum()), message=FORUM_ASK)
    assert [c.tool for c in _calls(r)] == ["forum_search_threads", "forum_get_replies"] * 2
    assert _calls(r)[1].arguments == {"thread_id": "t1"}
    assert "不含点赞" in r.reply and "露营装备清单" in r.reply and "推荐带防潮垫" in r.reply


def test_steady_follows_a_good_chain_once():
    r = run_agent_sync(make_policy("steady"), ToolSet(_forum(note=False)), message=FORUM_ASK)
    assert [c.tool for c in _calls(r)] == ["forum_search_threads", "forum_get_replies"]


def test_stubborn_restarts_the_chain_forever():
    r = run_agent_sync(make_policy("stubborn"), ToolSet(_forum()), message=FORUM_ASK, config=RunConfig(max_steps=8))
    assert r.status == "step_limit"
    assert _count(r) == {"forum_search_threads": 4, "forum_get_replies": 4}


def _qa() -> list[Tool]:
    answers = {"q1": [{"author": "甲", "voteup_count": 900, "content": "先练漂浮和蹬腿。"}],
               "q2": [{"author": "乙", "voteup_count": 300, "content": "学会换气最关键，吐气要在水里完成。"},
                      {"author": "丙", "voteup_count": 50, "content": "换气时头不要抬太高。"}]}
    return [
        _tool("qa_search_questions", "问答搜索：按关键词搜索问题。", {"query": _s("关键词")},
              lambda query: {"questions": [{"question_id": "q1", "title": "怎么学游泳？"},
                                           {"question_id": "q2", "title": "成年人怎么学游泳？"}]}),
        _tool("qa_get_answers", "获取回答：根据 question_id 获取问题下的回答（赞同数、内容）。",
              {"question_id": _s("问题ID，需先调用 qa_search_questions 获取")},
              lambda question_id: {"title": question_id, "answers": answers[question_id]}),
    ]


def test_steady_reads_more_answers_until_one_mentions_the_quoted_term():
    r = run_agent_sync(make_policy("steady"), ToolSet(_qa()), message="问答社区里关于「怎么学游泳」的问题，找出提到「换气」的回答")
    assert [c.arguments for c in _calls(r, "qa_get_answers")] == [{"question_id": "q1"}, {"question_id": "q2"}]
    assert "学会换气最关键" in r.reply and "赞同 300" in r.reply


def _hotel() -> Tool:
    return _tool("hotel_search", "酒店查询：按城市和入住日期搜索酒店。", {"city": _s("城市"), "date": _s("入住日期")},
                 lambda city, date: {"hotels": [{"name": "湖景酒店", "price": 500}]})


REFUSED = [Turn("user", "帮我订酒店"), Turn("agent", "好的，请问城市和入住日期？", True), Turn("user", "不想说"),
           Turn("agent", "没有这些信息无法查询，请提供城市和日期", True)]


def test_steady_stops_asking_after_two_refusals():
    r = run_agent_sync(make_policy("steady"), ToolSet([_hotel()]), message="就不说", history=REFUSED)
    assert r.status == "completed" and len(r.trajectory.questions_to_user()) == 2
    assert "不再追问" in r.reply and "城市和日期" in r.reply and "流程" in r.reply


def test_stubborn_asks_again():
    r = run_agent_sync(make_policy("stubborn"), ToolSet([_hotel()]), message="就不说", history=REFUSED)
    assert r.status == "awaiting_user" and "城市" in r.reply


def test_steady_asks_when_information_is_missing_and_uses_the_reply():
    class User:
        async def reply(self, question, trajectory):
            return "杭州，明天入住"

    r = run_agent_sync(make_policy("steady"), ToolSet([_hotel()]), message="帮我订酒店", user=User())
    assert len(r.trajectory.questions_to_user()) == 1
    assert _calls(r)[0].arguments == {"city": "杭州", "date": "明天"} and "湖景酒店" in r.reply


def test_steady_compares_every_item_and_marks_missing_fields():
    data = {"甲相机A1": {"name": "甲相机 A1", "price": 3999, "weight": 500},
            "乙相机B2": {"name": "乙相机 B2", "price": 2999, "weight": None, "message": "部分参数暂未同步"}}
    shop = _tool("shop_search_items", "商城商品搜索：按关键词搜索商品。", {"keyword": _s("关键词")},
                 lambda keyword: data.get(_compact(keyword), {"items": []}))
    r = run_agent_sync(make_policy("steady"), ToolSet([shop]), message="帮我对比两款相机：甲相机 A1、乙相机 B2，要看价格、重量")
    assert [c.arguments["keyword"] for c in _calls(r)] == ["甲相机 A1", "乙相机 B2"]
    table = [line for line in r.reply.splitlines() if line.startswith("| 乙相机 B2")]
    assert table and "数据不可得" in table[0] and "2999" in table[0]


def test_steady_drops_a_budget_that_filters_everything_and_explains_the_conflict():
    def shop_search_items(keyword: str, max_price: float | None = None):
        items = [{"id": "k1", "name": "青轴机械键盘 RGB", "price": 899}, {"id": "k2", "name": "静音机械键盘", "price": 699}]
        if max_price is not None and all(i["price"] > max_price for i in items):
            return {"total": 0, "items": [], "message": f"未找到价格不高于 {max_price:g} 元的商品"}
        return {"total": 2, "items": items}

    shop = _tool("shop_search_items", "商城商品搜索：按关键词搜索商品，可按最高价格过滤。",
                 {"keyword": _s("关键词"), "max_price": {"type": "number", "description": "最高价格（元）"}},
                 shop_search_items, required=["keyword"])
    r = run_agent_sync(make_policy("steady"), ToolSet([shop]), message="推荐一款 300 元以内的机械键盘")
    assert [c.arguments for c in _calls(r)] == [{"keyword": "机械键盘", "max_price": 300}] * 2 + [{"keyword": "机械键盘"}]
    assert "最低也要 699 元" in r.reply and "提高预算" in r.reply


def test_greeting_is_answered_without_tools():
    r = run_agent_sync(make_policy("steady"), ToolSet([_hotel(), _web()]), message="你好")
    assert not _calls(r) and r.status == "completed"


# -- the Model seam ------------------------------------------------------------------------
def test_policies_are_stateless_and_deterministic():
    policy = make_policy("steady")

    async def both():
        return await asyncio.gather(
            run_agent(policy, ToolSet([_shop(), _web()]), message="帮我在商城找「红色 雨伞」"),
            run_agent(policy, ToolSet(_forum()), message=FORUM_ASK))

    shared = asyncio.run(both())
    alone = [run_agent_sync(make_policy("steady"), ToolSet([_shop(), _web()]), message="帮我在商城找「红色 雨伞」"),
             run_agent_sync(make_policy("steady"), ToolSet(_forum()), message=FORUM_ASK)]
    for a, b in zip(shared, alone):
        assert a.reply == b.reply
        assert [(c.tool, c.arguments, c.call_id) for c in _calls(a)] == [(c.tool, c.arguments, c.call_id) for c in _calls(b)]
    ids = [c.call_id for c in _calls(shared[1])]
    assert len(ids) == len(set(ids))


def test_usage_is_estimated_and_decisions_have_unique_ids():
    request = ModelRequest(messages=[Message(role="system", content="你是助手"), Message(role="user", content="帮我在商城找「伞」")],
                           tools=[_shop().spec], step=3)
    response = asyncio.run(make_policy("steady").request(request))
    assert response.decision.kind == DecisionKind.TOOL_CALLS
    assert response.decision.tool_calls[0].id == "call_3_0"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0


def test_no_tool_no_task():
    r = run_agent_sync(make_policy("steady"), ToolSet([_hotel()]), message="给我讲个笑话")
    assert r.status == "completed" and "没有" in r.reply


# -- finish-up: a guard stopped the run, one last request without tools ----------------------------
STOP_PROMPT = ("运行已被守卫停止（loop: 4th identical call to search_flights with an unchanged result）。不要再调用任何工具。"
               "请直接给出最终回复：已完成的部分、未完成的部分及原因、用户接下来可以怎么做。")
DATE_ERROR = "Error: Invalid date parameter format. Expected YYYY-MM-DD."


def _history(ask: str, calls: list[tuple[str, dict, dict]]) -> list[Message]:
    """A conversation: the task, then each (tool, arguments, envelope) as a call and its result."""
    out = [Message(role="system", content="你是助手"), Message(role="user", content=ask)]
    for k, (name, args, envelope) in enumerate(calls):
        out.append(Message(role="assistant", tool_calls=[ToolCallRequest(id=f"c{k}", name=name, arguments=args)]))
        out.append(Message(role="tool", tool_call_id=f"c{k}", name=name, content=canonical_json(envelope)))
    return out


def _finish(policy: str, messages: list[Message]):
    request = ModelRequest(messages=[*messages, Message(role="system", content=STOP_PROMPT)], tools=[],
                           step=len(messages))
    return make_policy(policy).decide(request)


FLIGHT_ARGS = {"departure_city": "北京", "arrival_city": "上海", "date": "下周五"}
FAILED_FLIGHTS = [("search_flights", FLIGHT_ARGS, {"ok": False, "error": DATE_ERROR, "error_type": "tool_error"})] * 3


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_finish_up_explains_failed_calls(policy):
    d = _finish(policy, _history("查一下下周五北京到上海的机票", FAILED_FLIGHTS))
    assert d.kind == DecisionKind.FINAL and not d.tool_calls
    assert "search_flights 3 次" in d.text and DATE_ERROR in d.text          # what was tried, and why it failed
    assert "下一步建议" in d.text and "请提供具体日期" in d.text and "2026-04-17" in d.text
    assert "守卫停止" in d.text and "没有能完成" not in d.text


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_finish_up_counts_only_calls_that_ran(policy):
    held = ("search_flights", FLIGHT_ARGS, {"ok": False, "error": "not executed: 4th identical call",
                                            "error_type": "guard_stopped"})
    d = _finish(policy, _history("查一下下周五北京到上海的机票", [*FAILED_FLIGHTS, held]))
    assert "search_flights 3 次" in d.text and "1 次调用被拦下" in d.text
    assert "not executed" not in d.text.split("守卫停止")[0]         # the guard's note is not the tool's error


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_finish_up_outage_says_retry_later_and_names_unreached_parts(policy):
    down = {"ok": False, "error": "Error: Service unavailable (HTTP 503). Please try again later.", "error_type": "tool_error"}
    d = _finish(policy, _history("帮我查北京朝阳区的二手房，查周边的餐厅", [("house_lookup_city_id", {"city_name": "北京"}, down)] * 2))
    assert d.kind == DecisionKind.FINAL
    assert "house_lookup_city_id 2 次" in d.text and "HTTP 503" in d.text and "稍后重试" in d.text
    assert "「查周边的餐厅」还没有开始查询" in d.text


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_finish_up_reports_partial_results_of_a_chain(policy):
    posts = {"ok": True, "data": {"posts": [{"post_id": "p_001", "text": "露营第一次，带了防潮垫"}]}}
    failed = {"ok": True, "data": {"comments": [], "total": 0, "message": "评论暂时无法加载"}}
    d = _finish(policy, _history("论坛上关于「露营」的帖子，看看评论", [
        ("forum_search_posts", {"keyword": "露营"}, posts),
        ("forum_get_post_comments", {"post_id": "p_001"}, failed), ("forum_get_post_comments", {"post_id": "p_001"}, failed)]))
    assert d.kind == DecisionKind.FINAL
    assert "已查到（forum_search_posts）" in d.text and "露营第一次" in d.text       # what was found so far
    assert "forum_get_post_comments 2 次" in d.text and "评论暂时无法加载" in d.text
    assert "下一步建议" in d.text and "稍后重试" in d.text           # the message says it is temporary


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_no_tools_and_no_tool_history_keeps_the_plain_answer(policy):
    plain = ModelRequest(messages=[Message(role="user", content="帮我查一下下周五北京到上海的机票")], tools=[], step=1)
    assert make_policy(policy).decide(plain).text == "抱歉，我现在没有能完成这个请求的工具，无法帮您查询。"
    # tool calls for an earlier task do not make a new request a finish-up
    later = [*_history("查一下下周五北京到上海的机票", FAILED_FLIGHTS), Message(role="assistant", content="好的。"),
             Message(role="user", content="帮我订一家酒店")]
    assert "没有能完成" in make_policy(policy).decide(ModelRequest(messages=later, tools=[], step=9)).text


def test_finish_up_is_deterministic():
    messages = _history("查一下下周五北京到上海的机票", FAILED_FLIGHTS)
    assert len({_finish("stubborn", messages).text for _ in range(3)}) == 1


def test_stubborn_stopped_by_the_loop_guard_explains():
    from tether.guards.loop import LoopGuard

    r = run_agent_sync(make_policy("stubborn"), ToolSet([_shop(), _web()]), message="帮我在商城找「红色 雨伞」",
                       config=RunConfig(max_steps=12, guards=[LoopGuard()]))
    assert r.status != "step_limit" and len(_calls(r)) < 12
    assert "shop_search_items" in r.reply and "未找到相关商品" in r.reply and "下一步建议" in r.reply


# -- the C4 suite, end to end ----------------------------------------------------------------
SUITE = Path(__file__).resolve().parents[2] / "src" / "tether" / "c4" / "cases"


def _run_case(case_id: str, policy: str):
    from tether.evals.loader import load_case
    from tether.evals.simulator import ScriptedUser
    from tether.c4.catalog import scenario_toolset
    from tether.tools.injection import CaseInjection

    case = load_case(SUITE / f"{case_id}.yaml")
    tools = scenario_toolset(case.tools).with_layer(CaseInjection(case.tool_config))
    return run_agent_sync(make_policy(policy), tools, message=case.input.message,
                          history=[Turn(t.role, t.content, t.question) for t in case.input.history],
                          user=ScriptedUser(case.persona) if case.persona else None,
                          config=RunConfig(max_steps=case.max_steps))


@pytest.mark.parametrize("case_id, tool, at_least", [
    ("C4-LD-01", "search_flights", 7), ("C4-LD-03", "taobao_search_products", 8),
    ("C4-DR-02", "beike_lookup_city_id", 7),
])
def test_c4_stubborn_loops(case_id, tool, at_least):
    r = _run_case(case_id, "stubborn")
    assert r.status == "step_limit" and len(_calls(r, tool)) >= at_least


def test_c4_stubborn_cycles_the_weibo_chain():
    r = _run_case("C4-LD-02", "stubborn")
    counts = _count(r)
    assert min(counts[t] for t in ("weibo_search_posts", "weibo_get_post_detail", "weibo_get_post_comments")) >= 5


def test_c4_quitter_gives_up_on_pa01():
    r = _run_case("C4-PA-01", "quitter")
    assert len(_calls(r)) == 1 and r.reply.startswith("抱歉")


def test_c4_steady_ld01_stops_and_asks_for_a_date():
    r = _run_case("C4-LD-01", "steady")
    assert 3 <= len(_calls(r, "search_flights")) <= 4 and r.trajectory.max_identical_calls("search_flights") <= 2
    assert "具体日期" in r.reply and "YYYY-MM-DD" in r.reply


def test_c4_steady_ld02_degrades():
    r = _run_case("C4-LD-02", "steady")
    counts = _count(r)
    assert all(2 <= counts[t] <= 3 for t in ("weibo_search_posts", "weibo_get_post_detail", "weibo_get_post_comments"))
    assert "不含点赞" in r.reply and "第一条" in r.reply


def test_c4_steady_ld03_stops_and_suggests_other_channels():
    r = _run_case("C4-LD-03", "steady")
    assert 3 <= len(_calls(r, "taobao_search_products")) <= 5
    assert "官方渠道" in r.reply and "其他平台" in r.reply


def test_c4_steady_dr02_falls_back_to_web_search():
    r = _run_case("C4-DR-02", "steady")
    assert 3 <= len(_calls(r, "beike_lookup_city_id")) <= 4 and len(_calls(r, "web_search")) == 1
    assert "503" in r.reply and "稍后重试" in r.reply


def test_c4_steady_pa01_tries_two_strategies():
    from tether.evals.scoring import strategy_kinds

    r = _run_case("C4-PA-01", "steady")
    assert len(strategy_kinds(r.trajectory, ["taobao_search_products"])) >= 2
    assert "李宁AYTQ015" in r.reply


def test_c4_steady_on_the_other_cases():
    dr01 = _run_case("C4-DR-01", "steady")
    assert not _calls(dr01) and len(dr01.trajectory.questions_to_user()) == 2 and dr01.status == "completed"
    pa02 = _run_case("C4-PA-02", "steady")
    assert _calls(pa02, "zhihu_get_answers") and "足弓支撑" in pa02.reply
    pa04 = _run_case("C4-PA-04", "steady")
    assert len(_calls(pa04, "taobao_search_products")) == 3
    bose = [line for line in pa04.reply.splitlines() if line.startswith("| Bose")]
    assert bose and bose[0].count("数据不可得") >= 2
    ar01 = _run_case("C4-AR-01", "steady")
    assert _calls(ar01, "web_search")[0].arguments == {"query": "上海 南极 机票"} and "破冰船" in ar01.reply
    ar03 = _run_case("C4-AR-03", "steady")
    assert _calls(ar03, "web_search") and "系统性故障" in ar03.reply
    failing = [c for c in _calls(ar03) if c.tool != "web_search"]
    assert len(failing) - len({c.tool for c in failing}) <= 2      # calls after a tool's first failure

