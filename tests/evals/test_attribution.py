"""Failure attribution says what the record shows: a model that makes no tool
call is never told it "kept changing arguments" (run over the whole C4 suite)."""

from __future__ import annotations

import asyncio

from tether.evals import load_suite
from tether.evals.runner import EvalConfig, run_suite
from tether.messages import Decision
from tether.models._base import ModelRequest, ModelResponse


class Apologiser:
    """A model that never calls a tool: it apologises and stops."""

    name = "test:apologiser"

    async def request(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(decision=Decision.final("抱歉，我现在无法帮你完成这个请求。"))


def test_a_model_that_makes_no_tool_call_is_attributed_as_such(tmp_path):
    cases = load_suite("c4")
    results = asyncio.run(run_suite(cases, [Apologiser()], EvalConfig(store=tmp_path / "runs.db", concurrency=4)))
    [model] = results.runs
    attributions = [tr.attribution for case in model.cases for tr in case.trials if tr.attribution is not None]
    assert attributions, "the apologiser fails some C4 cases"
    for a in attributions:
        for lang in ("en", "zh"):
            cause = a.translations[lang]["root_cause"]
            assert "kept changing arguments" not in cause and "不断调整参数" not in cause, (a.case_id, cause)
            assert "without a new result" not in cause, (a.case_id, cause)
    no_call = [a for a in attributions if a.translations["en"]["root_cause"].startswith("made no tool call")]
    # every case whose first failed criterion is about tool calls says no call was made
    about_calls = {"LD-01.retries", "LD-02.loops", "LD-03.searches", "LD-04.inner", "DR-02.retries",
                   "PA-01.strategies", "PA-02.read_answers", "PA-05.new_attempt", "DR-03.searched"}
    expected = {a.case_id for a in attributions if a.criteria[0] in about_calls}
    assert expected and expected <= {a.case_id for a in no_call}
    assert all("no tool call" in a.translations["en"]["root_cause"] or "没有调用任何工具" in a.root_cause
               for a in no_call)
    assert any(a.root_cause.startswith("没有调用任何工具") for a in no_call)
