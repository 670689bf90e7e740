"""``web_search``: a small seeded corpus (data/web.yaml), the universal fallback.

Each document is indexed by grams (``_text.grams``) of its title, snippet and
keywords. A document is returned when it shares at least two of the query's
grams (one for a one-gram query) and covers at least 30% of the query's idf
weight; the best five come back, best first.
"""

from __future__ import annotations

from typing import Any

from ...tools._tool import Tool
from ._text import GramIndex
from ._world import WorldState, ok, schema, text

_MIN_SCORE = 0.3
_TOP = 5


def build(world: WorldState) -> list[Tool]:
    docs: list[dict[str, Any]] = world.data["web"]["docs"]
    index = GramIndex([f"{d['title']} {d['snippet']} {' '.join(d.get('keywords', []))}" for d in docs])

    def web_search(query: str) -> Any:
        ranked = index.rank(query, min_score=_MIN_SCORE)[:_TOP]
        if not ranked:
            return ok({"query": query, "results": [], "message": "没有找到相关网页，请尝试更换关键词"})
        return ok({"query": query, "results": [
            {"title": docs[i]["title"], "snippet": docs[i]["snippet"], "url": docs[i]["url"]} for i, _ in ranked]})

    return [Tool(
        "web_search",
        "网页搜索：用关键词搜索互联网网页，返回标题、摘要和链接；可用于查攻略、参数、价格、常识等，也可在专用工具不可用时作为降级方案。"
        "General web search.",
        schema({"query": text("搜索关键词，如「上海 南极 机票」「Bose QC45 续航」。Search query.")}),
        web_search,
    )]
