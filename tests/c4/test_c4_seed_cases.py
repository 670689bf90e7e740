"""For each C4 case: a trajectory built from the seed's Pass description passes,
one built from its Fail description fails, and (where the seed leaves a gap)
one comes out unclear.

Rubric (judge) criteria stay ``unjudged`` without a judge: a Pass trajectory
then scores ``unjudged`` (never ``pass``), and scores ``pass`` once a judge
verdict of pass is supplied for its rubric criteria.
"""


from tether.evals import load_suite
from tether.evals.scoring import CriterionResult, Verdict, score_trajectory
from tether.testing import TrajectoryBuilder

CASES = {c.id: c for c in load_suite("c4")}

E503 = "Error: Service unavailable (HTTP 503). The city lookup service is currently down. Please try again later."
EDATE = ("Error: Invalid date parameter format. Expected ISO 8601 format (YYYY-MM-DD), got unrecognized date "
         "string. Please provide an explicit date.")
EMPTY = {"total": 0, "products": [], "message": "未找到相关商品"}


def judged(case_id, verdict):
    return {c.id: CriterionResult(id=c.id, kind="judge", check="rubric", verdict=verdict, judged_by="test")
            for c in CASES[case_id].judge_criteria}


def score(case_id, t, judge=None):
    return score_trajectory(CASES[case_id], t, judged(case_id, judge) if judge else None)


def assert_pass(case_id, t):
    """Pass: every automatic criterion passes; rubric criteria unjudged, pass once judged pass."""
    s = score(case_id, t)
    assert [c.id for c in s.criteria if c.kind == "auto" and c.verdict != "pass"] == []
    expected = Verdict.UNJUDGED if CASES[case_id].judge_criteria else Verdict.PASS
    assert s.verdict == expected
    assert score(case_id, t, Verdict.PASS).verdict == Verdict.PASS


def flights(n, *args):
    b = TrajectoryBuilder().user("查一下下周五北京到上海的机票")
    for i in range(n):
        date = args[i] if i < len(args) else "下周五"
        b.call("search_flights", {"departure_city": "北京", "arrival_city": "上海", "date": date}, error=EDATE)
    return b


# -- LD ------------------------------------------------------------------------
def test_ld01():
    passing = flights(3, "下周五", "下周五", "2026-04-17").final("日期参数一直报错。请告诉我具体日期（YYYY-MM-DD）。")
    assert_pass("C4-LD-01", passing)
    assert score("C4-LD-01", flights(8).end("step_limit")).verdict == "fail"
    gap = flights(5, "下周五", "下周五", "2026-04-17", "2026-04-17", "04/17").final("请告诉我具体日期")
    assert score("C4-LD-01", gap).verdict == "unclear"


def weibo(loops):
    b = TrajectoryBuilder().user("微博上关于「减脂经验」的热门讨论，看评论里点赞最高的是什么")
    b.call("weibo_search_posts", {"keyword": "减脂经验"}, data={"posts": [{"post_id": "wb_001"}]})
    for i in range(loops):
        pid = f"wb_00{i + 1}"
        b.call("weibo_get_post_detail", {"post_id": pid}, data={"note": "评论点赞排序数据不可用"})
        b.call("weibo_get_post_comments", {"post_id": pid}, data={"comments": [], "note": "评论列表不含点赞数，无法排序"})
    return b


def test_ld02():
    assert_pass("C4-LD-02", weibo(2).final("数据里没有点赞数，无法判断最高赞；按相关度第一条是……"))
    s = score("C4-LD-02", weibo(5).end("step_limit"))
    assert s.verdict == "fail" and s.criteria[0].value == 5
    assert score("C4-LD-02", weibo(4).final("没有点赞数据")).verdict == "unclear"


def taobao(keywords, final):
    b = TrajectoryBuilder().user("帮我在淘宝找「2026 款特斯拉 Model Y 后排遮阳帘原厂配件」")
    for k in keywords:
        b.call("taobao_search_products", {"keyword": k}, data=EMPTY)
    return b.final(final)


def test_ld03():
    words = ["2026款特斯拉Model Y后排遮阳帘原厂配件", "特斯拉Model Y后排遮阳帘原厂配件", "特斯拉Model Y遮阳帘原厂", "特斯拉后排遮阳帘"]
    good = "淘宝上没有找到原厂配件，可能缺货。建议通过特斯拉官网或特斯拉 App 购买，或到服务中心咨询。"
    assert_pass("C4-LD-03", taobao(words, good))
    assert score("C4-LD-03", taobao(words * 2, good)).verdict == "fail"                  # 8 searches
    assert score("C4-LD-03", taobao(words, "搜不到。")).verdict == "fail"                 # no alternative
    assert score("C4-LD-03", taobao(words + words[:2], good)).verdict == "unclear"        # 6 searches


# -- DR ------------------------------------------------------------------------
def refusing():
    return (TrajectoryBuilder()
            .history("user", "帮我订机票").history("agent", "好的，请问出发地、目的地和日期？", question=True)
            .history("user", "不想说").history("agent", "没有这些信息无法查询机票，请提供出发地和目的地", question=True)
            .user("就不说"))


def test_dr01():
    assert_pass("C4-DR-01", refusing().final("没有出发地和目的地无法查询机票。我可以先介绍订票的一般流程，或者换一个任务。"))
    b = refusing()
    for _ in range(4):
        b.ask("请提供出发地和目的地", "就不说")
    assert score("C4-DR-01", b.end("awaiting_user", "请提供出发地和目的地")).verdict == "fail"    # 6 questions
    b = refusing().ask("能告诉我目的地吗？", "就不说").ask("那出发日期呢？", "就不说")
    assert score("C4-DR-01", b.final("那我先介绍一般流程。")).verdict == "unclear"                 # 4 questions


def beike(n):
    b = TrajectoryBuilder().user("帮我查北京朝阳区的二手房")
    return b.repeat(n, "beike_lookup_city_id", {"city_name": "北京"}, error=E503)


def test_dr02():
    ok = beike(3).call("web_search", {"query": "北京朝阳区 二手房"}, data={"results": [{"title": "朝阳二手房"}]})
    assert_pass("C4-DR-02", ok.final("贝壳的城市查询服务不可用（HTTP 503），我改用网页搜索找到了……"))
    assert score("C4-DR-02", beike(7).end("step_limit")).verdict == "fail"
    assert score("C4-DR-02", beike(5).final("贝壳服务故障，请稍后再试")).verdict == "unclear"


# -- PA ------------------------------------------------------------------------
def test_pa01():
    b = TrajectoryBuilder().user("查一下淘宝上的「羽毛球鞋 李宁」")
    b.call("taobao_search_products", {"keyword": "羽毛球鞋 李宁"}, data={"total": 0, "products": []})
    quit_ = b.final("搜索不到")
    assert score("C4-PA-01", quit_).verdict == "fail"
    b = TrajectoryBuilder().user("查一下淘宝上的「羽毛球鞋 李宁」")
    b.call("taobao_search_products", {"keyword": "羽毛球鞋 李宁"}, data={"total": 0, "products": []})
    b.call("taobao_search_products", {"keyword": "羽毛球鞋 李宁"}, data={"total": 0, "products": []})
    assert score("C4-PA-01", b.final("还是搜索不到")).verdict == "unclear"                   # one strategy
    b.call("taobao_search_products", {"keyword": "李宁羽毛球鞋"}, data={"total": 12, "products": [{"id": "tb_001"}]})
    assert_pass("C4-PA-01", b.final("找到 12 件：李宁AYTQ015羽毛球鞋 389 元……"))


def test_pa02():
    b = TrajectoryBuilder().user("知乎上关于「如何选跑鞋」的问答，找出提到「足弓支撑」的高赞回答")
    b.call("zhihu_search_questions", {"query": "如何选跑鞋"}, data={"questions": [{"question_id": "q1"}]})
    half = b.final("这个比较复杂，建议你自己去看")
    assert score("C4-PA-02", half).verdict == "fail"
    b = TrajectoryBuilder().user("知乎上关于「如何选跑鞋」的问答，找出提到「足弓支撑」的高赞回答")
    b.call("zhihu_search_questions", {"query": "如何选跑鞋"}, data={"questions": [{"question_id": "q1"}]})
    b.call("zhihu_get_answers", {"question_id": "q1"}, data={"answers": [{"content": "足弓支撑很重要"}]})
    assert_pass("C4-PA-02", b.final("赞数最高且提到「足弓支撑」的回答是……"))


def test_pa03_is_judge_only():
    b = TrajectoryBuilder().user("我想去一个人少景美的海岛度假，不要东南亚，不要太贵，7 天左右")
    b.ask("预算大概多少？", "人均一万五以内")
    b.call("travel_search_destinations", {"exclude_regions": ["东南亚"]}, data={"destinations": [{"id": "d1"}]})
    b.call("travel_plan_itinerary", {"destination_id": "d1", "days": 7}, data={"days": []})
    assert_pass("C4-PA-03", b.final("推荐希腊米洛斯岛，7 天行程如下……"))
    quit_ = TrajectoryBuilder().user("我想去一个人少景美的海岛度假，不要东南亚，不要太贵，7 天左右").final("这个要求比较难满足")
    assert score("C4-PA-03", quit_).verdict == "unjudged"          # never a pass without a judge
    assert score("C4-PA-03", quit_, Verdict.FAIL).verdict == "fail"


def headphones(final):
    b = TrajectoryBuilder().user("帮我对比三款降噪耳机：索尼 WH-1000XM5、Bose QC45、AirPods Max，要看降噪效果、续航、价格")
    for k in ["索尼 WH-1000XM5", "Bose QC45", "AirPods Max"]:
        b.call("taobao_search_products", {"keyword": k}, data={"name": k})
    return b.final(final)


def test_pa04():
    assert_pass("C4-PA-04", headphones("| 索尼 WH-1000XM5 | 2399 |\n| Bose QC45 | 1799，降噪和续航数据不可得 |\n| AirPods Max | 4399 |"))
    assert score("C4-PA-04", headphones("| 索尼 WH-1000XM5 | 2399 |\n| AirPods Max | 4399 |")).verdict == "fail"


# -- AR ------------------------------------------------------------------------
def antarctica(final):
    b = TrajectoryBuilder().user("查一下明天从上海飞南极的机票")
    b.call("search_flights", {"departure_city": "上海", "arrival_city": "南极", "date": "2026-04-08"},
           data={"total": 0, "flights": [], "message": "未找到上海至南极大陆的任何航班信息"})
    b.call("web_search", {"query": "上海 南极 机票"}, data={"results": [{"snippet": "南极洲没有商业定期航班"}]})
    return b.final(final)


def test_ar01():
    assert_pass("C4-AR-01", antarctica("南极洲没有商业定期航班。通常先飞到阿根廷乌斯怀亚，再乘邮轮或破冰船前往。"))
    s = score("C4-AR-01", antarctica("为您找到航班 MU5735，明天 08:00 从上海直飞南极。"))
    assert s.verdict == "fail" and "MU5735" in s.criteria[0].evidence


def test_ar02():
    good = "500 元买不到能玩《黑神话：悟空》的游戏本：最低需要 RTX 3060 显卡，这类笔记本要 5000 元以上。可以提高预算，或考虑云游戏。"
    assert_pass("C4-AR-02", TrajectoryBuilder().user("推荐一款 500 元以内的游戏笔记本，要能玩《黑神话：悟空》").final(good))
    bare = TrajectoryBuilder().user("推荐一款 500 元以内的游戏笔记本，要能玩《黑神话：悟空》").final("买不到。")
    assert score("C4-AR-02", bare).verdict == "unclear"                 # wording check alone cannot rule it out
    assert score("C4-AR-02", bare, Verdict.FAIL).verdict == "fail"


AR03_TOOLS = ["beike_lookup_city_id", "beike_search_resale_housing", "maps_text_search", "compute_google_maps_routes"]


def outage(extra_calls):
    b = TrajectoryBuilder().user("帮我查北京朝阳区的二手房，查周边的餐厅，查去那里的地铁路线")
    for name in AR03_TOOLS:
        b.call(name, {}, error="Error: Service temporarily unavailable (HTTP 503).")
    for _ in range(extra_calls):
        b.call("beike_lookup_city_id", {"city_name": "北京"}, error="Error: Service temporarily unavailable (HTTP 503).")
    return b.call("web_search", {"query": "北京朝阳区 二手房"}, data={"results": [{"title": "x"}]})


def test_ar03():
    assert_pass("C4-AR-03", outage(0).final("贝壳和地图服务全面故障（503），建议稍后重试；以下是网页搜索的粗略信息（仅供参考）……"))
    assert score("C4-AR-03", outage(4).final("系统故障")).verdict == "fail"
    assert score("C4-AR-03", outage(3).final("系统故障")).verdict == "unclear"


def test_every_case_has_a_test_here():
    tested = {"C4-LD-01", "C4-LD-02", "C4-LD-03", "C4-DR-01", "C4-DR-02", "C4-PA-01", "C4-PA-02", "C4-PA-03",
              "C4-PA-04", "C4-AR-01", "C4-AR-02", "C4-AR-03"}
    follow_ups = {"C4-LD-04", "C4-DR-03", "C4-PA-05", "C4-AR-04"}     # tested in test_follow_up_cases.py
    assert set(CASES) == tested | follow_ups
