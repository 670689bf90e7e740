"""C4 runs recorded (model, tools, simulated user) and replayed strictly offline:
identical verdicts; an edited tool result is caught by VerifyTools."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from tether.evals import Case, load_suite, score_trajectory
from tether.evals.runner import REFERENCE_SYSTEM_PROMPT
from tether.evals.scoring import TrialScore
from tether.evals.simulator import ScriptedUser
from tether.models import resolve_model
from tether.runtime import RunConfig, RunResult, Turn
from tether.tools import ToolSet
from tether.c4.catalog import scenario_toolset
from tether.tools.injection import CaseInjection
from tether.replay import Cassette, Environment, Replayer, ToolResultMismatch, record_run

CASES = {c.id: c for c in load_suite("c4")}


def world(case: Case, seed: int = 0) -> ToolSet:
    """What run_trial builds: the scenario tools with the case's intercepts and mocks in front."""
    tools = scenario_toolset(case.tools, now=datetime.fromisoformat(case.input.now), seed=seed)
    return tools.with_layer(CaseInjection(case.tool_config))


async def record_case(case: Case, model_spec: str, path: Path) -> tuple[RunResult, Cassette]:
    config = RunConfig(max_steps=case.max_steps, system_prompt=REFERENCE_SYSTEM_PROMPT, meta={"suite": case.suite})
    result, cassette = await record_run(
        resolve_model(model_spec), world(case), message=case.input.message,
        history=[Turn(t.role, t.content, t.question) for t in case.input.history],
        user=ScriptedUser(case.persona) if case.persona else None, config=config, case_id=case.id,
        environment=Environment(timezone="Asia/Shanghai", now=case.input.now, seed=0),
        run_id=f"{model_spec}-{case.id}")
    cassette.save(path)
    return result, Cassette.load(path)


def verdicts(score: TrialScore) -> tuple:
    return score.verdict, score.auto_verdict, [(c.id, c.verdict, c.value) for c in score.criteria]


@pytest.mark.parametrize(("case_id", "model_spec"), [
    ("C4-LD-01", "policy:steady"),
    ("C4-PA-01", "policy:steady"),
    ("C4-DR-01", "policy:steady"),
    ("C4-DR-01", "policy:stubborn"),     # asks the simulated user again and again
    ("C4-AR-03", "policy:stubborn"),     # runs into the step cap
    ("C4-PA-03", "policy:steady"),
])
async def test_strict_offline_replay_gives_identical_verdicts(case_id, model_spec, cassette_dir):
    case = CASES[case_id]
    original, cassette = await record_case(case, model_spec, cassette_dir / f"{case_id}.json")

    replayed = await Replayer(cassette).run()       # no model, no tools, no simulator: the cassette answers

    assert verdicts(score_trajectory(case, replayed.trajectory)) == verdicts(score_trajectory(case, original.trajectory))
    assert replayed.status == original.status and replayed.reply == original.reply
    assert replayed.trajectory.tool_order() == original.trajectory.tool_order()
    assert len(replayed.trajectory.user_messages()) == len(original.trajectory.user_messages())


async def test_the_simulated_users_replies_are_recorded(cassette_dir):
    _, cassette = await record_case(CASES["C4-DR-01"], "policy:stubborn", cassette_dir / "dr01.json")
    replies = cassette.recorded_replies()
    assert cassette.settings.simulated_user and len(replies) >= 4
    assert [r.reply for r in replies[:3]] == ["不想说", "就不说", "就不说"]


async def test_verify_tools_re_runs_the_scenario_and_agrees(cassette_dir):
    case = CASES["C4-LD-01"]
    _, cassette = await record_case(case, "policy:steady", cassette_dir / "ld01.json")
    result = await Replayer(cassette).run(tools=world(case, seed=cassette.environment.seed or 0), verify=True)
    assert result.status == "completed"


@pytest.mark.parametrize("case_id", ["C4-LD-01", "C4-PA-01"])
async def test_an_edited_tool_result_fails_verify_with_a_tool_result_mismatch_naming_the_step(case_id, cassette_dir):
    case = CASES[case_id]
    path = cassette_dir / f"{case_id}.json"
    await record_case(case, "policy:steady", path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    results = [e for e in doc["events"] if e["type"] == "tool_result" and e["source"] != "runner"]
    edited = results[1]
    edited["data"] = {"edited": "by hand"}
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")

    with pytest.raises(ToolResultMismatch) as exc:
        await Replayer(Cassette.load(path)).run(tools=world(case), verify=True)

    m = exc.value
    assert m.step == edited["step"]
    assert m.expected["data"] == {"edited": "by hand"}
    assert m.actual["data"] != {"edited": "by hand"}
    assert str(m).startswith(f"ReplayMismatch.ToolResult at step {edited['step']}: {edited['tool']}")
    assert "first difference at $.data" in m.detail
