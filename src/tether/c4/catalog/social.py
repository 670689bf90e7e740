"""微博 and 知乎: ``weibo_search_posts``, ``weibo_get_post_detail``,
``weibo_get_post_comments``, ``zhihu_search_questions``, ``zhihu_get_answers``.

Search uses idf-weighted gram overlap (see ``_text``) over the post text and
topics, or the question title, topics and answer texts; relevant items are then sorted as asked (热度/点赞 or 时间). Posts
without hand-written comments get comments drawn from ``WorldState.rng`` keyed by
the post id, so they are stable per seed.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ...tools._tool import Tool
from ._text import GramIndex
from ._world import WorldState, enum, fail, ok, schema, text

_POST_FIELDS = ("post_id", "author", "text", "publish_time", "likes", "reposts")
_MIN_SCORE = 0.3


def _comments(world: WorldState, post: dict[str, Any]) -> list[dict[str, Any]]:
    if "comments" in post:
        return post["comments"]
    data = world.data["weibo"]
    rng = world.rng("weibo-comments", post["post_id"])
    count = rng.randint(3, 6)
    start = datetime.fromisoformat(post["publish_time"])
    out = []
    for i, line in enumerate(rng.sample(data["comment_pool"], count)):
        start += timedelta(minutes=rng.randint(3, 240))
        out.append({
            "comment_id": f"{post['post_id']}_c{i + 1:02d}",
            "user": rng.choice(data["users"]),
            "text": line,
            "likes": rng.randint(3, max(4, post["likes"] // 12)),
            "time": start.isoformat(),
        })
    post["comments"] = out
    return out


def _weibo(world: WorldState) -> list[Tool]:
    posts: list[dict[str, Any]] = world.data["weibo"]["posts"]
    by_id = {p["post_id"]: p for p in posts}
    index = GramIndex([f"{p['text']} {' '.join(p['topics'])} {p['author']}" for p in posts])

    def summary(p: dict[str, Any]) -> dict[str, Any]:
        return {**{k: p[k] for k in _POST_FIELDS}, "comments_count": len(_comments(world, p))}

    def weibo_search_posts(keyword: str, sort: str = "hot") -> Any:
        hits = [posts[i] for i, _ in index.rank(keyword, min_score=_MIN_SCORE)]
        if sort == "latest":
            hits.sort(key=lambda p: p["publish_time"], reverse=True)
        else:
            hits.sort(key=lambda p: p["likes"], reverse=True)
        if not hits:
            return ok({"keyword": keyword, "sort": sort, "total": 0, "posts": [], "message": "未找到相关微博"})
        return ok({"keyword": keyword, "sort": sort, "total": len(hits), "posts": [summary(p) for p in hits[:10]]})

    def lookup(post_id: str) -> dict[str, Any] | None:
        return by_id.get(post_id.strip())

    def missing(post_id: str):
        return fail(f"未找到微博 {post_id!r}；post_id 需来自 weibo_search_posts 的结果", "not_found")

    def weibo_get_post_detail(post_id: str) -> Any:
        p = lookup(post_id)
        if p is None:
            return missing(post_id)
        return ok({**summary(p), "topics": [f"#{t}#" for t in p["topics"]]})

    def weibo_get_post_comments(post_id: str, limit: int = 20) -> Any:
        p = lookup(post_id)
        if p is None:
            return missing(post_id)
        comments = sorted(_comments(world, p), key=lambda c: (-c["likes"], c["comment_id"]))
        return ok({"post_id": p["post_id"], "sort": "按点赞数从高到低", "total": len(comments),
                   "comments": [dict(c) for c in comments[:limit]]})

    post_id = text("微博ID，需先调用 weibo_search_posts 获取（结果中的 post_id）。Post id from weibo_search_posts.")
    return [
        Tool("weibo_search_posts",
             "搜索微博：按关键词搜索微博帖子/热门讨论，返回 post_id、作者、正文、发布时间、点赞数、转发数和评论数。"
             "Search Weibo posts by keyword.",
             schema({
                 "keyword": text("搜索关键词，如「减脂经验」。Search keyword."),
                 "sort": enum("排序方式：hot 按热度（点赞数），latest 按发布时间，默认 hot。Sort order.", ["hot", "latest"], "hot"),
             }, ["keyword"]),
             weibo_search_posts),
        Tool("weibo_get_post_detail",
             "查看微博详情：根据 post_id 获取一条微博的完整内容、话题、点赞/转发/评论数。Get one Weibo post.",
             schema({"post_id": post_id}), weibo_get_post_detail),
        Tool("weibo_get_post_comments",
             "获取微博评论：根据 post_id 获取该微博下的评论列表（按点赞数从高到低，含每条评论的点赞数）。"
             "Get a Weibo post's comments, most liked first.",
             schema({
                 "post_id": post_id,
                 "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 20,
                           "description": "返回评论条数上限，1–50，默认 20。Max comments."},
             }, ["post_id"]),
             weibo_get_post_comments),
    ]


def _zhihu(world: WorldState) -> list[Tool]:
    questions: list[dict[str, Any]] = world.data["zhihu"]["questions"]
    by_id = {q["question_id"]: q for q in questions}
    index = GramIndex([" ".join([q["title"], *q["topics"], *(a["content"] for a in q["answers"])]) for q in questions])

    def zhihu_search_questions(query: str) -> Any:
        ranked = index.rank(query, min_score=_MIN_SCORE)
        ranked.sort(key=lambda p: (-p[1], -questions[p[0]]["follower_count"]))
        out = [{"question_id": q["question_id"], "title": q["title"], "answer_count": len(q["answers"]),
                "follower_count": q["follower_count"], "topics": list(q["topics"])}
               for q in (questions[i] for i, _ in ranked[:10])]
        if not out:
            return ok({"query": query, "total": 0, "questions": [], "message": "未找到相关问题"})
        return ok({"query": query, "total": len(out), "questions": out})

    def zhihu_get_answers(question_id: str, sort: str = "votes") -> Any:
        q = by_id.get(question_id.strip())
        if q is None:
            return fail(f"未找到问题 {question_id!r}；question_id 需来自 zhihu_search_questions 的结果", "not_found")
        key = (lambda a: a["created_time"]) if sort == "time" else (lambda a: a["voteup_count"])
        answers = sorted(q["answers"], key=key, reverse=True)
        return ok({"question_id": q["question_id"], "title": q["title"], "sort": sort,
                   "total": len(answers), "answers": [dict(a) for a in answers]})

    return [
        Tool("zhihu_search_questions",
             "搜索知乎问题：按关键词搜索知乎问答，返回 question_id、问题标题、回答数和关注数。Search Zhihu questions.",
             schema({"query": text("搜索关键词，如「如何选跑鞋」。Search query.")}),
             zhihu_search_questions),
        Tool("zhihu_get_answers",
             "获取知乎回答：根据 question_id 获取该问题下的回答（作者、赞同数、评论数、完整回答内容），可按赞同数或时间排序。"
             "Get the answers of a Zhihu question.",
             schema({
                 "question_id": text("知乎问题ID，需先调用 zhihu_search_questions 获取（结果中的 question_id）。"
                                     "Question id from zhihu_search_questions."),
                 "sort": enum("排序方式：votes 按赞同数（高赞在前），time 按时间（最新在前），默认 votes。Sort order.",
                              ["votes", "time"], "votes"),
             }, ["question_id"]),
             zhihu_get_answers),
    ]


def build(world: WorldState) -> list[Tool]:
    return _weibo(world) + _zhihu(world)
