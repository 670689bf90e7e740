import asyncio

import pytest

from tether import Decision, FunctionModel, ScriptedModel, ToolSet, run_agent_sync, tool
from tether.errors import ModelRequestsForbidden, ScriptExhausted, ScriptLeftover, UnknownModelSpec
from tether.models import ModelRequest, allow_model_requests, check_model_requests_allowed, resolve_model


@tool(description="echo")
def echo(text: str):
    return {"text": text}


def test_scripted_model_one_call_too_many_names_the_step():
    model = ScriptedModel([Decision.call("echo", {"text": "a"})], name="script")
    with pytest.raises(ScriptExhausted) as exc:
        run_agent_sync(model, ToolSet([echo]), message="go")
    assert exc.value.step == 2
    assert "step 2" in str(exc.value) and "1 decision(s)" in str(exc.value)
    # the trajectory is kept and ends with an error
    t = exc.value.trajectory
    assert t.status == "error" and len(t.tool_calls()) == 1


def test_scripted_model_leftover_is_detected_at_teardown():
    model = ScriptedModel([Decision.final("done"), Decision.final("never used")], name="script")
    run_agent_sync(model, ToolSet([echo]), message="go")
    with pytest.raises(ScriptLeftover) as exc:
        model.assert_exhausted()
    assert "1 scripted decision(s) left unused" in str(exc.value)
    assert "step 2" in str(exc.value)


def test_function_model_decides_from_the_request():
    def decide(req: ModelRequest) -> Decision:
        if any(m.role == "tool" for m in req.messages):
            return Decision.final("echoed")
        return Decision.call("echo", {"text": req.last_user_text})

    result = run_agent_sync(FunctionModel(decide), ToolSet([echo]), message="你好")
    assert result.reply == "echoed"
    assert result.trajectory.tool_results()[0].data == {"text": "你好"}


def test_async_function_model():
    async def decide(req):
        await asyncio.sleep(0)
        return Decision.final("ok")

    assert run_agent_sync(FunctionModel(decide), ToolSet(), message="x").reply == "ok"


def test_spec_strings():
    assert resolve_model("policy:steady").name == "policy:steady"
    with pytest.raises(UnknownModelSpec, match="unknown model spec 'nope:x'"):
        resolve_model("nope:x")


def test_real_requests_switch():
    with pytest.raises(ModelRequestsForbidden):
        check_model_requests_allowed("openai:x")
    with allow_model_requests():
        check_model_requests_allowed("openai:x")
