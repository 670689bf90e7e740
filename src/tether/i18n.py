"""One language per message: what the model reads is in the run's language.

A run's language is ``"zh"`` or ``"en"``: the case's ``language`` (recorded in
``run_started.meta["language"]``), else detected from the first user message
(any CJK character -> ``"zh"``), else ``"en"``. Guards, the finish-up request,
plan prompts and approval notes pick their text here; what tether prints for
people (CLI lines, recorded stop reasons) stays English.
"""

from __future__ import annotations

import re
from typing import Any

LANGUAGES = ("en", "zh")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def detect_language(*texts: str | None) -> str:
    """``"zh"`` when any text has a CJK character, else ``"en"``."""
    return "zh" if any(t and _CJK.search(t) for t in texts) else "en"


def run_language(trajectory: Any) -> str:
    """The language of a run in progress (see the module docstring). Reads only
    the events up to the first user message."""
    for event in getattr(trajectory, "events", ()):
        kind = getattr(event, "type", "")
        if kind == "run_started":
            lang = (getattr(event, "meta", None) or {}).get("language")
            if lang in LANGUAGES:
                return lang
        elif kind == "user_message":
            return detect_language(event.content)
    return "en"


TEXTS: dict[str, dict[str, str]] = {
    # runtime/loop.py: the request without tools after a guard stopped the run
    "finish_up": {
        "en": "The run was stopped by a guard ({guard}: {message}). Do not call any more tools. "
              "Write your final reply now: what was done, what was not done and why, and what the user can do next.",
        "zh": "运行已被守卫停止（{guard}: {message}）。不要再调用任何工具。"
              "请直接给出最终回复：已完成的部分、未完成的部分及原因、用户接下来可以怎么做。",
    },
    # guards/loop.py, first trip of a kind (a hint or a block)
    "loop.alternatives": {
        "en": "Do not repeat it. Change the approach: check and correct the arguments, use another tool, ask the "
              "user for the missing information, or explain the limitation and what you found so far.",
        "zh": "不要再重复。换一种做法：检查并修正参数、换用其他工具、向用户询问缺少的信息，或者说明限制和目前已找到的内容。",
    },
    "loop.identical": {
        "zh": "第 {count} 次以相同参数调用 {tool}（{args}），结果没有变化；上限 {limit} 次。",
    },
    "loop.identical.poll": {
        "zh": "第 {count} 次以相同参数调用 {tool}（{args}），结果仍是处理中；上限 {limit} 次。",
    },
    "loop.identical.transient": {
        "zh": "第 {count} 次尝试 {tool}（{args}）：前 {previous} 次都以同样的临时错误失败；最多重试 {retries} 次，"
              "这一次不再调用。服务暂时不可用：请如实告诉用户，换一个来源，或建议稍后再试。",
    },
    "loop.duplicate_action": {
        "zh": "{tool}（{args}）已经以相同内容成功执行过 {count} 次；再调用会重复产生副作用（又一条记录、消息或扣款）。"
              "请使用已有的结果；如果确实需要再做一次，先说明原因。",
    },
    "loop.retry_budget": {
        "zh": "{tool}（{args}）已经以同样的临时错误连续失败 {count} 次，{retries} 次重试用完了 {limit} 次的预算。"
              "现在不要再重试：请告诉用户服务正在出错，换一个来源，或建议稍后再试。",
    },
    "loop.past_end": {
        "zh": "{tool}（{args}）：列表已经到底（没有更多页），之后请求的 {count} 页都没有新内容。"
              "结果已经完整：请使用前面各页返回的内容。",
    },
    "loop.same_answer": {
        "zh": "最近 {count} 次换着说法调用 {tool}，返回的数据完全相同。再换说法也找不到更多：请使用已有的结果"
              "（打开某条结果、阅读页面），或者根据现有信息回答。",
    },
    "loop.replay": {
        "zh": "{tool} 和它前一次调用都在重复之前做过、结果也相同的调用：工作被从头再做了一遍。"
              "请使用那些调用已经返回的结果，从中断的地方继续。",
    },
    "loop.outage_seen": {
        "zh": "系统性故障：{failed_tools} 个工具以同样的方式失败（{error_type}）；不要再调用它们。"
              "请向用户说明故障，或改用其他来源。",
    },
    "loop.cycle": {
        "zh": "调用形成周期为 {period} 的循环（{tools}），结果没有变化，即将完成第 {rounds} 轮；上限 {limit} 轮。",
    },
    "loop.near_duplicate": {
        "zh": "连续第 {count} 次调用 {tool}（{args}），前 {previous} 次都没有带来新结果；上限 {limit} 次。",
    },
    "loop.no_progress": {
        "zh": "最近 {count} 次不同的调用都返回了相同的结果；上限 {limit} 次。",
    },
    "loop.outage": {
        "zh": "系统性故障：{failed_tools} 个工具以同样的方式失败（{error_type}）；{tool} 不再调用。"
              "请向用户说明故障，或改用其他来源。",
    },
    "loop.question_repeat": {
        "zh": "这个问题（或换个说法）已经{reason} {count} 次；上限 {limit} 次。不要再问：用已有的回答，"
              "给出合理的默认值并继续，或者停下来说明缺少这条信息无法完成什么、用户可以怎么做。",
    },
    # guards/budget.py
    "budget.soft": {
        "en": "{pct} of the budget used ({dim}: {value} / {limit}). Converge on an answer now; do not explore further.",
        "zh": "预算已用 {pct}（{dim}: {value} / {limit}），请尽快收敛到结论，不要继续探索。",
    },
    "budget.stop": {
        "en": "{dim} budget exhausted: {value} projected, limit {limit}",
        "zh": "{dim}预算已用尽：预计 {value}，上限 {limit}",
    },
    "ledger.done": {"en": "Done: ", "zh": "已完成："},
    "ledger.not_done": {"en": "Not done: ", "zh": "未完成："},
    "ledger.why": {"en": "Why: ", "zh": "原因："},
    "ledger.none": {"en": "nothing", "zh": "无"},
    "ledger.sep": {"en": "; ", "zh": "；"},
    "ledger.no_result": {"en": "no result", "zh": "没有结果"},
    "ledger.not_executed": {"en": "not executed (stopped by a guard)", "zh": "未执行（被守卫拦下）"},
    # guards/result.py
    "result.check": {
        "en": "{problem}: this step is NOT done; do not claim it, and do not invent the missing values.",
        "zh": "{problem}：这一步没有完成；不要声称已完成，也不要编造缺少的值。",
    },
    # runtime/gates.py: the result the model sees for a call a person rejected
    "gate.rejected": {"en": "rejected by a person ({who})", "zh": "人工拒绝执行（{who}）"},
    # runtime/plan.py
    "plan.prompt": {
        "en": "Split the task into ordered steps, each with: action, tool, arguments, acceptance criterion, the "
              "fields the result must contain.\nUse only these tools:\n{tools}\nOutput only a JSON array: "
              '[{{"step":1,"action":"...","tool":"...","arguments":{{...}},"acceptance":"...",'
              '"expect_fields":["..."]}}]\nA planned action is not done until its result says so.',
        "zh": "把任务拆成有序步骤，每步含：动作、工具、参数、验收标准、结果必须包含的字段。\n只能使用下列工具：\n{tools}\n"
              '只输出 JSON 数组：[{{"step":1,"action":"...","tool":"...","arguments":{{...}},"acceptance":"...",'
              '"expect_fields":["..."]}}]\n计划中的动作不算完成，必须等执行结果。',
    },
    "plan.review": {
        "en": 'Check the evidence against each acceptance criterion and output JSON:\n'
              '{{"passed":true/false,"missing":["..."],"notes":"..."}}\nGoal: {task}\nAcceptance: {acceptance}\n'
              'Evidence: {evidence}',
        "zh": '对照验收标准逐条核对证据，输出 JSON：\n{{"passed":true/false,"missing":["..."],"notes":"..."}}\n'
              "目标：{task}\n验收：{acceptance}\n证据：{evidence}",
    },
    "plan.params": {"en": " arguments: ", "zh": " 参数: "},
    "plan.side_effect": {"en": " (side effect)", "zh": "（有副作用）"},
    "plan.none": {"en": "(none)", "zh": "（无）"},
    "plan.failed": {"en": "failed", "zh": "未通过"},
    "plan.not_run": {"en": "not run", "zh": "未执行"},
    "plan.evidence": {"en": "Evidence: ", "zh": "验收证据："},
    "plan.missing": {"en": "{a} has no evidence", "zh": "{a} 缺证据"},
    "plan.disagreement": {"en": "Review disagreement: ", "zh": "复核分歧："},
    "plan.result": {"en": "Result: {status} ({why})", "zh": "结果：{status}（{why}）"},
}

# budget dimensions as the model reads them
DIMENSIONS = {
    "zh": {"tool_calls": "工具调用次数", "model_calls": "模型调用次数", "seconds": "耗时（秒）",
           "total_tokens": "总 token ", "input_tokens": "输入 token ", "output_tokens": "输出 token ", "cost": "费用"},
}
QUESTION_REASONS = {"zh": {"refused or left unanswered": "被拒绝或没有得到回答", "asked and answered": "问过并得到回答",
                          "answered (and an answered question was already asked again)": "已得到回答（而且之前已经重复问过一个答过的问题）",
                          "answered (the user said so)": "已得到回答（用户已经说过已回答）"}}


def text(lang: str, key: str, **values: Any) -> str:
    """The text ``key`` in ``lang`` (English when that language has none), formatted."""
    forms = TEXTS[key]
    return (forms.get(lang) or forms["en"]).format(**values)


def has(lang: str, key: str) -> bool:
    return lang in TEXTS.get(key, {})


def dimension(lang: str, dim: str) -> str:
    return DIMENSIONS.get(lang, {}).get(dim, dim.replace("_", " "))
