"""An LLM simulated user's requests are events of the trial: role "user",
their cost kept apart from the agent's (Trajectory.usage() is the agent's)."""

from tether.evals import EvalConfig, load_suite, run_trial
from tether.events import ModelDecisionEvent
from tether.messages import Decision
from tether.models import FunctionModel
from tether.runtime import RunConfig
from tether.store import SQLiteStore
from tether.store.export import load_run

PA03 = next(c for c in load_suite("c4") if c.id == "C4-PA-03")


async def test_an_llm_user_double_is_recorded_as_role_user_requests(tmp_path):
    def agent(request):
        asked = sum(1 for m in request.messages if m.role == "assistant")
        return Decision.ask(["预算多少？", "什么时候出发？"][asked]) if asked < 2 else Decision.final("推荐米洛斯岛。")

    replies = iter(["人均一万五以内", "五月中旬出发"])
    simulator = FunctionModel(lambda request: Decision.final(next(replies)), name="sim-double")
    store = SQLiteStore(tmp_path / "t.db")
    tr, result = await run_trial(PA03, FunctionModel(agent, name="asker"), config=EvalConfig(simulator=simulator),
                                 run_config=RunConfig(store=store, kind="eval", eval_id="e-1"), run_id="trial-1")
    assert tr.simulator_fault is None and [m.content for m in result.trajectory.user_messages()][1:] == [
        "人均一万五以内", "五月中旬出发"]
    t = load_run(store, "trial-1")
    user_requests = t.requests(role="user")
    assert len(user_requests) == 2 and all(e.model == "sim-double" for e, _ in user_requests)
    first = user_requests[0][1]
    assert first[0].role == "system" and first[-1].content == "预算多少？"          # the persona prompt, then the agent
    assert user_requests[1][0].keep > 0                                            # a delta against the first
    assert user_requests[1][1][-1].content == "什么时候出发？"
    said = [d.text for d in t.of_type(ModelDecisionEvent) if d.role == "user"]
    assert said == ["人均一万五以内", "五月中旬出发"]
    user_cost, agent_cost = t.usage("user"), t.usage()
    assert user_cost.input_tokens > 0
    assert agent_cost == result.trajectory.finished.usage                          # the agent's own requests only
    assert t.usage(None).input_tokens == agent_cost.input_tokens + user_cost.input_tokens
    assert len(t.requests()) == 3                                                   # the agent asked three times
