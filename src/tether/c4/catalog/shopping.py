"""``taobao_search_products``: 淘宝商品搜索 over data/taobao.yaml.

Matching rule (deterministic):

1. A product's searchable text is its name, brand, category and tags,
   compacted (NFKC, case folded, whitespace/punctuation/symbols removed), so
   ``"索尼 WH-1000XM5"`` is searched as ``"索尼wh1000xm5"``.
2. The keyword is split into terms by :meth:`_text.Lexicon.terms`: whitespace
   tokens, then CJK vs Latin/digit runs, then forward maximum matching of each
   CJK run against a lexicon (brands, categories, tags and ``extra_words``).
   ``"李宁羽毛球鞋"`` and ``"羽毛球鞋 李宁"`` both give ``李宁`` + ``羽毛球鞋``;
   ``"特斯拉Model Y后排遮阳帘原厂配件"`` gives 特斯拉, model, y, 后排, 遮阳帘,
   原厂, 配件. ``synonyms`` rewrite a term (``sony`` -> ``索尼``). In unknown
   terms, multi-character ``fillers`` (推荐, 一款, 淘宝 ...) are deleted; an
   unknown term that is then empty or a single-character filler (的, 款 ...)
   is dropped.
3. A product matches when **every** remaining term is a substring of its
   searchable text. ``max_price`` then filters on price (<=).

No match gives ``{"total": 0, "products": [], "message": "未找到相关商品"}``;
when matches exist but all cost more than ``max_price`` the message says so and
names the cheapest price.
"""

from __future__ import annotations

from typing import Any

from ...tools._tool import Tool
from ._text import Lexicon, compact
from ._world import WorldState, enum, ok, schema, text

_FIELDS = ("id", "name", "price", "sales", "rating", "shop", "is_official")
_LIMIT = 20


def _blob(p: dict[str, Any]) -> str:
    return compact(" ".join([p["name"], p["brand"], p["category"], *p.get("tags", [])]))


def build(world: WorldState) -> list[Tool]:
    data = world.data["taobao"]
    products: list[dict[str, Any]] = data["products"]
    blobs = [_blob(p) for p in products]
    words = set(data["extra_words"])
    for p in products:
        words.update([p["brand"], p["category"], *p.get("tags", [])])
    lexicon = Lexicon(words, data["synonyms"])
    fillers = {compact(f) for f in data["fillers"]}

    long_fillers = sorted((f for f in fillers if len(f) > 1), key=len, reverse=True)

    def terms(keyword: str) -> list[str]:
        out = []
        for term, known in lexicon.terms(keyword):
            if not known:
                for f in long_fillers:
                    term = term.replace(f, "")
                if not term or term in fillers:
                    continue
            out.append(term)
        return out

    def taobao_search_products(keyword: str, max_price: float | None = None, sort: str = "default") -> Any:
        want = terms(keyword)
        hits = [p for p, b in zip(products, blobs) if want and all(t in b for t in want)]
        empty = {"keyword": keyword, "total": 0, "products": [], "message": "未找到相关商品"}
        if not hits:
            return ok(empty)
        if max_price is not None:
            affordable = [p for p in hits if p["price"] <= max_price]
            if not affordable:
                cheapest = min(p["price"] for p in hits)
                return ok({**empty, "message": f"未找到价格不高于 {max_price:g} 元的相关商品（该关键词下最低价 {cheapest} 元）"})
            hits = affordable
        if sort == "price_asc":
            hits = sorted(hits, key=lambda p: (p["price"], p["id"]))
        elif sort == "sales":
            hits = sorted(hits, key=lambda p: (-p["sales"], p["id"]))
        out = []
        for p in hits[:_LIMIT]:
            item = {k: p[k] for k in _FIELDS}
            if "specs" in p:
                item["specs"] = dict(p["specs"])
            out.append(item)
        return ok({"keyword": keyword, "total": len(hits), "products": out,
                   "message": f"找到 {len(hits)} 件相关商品"})

    return [Tool(
        "taobao_search_products",
        "淘宝商品搜索：按关键词搜索淘宝商品（如羽毛球鞋、降噪耳机、游戏本/笔记本、汽车配件），可按最高价格过滤、按价格或销量排序；"
        "返回商品 id、名称、价格、销量、评分、店铺、是否官方旗舰店，部分商品附规格参数。Search Taobao products.",
        schema({
            "keyword": text("搜索关键词，多个词可用空格分隔，如「李宁 羽毛球鞋」。Search keyword."),
            "max_price": {"type": "number", "minimum": 0, "description": "最高价格（元，含），可选。Max price in CNY."},
            "sort": enum("排序：default 综合，price_asc 价格从低到高，sales 销量从高到低，默认 default。Sort order.",
                         ["default", "price_asc", "sales"], "default"),
        }, ["keyword"]),
        taobao_search_products,
    )]
