"""Rendering tool data as short Chinese text: labels, items, lists, channels."""

from __future__ import annotations

import json
import re
from typing import Any

from ._assess import first_list
from ._lexicon import norm

NA = "数据不可得"
LABELS = {
    "name": "名称", "title": "标题", "text": "内容", "content": "内容", "author": "作者", "price": "价格",
    "rating": "评分", "sales": "销量", "shop": "店铺", "is_official": "官方店", "noise_cancellation": "降噪",
    "battery_life": "续航", "weight": "重量", "likes": "点赞", "like_count": "点赞", "voteup_count": "赞同",
    "votes": "赞同", "comment_count": "评论数", "comments_count": "评论数", "reposts": "转发",
    "publish_time": "发布时间", "created_time": "时间", "address": "地址", "district": "区域",
    "total_price_wan": "总价(万)", "unit_price": "单价", "area": "片区", "area_sqm": "面积(㎡)", "layout": "户型", "community": "小区",
    "airline": "航空公司", "flight_no": "航班号", "departure_time": "起飞", "arrival_time": "到达",
    "duration_minutes": "时长(分钟)", "snippet": "摘要", "summary": "简介", "highlights": "亮点",
    "region": "地区", "specs": "规格", "gpu": "显卡", "cpu": "处理器", "ram": "内存", "note": "备注",
    "message": "说明", "distance_m": "距离(米)", "follower_count": "关注", "answer_count": "回答数",
    "country": "国家", "best_season": "最佳季节", "budget_per_7_days_cny": "7天预算(元)",
    "estimated_budget_cny": "预估花费(元)", "crowd": "人流", "activities": "活动", "cautions": "注意事项",
    "description": "简介", "cost_breakdown_cny": "费用构成", "day": "第几天", "items": "安排",
    "scenery_score": "风景评分", "tags": "标签", "visa": "签证", "gateway": "交通", "city": "城市",
    "date": "日期", "temperature": "气温", "weather": "天气", "duration": "时长", "distance": "距离",
}
_SKIP = {"id", "url", "link", "image", "images", "_id"}
_CHANNELS = (
    (r"机票|航班|飞", "航空公司官网或官方 App", "携程、飞猪、去哪儿等其他渠道"),
    (r"二手房|房源|租房|买房|小区", "贝壳/链家官网或 App（服务恢复后）", "安居客、58同城等其他平台，或线下中介门店"),
    (r"餐厅|美食|吃", "商家官方渠道", "大众点评、美团等其他平台"),
    (r"路线|地铁|公交|导航", "城市地铁官网/官方 App", "高德地图、百度地图等其他平台"),
    (r"微博|知乎|评论|回答", "该平台的官方 App 内", "其他社区平台"),
    (r"商品|淘宝|买|配件|款|耳机|鞋|笔记本", "官方渠道（品牌官网、官方 App、官方旗舰店，或线下门店、服务中心）",
     "京东、拼多多等其他平台"),
)


def channels(text: str) -> tuple[str, str]:
    for pattern, official, others in _CHANNELS:
        if re.search(pattern, text):
            return official, others
    return "官方渠道", "其他平台"


def label(key: str) -> str:
    return LABELS.get(key, key)


def _value(v: Any) -> str:
    if v is None:
        return NA
    if isinstance(v, bool):
        return "是" if v else "否"
    if isinstance(v, dict):
        return "，".join(f"{label(k)} {_value(x)}" for k, x in v.items() if k not in _SKIP)
    if isinstance(v, list):
        return "、".join(_value(x) for x in v[:5] if not isinstance(x, dict))
    text = str(v)
    return text if len(text) <= 90 else text[:88] + "…"


_FIRST = ("name", "title", "flight_no", "airline", "departure_time", "arrival_time", "question", "author", "text",
          "content", "snippet", "price", "total_price_wan", "unit_price", "layout", "area_sqm", "day", "items")


def _ordered(obj: dict[str, Any]) -> list[str]:
    return sorted(obj, key=lambda k: (_FIRST.index(k) if k in _FIRST else len(_FIRST)))


def render(obj: dict[str, Any], limit: int = 7) -> str:
    parts = []
    for key in _ordered(obj):
        v = obj[key]
        if key.endswith("_en"):
            continue
        if key.lower() in _SKIP or key.lower().endswith("_id") or (isinstance(v, list) and v and isinstance(v[0], dict)):
            continue
        parts.append(f"{label(key)}：{_value(v)}")
        if len(parts) >= limit:
            break
    return "；".join(parts)


def describe(data: Any, limit: int = 3) -> list[str]:
    found = first_list(data)
    if found:
        key, items = found
        if len(items) <= 10 and all(len(render(x)) <= 80 for x in items):
            limit = max(limit, len(items))
        total = data.get("total") if isinstance(data, dict) else None
        head = f"共 {total} 条" if isinstance(total, int) and total > len(items[:limit]) else f"{len(items)} 条"
        lines = [f"（{head}{'，列出前 ' + str(limit) + ' 条' if len(items) > limit else ''}）"]
        lines += [f"{k}. {render(x)}" for k, x in enumerate(items[:limit], 1)]
        return lines
    if isinstance(data, dict):
        return [render(data, limit=10)]
    return [_value(data)]


def mentions_filter(filters: tuple[str, ...], data: Any) -> bool:
    blob = norm(json.dumps(data, ensure_ascii=False)).replace(" ", "")
    return any(norm(f).replace(" ", "") in blob for f in filters)


def _excerpt(text: str, term: str, width: int = 60) -> str:
    i = text.find(term)
    if i < 0:
        return text[:width * 2]
    start = max(0, i - width)
    return ("…" if start else "") + text[start:i + len(term) + width] + ("…" if i + len(term) + width < len(text) else "")
