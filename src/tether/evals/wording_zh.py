"""A criterion's evidence in Chinese, for ``--lang zh`` (the scorer records it in English).

Derived again from the case's criterion and the run's record, the way the scorer
derived the English text, so no sentence mixes the two languages: the words are
Chinese; tool names, arguments, statuses and the case's own terms are data and
stay as they are.
"""

from __future__ import annotations

from typing import Any

from ..events import Trajectory

_WHAT = {"call_count": "调用次数", "identical_calls": "同一调用（工具 + 参数完全相同）的最多次数",
         "strategies": "失败后尝试的不同恢复策略数", "questions_asked": "向用户提问的次数"}
_STRATEGY = {"retry": "原样重试", "reword": "换参数", "fallback": "换工具"}


def expected_zh(expected: str) -> str:
    """``pass <=2, fail >=4`` as ``通过 <=2，失败 >=4``."""
    return expected.replace("pass ", "通过 ").replace("fail ", "失败 ").replace(", ", "，")


def evidence_zh(spec: Any, result: Any, t: Trajectory) -> str:
    """The evidence of one criterion ``result`` (a CriterionResult of ``spec``) in Chinese;
    a judge's reason (``rubric``) is the judge's own text and stays as it is."""
    from .scoring import _norm, strategy_kinds

    check = result.check
    if check in _WHAT and result.value is not None:
        what = _WHAT[check]
        detail = ""
        if check == "call_count":
            if getattr(spec, "after_failure", False):
                what = "对已经失败的工具再次调用的次数"
            if getattr(spec, "per", "") == "max_per_tool":
                what += "（单个工具最多）"
            names = list(spec.tools)
            counts = {n: len(t.tool_calls(n, executed_only=True)) for n in names}
            shown = "，".join(f"{n} {k} 次" for n, k in sorted(counts.items()) if k)
            detail = f"［{shown}］" if shown and not getattr(spec, "after_failure", False) else ""
        elif check == "identical_calls":
            counts = t.identical_call_counts(spec.tools, executed_only=True)
            detail = f"［{counts.most_common(1)[0][0][:120]}］" if counts else ""
        elif check == "questions_asked":
            qs = t.questions_to_user(spec.include_history)
            hist = sum(1 for q in qs if q.source == "history")
            detail = f"（历史中 {hist} 次，智能体 {len(qs) - hist} 次）"
        elif check == "strategies":
            kinds = strategy_kinds(t, spec.tools)
            detail = f"［{'、'.join(_STRATEGY.get(k, k) for k in kinds) or '无'}］"
        return f"{what} {result.value}（{expected_zh(result.expected)}）{detail}"
    if check == "strategies":
        return f"{'、'.join(spec.tools)} 没有任何一次失败或空结果，没有需要恢复的失败"
    if check == "mentions":
        reply = _norm(t.final_reply)
        hits = [[term for term in group if _norm(term) in reply] for group in spec.groups]
        found = sorted({term for h in hits for term in h})
        text = "回复提到了 " + "、".join(found) if found else "回复没有提到任何一个要求的词"
        missing = [g for g, h in zip(spec.groups, hits) if not h]
        if missing and spec.mode == "any":
            text += "；每一组都没有提到"
        elif missing:
            text += "；缺少：" + "；".join(" / ".join(g) + " 之一" for g in missing)
        return text
    if check == "no_invented":
        prefix = "not returned by any tool: "
        if result.evidence.startswith(prefix):
            return "工具没有返回过、回复里却出现的内容：" + result.evidence[len(prefix):]
        return "回复里匹配的内容都来自工具或用户"
    if check == "status_in":
        status = str(t.status) if t.status else "none"
        return f"运行以 {status} 结束（应为 {' / '.join(spec.statuses)} 之一）"
    if check == "tool_called":
        return "调用情况：" + "，".join(f"{n} {len(t.tool_calls(n))} 次" for n in spec.tools)
    return result.evidence
