"""One language per message: what the model reads from tether is in the case's
language, what tether prints for people is English."""

from __future__ import annotations

import os

import pytest
import yaml
from typer.testing import CliRunner

from tether import Decision, FunctionModel, RunConfig, ToolSet, run_agent_sync, tool
from tether.cli import app
from tether.evals import load_case_text
from tether.guards.budget import Budget, BudgetGuard
from tether.guards.loop import LoopGuard
from tether.i18n import detect_language

CASE = """
id: LANG-01
title: {title}
dimension: LD
input:
  message: "{message}"
tools: [search_flights, web_search]
criteria:
  - id: ran
    check: status_in
    statuses: [completed, loop_aborted, step_limit, budget_exceeded]
"""


def _case(tmp_path, title: str, message: str, language: str | None = None):
    text = CASE.format(title=title, message=message) + (f"language: {language}\n" if language else "")
    path = tmp_path / "case.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _system_texts(run_id: str) -> list[str]:
    """What tether itself told the model: system messages, and the notes (guard hints,
    the finish-up request) it appends to the last tool result or user turn."""
    from tether.runtime.loop import split_notes
    from tether.store import SQLiteStore
    from tether.store.export import load_run

    t = load_run(SQLiteStore(os.environ["TETHER_STORE"]), run_id)
    out = []
    for _, messages in t.requests():
        for m in messages:
            out += [m.content] if m.role == "system" else split_notes(m.content)[1]
    return out


def test_language_is_detected_from_the_case_text():
    assert detect_language("查一下下周五北京到上海的机票") == "zh"
    assert detect_language("Find a flight from Beijing to Shanghai") == "en"
    zh = load_case_text(CASE.format(title="机票", message="查一下机票"), "zh.yaml")
    en = load_case_text(CASE.format(title="flights", message="Find me a flight"), "en.yaml")
    assert (zh.run_language, en.run_language) == ("zh", "en")
    forced = load_case_text(CASE.format(title="机票", message="查一下机票") + "language: en\n", "x.yaml")
    assert forced.run_language == "en"


@pytest.mark.parametrize("title,message,language,hint,not_hint", [
    ("flights", "Find me a flight from Beijing to Shanghai next Friday", None, "identical call to", "次以相同参数调用"),
    ("机票", "查一下下周五北京到上海的机票", None, "次以相同参数调用", "identical call to"),
    ("机票", "查一下下周五北京到上海的机票", "en", "identical call to", "次以相同参数调用"),
])
def test_a_case_gets_hints_and_the_finish_up_in_its_language(tmp_path, title, message, language, hint, not_hint):
    path = _case(tmp_path, title, message, language)
    out = CliRunner().invoke(app, ["run", str(path), "--model", "policy:stubborn", "--guards", "loop",
                                   "--run-id", "lang"])
    assert out.exit_code == 3, out.output                       # the loop guard ended the run
    texts = _system_texts("lang")
    assert any(hint in t for t in texts), texts
    assert not any(not_hint in t for t in texts), texts
    english = language == "en" or title == "flights"
    assert ("You are an assistant that uses tools" in texts[0]) == english          # the reference prompt
    finish_up = texts[-1]
    assert ("The run was stopped by a guard" in finish_up) == english, finish_up
    assert ("运行已被守卫停止" in finish_up) == (not english), finish_up
    assert "4th identical call" in out.output                  # the recorded reason, printed: English


def _search_forever(request):
    n = sum(1 for m in request.messages if m.role == "tool")
    if not request.tools:
        return Decision.final("done" if n < 0 else "好的。")
    return Decision.call("search", {"keyword": f"k{n}"})


@tool(description="search")
def search(keyword: str) -> dict:
    return {"hits": []}


@pytest.mark.parametrize("message,labels", [
    ("find running shoes", ("Done: ", "Not done: ", "Why: tool calls budget exhausted: 3 projected, limit 2")),
    ("帮我找跑鞋", ("已完成：", "未完成：", "原因：工具调用次数预算已用尽：预计 3，上限 2")),
])
def test_the_budget_ledger_and_hint_follow_the_users_language(message, labels):
    guards = [BudgetGuard(Budget(max_tool_calls=2, soft_fraction=0.5)), LoopGuard()]
    result = run_agent_sync(FunctionModel(_search_forever), ToolSet([search]), message=message,
                            config=RunConfig(guards=guards))
    assert result.status == "budget_exceeded"
    for label in labels:
        assert label in result.reply
    soft = [e.message for e in result.trajectory.events if getattr(e, "rule", "") == "budget.tool_calls.soft"]
    assert soft and (("预算已用" in soft[0]) == (labels[0] == "已完成："))
    assert result.trajectory.finished.reason.startswith("tool calls budget exhausted")   # the reason: English


def test_the_calibration_agents_work_in_both_languages(tmp_path):
    """policy:stubborn's finish-up answer reads the stop reason from tether's request in either language."""
    for title, message in (("flights", "Find me a flight from Beijing to Shanghai next Friday"),
                           ("机票", "查一下下周五北京到上海的机票")):
        path = _case(tmp_path, title, message)
        out = CliRunner().invoke(app, ["run", str(path), "--model", "policy:stubborn", "--guards", "loop"])
        assert out.exit_code == 3 and "reply:" in out.output
        reply = out.output.split("reply:", 1)[1].split("\nrun ", 1)[0]
        assert "守卫停止" in reply and "loop" in reply         # it read why the run stopped


def test_the_shipped_schema_lists_the_language_key():
    from tether.schemas import shipped

    assert '"zh"' in yaml.safe_dump(shipped("case.schema.json")["properties"]["language"], default_style='"')


@pytest.mark.parametrize("lang,labels,cause", [
    ("en", ("failure type", "root cause", "fix suggestion"), "gave up after 0 recovery strategies"),
    ("zh", ("失败类型", "根本原因", "修复建议"), "第一次失败后只尝试了 0 种恢复策略就结束"),
])
def test_failure_attribution_labels_follow_lang(lang, labels, cause, tmp_path):
    args = ["eval", "c4", "--model", "policy:quitter", "--case", "C4-PA-01", "--json", str(tmp_path / "r.json"), "--verbose"]
    out = CliRunner().invoke(app, [*args, "--lang", lang])
    assert out.exit_code == 0, out.output
    for label in labels:
        assert label in out.output
    assert cause in out.output
    import json

    [attribution] = [t["attribution"] for r in json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["runs"]
                     for c in r["cases"] for t in c["trials"] if t.get("attribution")]
    assert set(attribution["translations"]) == {"en", "zh"}            # the document keeps both
