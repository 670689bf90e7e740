"""What the policies say: questions, final answers, explanations (Chinese).

Everything is rendered from the data the tools returned and the calls the
program made; nothing is invented. Missing fields are written 「数据不可得」.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ._assess import Status, first_list
from ._extract import core_words, resolve_date
from ._lexicon import bigrams, norm
from ._render import _SKIP, NA, _excerpt, _value, channels, describe, label, mentions_filter, render

__all__ = ["compose", "deadlock_text", "no_tool", "question_text", "quit_text"]

if TYPE_CHECKING:  # pragma: no cover
    from ._planner import Goal, Param
    from ._program import GoalOutcome, Program, Step


def _calls_text(p: Program, tool: str, start: int, end: int) -> str:
    calls = [c for c in p.replay.calls[start:end] if c.name == tool]
    keys = [k for k in calls[0].arguments if any(c.arguments.get(k) != calls[0].arguments.get(k) for c in calls)] if calls else []
    shown = keys or [k for k in (calls[0].arguments if calls else {})][:None if len(calls) > 1 else 1]
    seen: dict[str, int] = {}
    for c in calls:
        key = "、".join(f"{k}=「{c.arguments.get(k, '（不填）')}」" for k in shown)
        seen[key] = seen.get(key, 0) + 1
    detail = "，".join(f"{k}" + (f" ×{n}" if n > 1 else "") for k, n in seen.items())
    return f"我调用了 {tool} {len(calls)} 次（{detail}）"


# -- questions ----------------------------------------------------------------------
def question_text(p: Program, goal: Goal, hard: list[Param], soft: bool) -> str:
    what = (core_words(goal.clause) if goal.clause else p.task.core) or "完成查询"
    parts = []
    if hard:
        parts.append(f"请问您的{_join([h.label for h in hard])}{'分别' if len(hard) > 1 else ''}是？")
    if soft:
        parts.append("请问您的预算大概是多少？")
    return f"好的，为了帮您查询{what}，" + "".join(parts)


def _join(words: list[str]) -> str:
    words = list(dict.fromkeys(words))
    return words[0] if len(words) == 1 else "、".join(words[:-1]) + "和" + words[-1]


def deadlock_text(p: Program, goal: Goal, hard: list[Param], refusals: int) -> str:
    labels = _join([h.label for h in hard]) if hard else "必要信息"
    what = p.task.core or "这个任务"
    official, others = channels(p.task.request + what)
    asked = len(p.replay.questions)
    return (
        f"明白，您不方便提供{labels}，我就不再追问了（已经问过 {asked} 次，您 {refusals} 次表示不想说）。\n"
        f"不过，没有{labels}，我无法帮您查询或预订{what}：{goal.main} 这类查询必须有这些信息才能进行。\n"
        "您可以考虑：\n"
        f"1. 了解一般流程：先确定{labels} → 在{official}，或{others}查询、比较时间和价格 → 选定后填写信息并支付完成预订；\n"
        f"2. 想好后随时告诉我{labels}，我马上帮您查；\n"
        "3. 或者换一个任务，我也可以帮您做别的事情。"
    )


def quit_text(p: Program, step: Step) -> str:
    a = step.assessment
    if a.status == Status.ERROR:
        return f"抱歉，工具出错（{step.tool}：{a.reason[:80]}），无法完成。"
    return "抱歉，没有找到相关结果，无法完成。"


def no_tool(p: Program) -> str:
    return "抱歉，我现在没有能完成这个请求的工具，无法帮您查询。"


# -- the final answer --------------------------------------------------------------------
def compose(p: Program) -> str:
    lines: list[str] = []
    down = sorted(p.outage_tools())
    if len(down) >= 2:
        lines.append(f"注意：多个工具（{'、'.join(down)}）同时报告服务不可用（如 HTTP 503），说明后端出现了系统性故障"
                     + ("。" if p.stopped is not None else "；我没有反复调用这些失败的工具，而是改用网页搜索降级。"))
    items = [o for o in p.outcomes if o.item is not None]
    if items:
        lines += comparison(p, items)
        lines += [x for o in items if o.web is not None for x in web_lines(o.web)]
    for o in p.outcomes:
        if o.item is not None:
            continue
        lines += outcome_lines(p, o) if o.steps and o.failed is None else failure_lines(p, o)
        if o.web is not None:
            lines += web_lines(o.web)
    if p.stopped is not None:
        lines += stopped_lines(p)
    lines += next_steps(p)
    return "\n".join(lines).strip()


def stopped_lines(p: Program) -> list[str]:
    """A finish-up answer: the run was stopped; what did not run, what was not reached."""
    out = []
    if not p.outcomes:
        out.append("这次还没有拿到任何工具结果。")
    if p.untried:
        out.append(f"请求中的「{'」「'.join(p.untried)}」还没有开始查询。")
    held = "；".join(f"{tool} 还有 {n} 次调用被拦下、没有执行" for tool, n in p.held.items())
    stop = f"本次运行已被守卫停止（{p.stopped}）" if p.stopped else "本次运行已停止"
    out.append(f"{stop}，所以我没有再调用工具" + (f"：{held}" if held else "") + "。")
    return out


def _subject(p: Program, o: GoalOutcome) -> str:
    return o.item or (p.task.query(o.goal.clause) if o.goal.clause else p.task.subject)


def outcome_lines(p: Program, o: GoalOutcome) -> list[str]:
    out = [f"关于「{_subject(p, o)}」："]
    first, last = o.steps[0], o.steps[-1]
    before = [c for c in p.replay.calls if c.name == first.tool]
    if len(before) > 1 and before[0].assessment.status.failed and first.assessment.status != Status.INSUFFICIENT:
        out.append(f"（{_calls_text(p, first.tool, 0, len(p.replay.calls))}：前几次没有结果"
                   f"{'（「' + before[0].assessment.reason + '」）' if before[0].assessment.reason else ''}，"
                   f"重试并调整参数后拿到了结果。）")
    if o.relaxed:
        out += relaxed_lines(p, o)
        return out
    if o.limited:
        notes = [f"{s.tool}：「{s.assessment.reason}」" for s in o.steps if s.assessment.status == Status.INSUFFICIENT]
        chain = " → ".join(dict.fromkeys(s.tool for s in o.steps))
        out.append(f"我按 {chain} 查了 {o.passes} 轮，但返回的数据本身缺少所需信息：" + "；".join(dict.fromkeys(notes)) + "。")
        out.append("所以按现有数据无法准确回答您的问题（数据本身不包含所需的字段）；重复调用也不会得到新数据，"
                   "我停止了重试，改用已有数据给出降级结果：")
        found = first_list(first.assessment.data)
        if found:
            out.append("以搜索结果第一条（默认相关度最高）为准：" + render(found[1][0]))
        for s in o.steps[1:]:
            out += [f"{s.tool}："] + describe(s.assessment.data)
        return out
    if p.task.filters and mentions_filter(p.task.filters, last.assessment.data):
        out += filter_lines(p, o)
        return out
    for s in o.steps:
        out += [f"{s.tool}："] + describe(s.assessment.data, limit=3)
        if s.assessment.status == Status.PARTIAL:
            out.append(f"（{'、'.join(label(f) for f in s.assessment.null_fields)}：{NA}"
                       f"{'，' + s.assessment.reason if s.assessment.reason else ''}）")
    if p.task.filters:
        out.append(f"查看过的结果里没有找到提到「{'」「'.join(p.task.filters)}」的内容。")
    return out


def filter_lines(p: Program, o: GoalOutcome) -> list[str]:
    out = []
    for s in o.steps:
        found = first_list(s.assessment.data)
        if not found or not mentions_filter(p.task.filters, s.assessment.data):
            continue
        head = s.assessment.data.get("title") if isinstance(s.assessment.data, dict) else None
        hits = [x for x in found[1] if mentions_filter(p.task.filters, x)]
        votes = next((k for k in ("voteup_count", "votes", "likes", "like_count") if hits and k in hits[0]), None)
        if votes:
            hits.sort(key=lambda x: -(x.get(votes) or 0))
        out.append(f"{'在「' + head + '」下，' if head else ''}提到「{'」「'.join(p.task.filters)}」的内容共 {len(hits)} 条"
                   f"{'（按' + label(votes) + '从高到低）' if votes else ''}：")
        for k, x in enumerate(hits[:3], 1):
            body = next((str(x[t]) for t in ("content", "text", "excerpt", "snippet") if x.get(t)), "")
            term = next((f for f in p.task.filters if f in body), p.task.filters[0])
            meta = "，".join(f"{label(t)} {x[t]}" for t in ("author", votes or "") if t and x.get(t) is not None)
            out.append(f"{k}. {meta}：「{_excerpt(body, term)}」")
    return out


_PRICE_KEYS = ("price", "total_price_wan", "total_price", "price_cny", "estimated_budget_cny", "budget_cny")


def _money(value: float, wan: bool = False) -> str:
    if wan:
        return f"{value:g} 万元"
    return f"{value / 10000:g} 万元" if value >= 100000 else f"{value:g} 元"


def relaxed_lines(p: Program, o: GoalOutcome) -> list[str]:
    t = p.task
    what = t.core or "商品"
    step = next((s for s in o.steps if any(x.name in o.relaxed for x in p.infos[s.tool].params)), o.steps[0])
    first_empty = next((c.assessment for c in p.replay.calls if c.name == step.tool and c.assessment.status.failed), None)
    found = first_list(step.assessment.data)
    items = found[1] if found else []
    key = next((k for k in _PRICE_KEYS if items and k in items[0]), None)
    if key:
        items = sorted(items, key=lambda x: x.get(key) if isinstance(x.get(key), (int, float)) else 1e12)
    cheapest = items[0].get(key) if key and items else None
    wan = bool(key) and "wan" in key
    budget = f"{_money(t.max_price)}以内" if t.max_price is not None else "您的预算内"
    out = [f"在{budget}没有找到符合要求的{what}"
           + (f"（平台提示：「{first_empty.reason}」）" if first_empty and first_empty.reason else "") + "。"]
    if isinstance(cheapest, (int, float)):
        out.append(f"去掉价格限制后再搜，符合要求的{what}最低也要 {_money(cheapest, wan)}，超出预算："
                   "预算和需求相互冲突，无法同时满足，所以我不推荐预算内不符合要求的选项。")
    if items:
        out.append("作为参考，去掉价格限制后最便宜的几个及其配置/信息：")
        out += [f"{k}. {render(x, limit=8)}" for k, x in enumerate(items[:3], 1)]
    game = re.search(r"游戏|玩", t.request)
    ways = [f"提高预算到约 {_money(cheapest, wan)}以上" if isinstance(cheapest, (int, float)) else "提高预算",
            "降低要求（如降低画质/配置）" if game else "适当放宽其他要求"] + ([] if "二手" in t.request else ["考虑二手"]) + (["考虑云游戏"] if game else [])
    out.append("调整方向：" + "；".join(ways) + "。")
    return out


def comparison(p: Program, outs: list[GoalOutcome]) -> list[str]:
    rows: list[tuple[str, dict[str, Any], GoalOutcome]] = []
    for o in outs:
        data: dict[str, Any] = {}
        if o.steps:
            d = o.steps[-1].assessment.data
            found = first_list(d)
            data = found[1][0] if found else (d if isinstance(d, dict) else {})
        rows.append((o.item or "", data, o))
    keys: list[str] = []
    for _, d, _ in rows:
        for k, v in d.items():
            if k.lower() in _SKIP or k.lower().endswith("_id") or k in ("message", "note", "name", "title") or k in keys:
                continue
            if isinstance(v, (list, dict)) and k != "specs":
                continue
            keys.append(k)
    wanted = [a for a in p.task.aspects]
    keys.sort(key=lambda k: next((i for i, a in enumerate(wanted) if bigrams(a) & bigrams(label(k)) or label(k) in a),
                                 len(wanted)))
    if not keys:
        keys = ["name"]
    head = "| 项目 | " + " | ".join(label(k) for k in keys) + " |"
    lines = [f"对比结果（共 {len(rows)} 项，缺失的数据标注为「{NA}」）：", head, "|" + " --- |" * (len(keys) + 1)]
    for item, d, o in rows:
        name = item if not d.get("name") or norm(d.get("name", "")) == norm(item) else f"{item}（{d['name']}）"
        lines.append(f"| {name} | " + " | ".join(_value(d.get(k)) if d else NA for k in keys) + " |")
    for item, d, o in rows:
        if not o.steps:
            lines.append(f"- {item}：没有查到数据（{o.failed.assessment.reason if o.failed else '未能查询'}），整行{NA}。")
        elif o.steps[-1].assessment.status == Status.PARTIAL:
            a = o.steps[-1].assessment
            lines.append(f"- {item}：{'、'.join(label(f) for f in a.null_fields)} {NA}"
                         f"{'（平台说明：「' + a.reason + '」）' if a.reason else ''}。")
    return lines


def failure_lines(p: Program, o: GoalOutcome) -> list[str]:
    subject = _subject(p, o)
    if o.skipped == "outage":
        down = sorted(p.outage_tools())
        return [f"「{subject}」：{'、'.join(down)} 都返回了服务故障（如 HTTP 503），同一系统的 "
                f"{'、'.join(o.goal.chain)} 大概率同样不可用，所以我没有再调用它们。"]
    if o.failed is None:
        return [f"「{subject}」：缺少必要信息，没有查询。"]
    a = o.failed.assessment
    start = 0
    if any(s.tool == o.failed.tool for s in o.steps):    # pages read before a page failed: count from there
        same = [k for k, c in enumerate(p.replay.calls) if c.name == o.failed.tool and c.assessment.status.usable]
        start = same[-1] + 1 if same else 0
    calls = _calls_text(p, o.failed.tool, start, len(p.replay.calls))
    before = [x for s in o.steps for x in [f"已查到（{s.tool}）："] + describe(s.assessment.data, limit=2)]
    many = len([c for c in p.replay.calls if c.name == o.failed.tool]) > 1
    kind = ("都" if many else "") + ("返回错误" if a.status == Status.ERROR else "没有结果")
    out = before + [f"「{subject}」：{calls}，{kind}：「{a.reason or '无结果'}」。"]
    if a.outage and len(p.outage_tools()) < 2:
        rest = "、".join(o.goal.chain[1:])
        out.append(f"{o.failed.tool} 服务当前不可用，依赖它的后续步骤{'（' + rest + '）' if rest else ''}也无法进行。")
    return out


def web_lines(step: Step) -> list[str]:
    q = next(iter(step.arguments.values()), "")
    a = step.assessment
    if not a.status.usable:
        return [f"我也用 {step.tool} 搜索了「{q}」，但没有得到结果（{a.reason or '空'}）。"]
    return [f"我改用 {step.tool} 搜索了「{q}」（网页结果仅供参考）："] + describe(a.data, limit=3)


def next_steps(p: Program) -> list[str]:
    steps: list[str] = []
    official, others = channels(p.task.request)
    failed = [o for o in p.outcomes if not o.steps or o.failed is not None]
    limited = [o for o in p.outcomes if o.limited]
    for o in failed:
        a = o.failed.assessment if o.failed else None
        if a is not None and a.bad_format:
            iso = resolve_date(p.task.date_phrase, p.today) if p.task.date_phrase else None
            steps.append(f"请提供具体日期（YYYY-MM-DD 格式{'，例如 ' + iso if iso else ''}），我再帮您查询")
        if (a is not None and a.outage) or o.skipped == "outage":
            steps.append("服务暂时不可用，建议稍后重试")
        elif a is not None and a.transient:
            steps.append("平台提示这是暂时的问题，建议稍后重试")
        if a is not None and a.status == Status.EMPTY and not a.transient:
            steps.append(f"这个需求在该平台可能没有结果（缺货、未上架或本身不存在），可以通过{official}查询")
    if failed:
        steps.append(f"也可以到{others}查询")
        steps.append("或者告诉我更具体/更宽泛的要求，我换个方式再试")
    if limited:
        steps.append(f"如果需要精确数据，可以直接到{official}查看")
    if p.stopped is not None:
        if p.untried:
            steps.append(f"「{'」「'.join(p.untried)}」如果还需要，可以稍后单独让我查询")
        if not failed and not limited:
            steps.append("如果需要更完整的结果，可以告诉我更具体的要求，我再接着查")
            steps.append(f"也可以到{official}或{others}核实最新信息")
    if not steps:
        return []
    steps = list(dict.fromkeys(steps))
    return ["下一步建议："] + [f"{k}. {s}。" for k, s in enumerate(steps, 1)]
