import pytest

from tether import Decision, ModelRequest, ToolSet, UsageError, run_agent_sync
from tether.messages import Message
from tether.models import MappingModel, UnmappedRequest, UnusedMappings
from tether.models.doubles import key_last_tool_result
from tether.tools.doubles import RefundFake
from tether.tools.faults import FailFirst, FaultLayer, Timeout

REFUND_RULES = {
    "start": Decision.call("get_order", {"order_id": "A100"}),
    "get_order:ok": Decision.call("check_refund", {"order_id": "A100"}),
    "check_refund:timeout": Decision.call("check_refund", {"order_id": "A100"}),   # retry a read
    "check_refund:ok": Decision.call("create_refund", {"order_id": "A100", "amount": 19900, "idempotency_key": "K1"}),
    "create_refund:ok": Decision.final("退款已提交，退款单号为 R900。"),
}


def test_keyed_by_last_tool_result_handles_a_retry_without_a_longer_script():
    fake = RefundFake()
    model = MappingModel(REFUND_RULES, key="last_tool_result")
    tools = fake.toolset().with_layer(FaultLayer({"check_refund": FailFirst(1, Timeout())}))
    result = run_agent_sync(model, tools, message="请帮我退掉订单 A100")
    assert result.status == "completed"
    assert result.trajectory.tool_order() == ["get_order", "check_refund", "check_refund", "create_refund"]
    assert model.lookups == [(1, "start"), (2, "get_order:ok"), (3, "check_refund:timeout"),
                             (4, "check_refund:ok"), (5, "create_refund:ok")]
    model.assert_all_used()


def test_unmapped_request_names_the_step_and_the_closest_key():
    rules = {k: v for k, v in REFUND_RULES.items() if k != "check_refund:ok"}
    model = MappingModel(rules, key="last_tool_result", name="refund-rules")
    with pytest.raises(UnmappedRequest) as exc:
        run_agent_sync(model, RefundFake().toolset(), message="退款")
    err = exc.value
    assert (err.step, err.key, err.closest) == (3, "check_refund:ok", "check_refund:timeout")
    assert str(err) == ("refund-rules: unmapped request at step 3: key 'check_refund:ok' is not one of the "
                        "4 mapped key(s); closest mapped key: 'check_refund:timeout'")
    assert isinstance(err, UsageError)
    assert err.trajectory.status == "error"   # the run loop keeps what happened


def test_unused_mappings_fail_at_teardown():
    model = MappingModel(REFUND_RULES, key="last_tool_result")
    run_agent_sync(model, RefundFake().toolset(), message="退款")
    with pytest.raises(UnusedMappings) as exc:
        model.assert_all_used()
    assert exc.value.unused == ["check_refund:timeout"]
    assert "1 of 5 mapping(s) never used: 'check_refund:timeout'" in str(exc.value)


def test_default_key_is_the_canonical_request_hash():
    expected = ModelRequest(messages=[Message(role="user", content="你好")])
    model = MappingModel({expected.canonical_hash(): Decision.final("hi")})
    assert run_agent_sync(model, ToolSet(), message="你好").reply == "hi"
    # the same words with tools on offer are another request: a loud miss, not a guess
    with pytest.raises(UnmappedRequest, match="unmapped request at step 1"):
        run_agent_sync(model, RefundFake().toolset(), message="你好")


def test_hash_keys_from_a_recorded_run():
    fake_tools = RefundFake().toolset()
    # record the requests once with keys we can read, then key by their hashes
    recorder = MappingModel({"你好": Decision.final("hi")}, key="last_user_message")
    run_agent_sync(recorder, fake_tools, message="你好")
    key = recorder.requests[0].canonical_hash()
    model = MappingModel({key: Decision.final("hi")})
    assert run_agent_sync(model, fake_tools, message="你好").reply == "hi"
    assert model.used[key] == 1
    with pytest.raises(UnmappedRequest, match="at step 1"):
        run_agent_sync(model, fake_tools, message="再见")


def test_custom_key_function_and_bad_preset():
    model = MappingModel({"3": Decision.final("three messages")}, key=lambda r: str(len(r.messages)))
    req = ModelRequest(messages=[Message(role="user", content=str(i)) for i in range(3)], step=1)
    assert model.key_of(req) == "3"
    with pytest.raises(UsageError, match="unknown key preset 'nope'"):
        MappingModel({}, key="nope")  # type: ignore[arg-type]


def test_last_tool_result_key():
    user = Message(role="user", content="x")
    tool_ok = Message(role="tool", name="get_order", tool_call_id="c1", content='{"ok":true,"data":{}}')
    tool_err = Message(role="tool", name="check_refund", tool_call_id="c2",
                       content='{"ok":false,"error":"t","error_type":"timeout"}')
    system = Message(role="system", content="hint")
    assert key_last_tool_result(ModelRequest(messages=[user])) == "start"
    assert key_last_tool_result(ModelRequest(messages=[user, tool_ok, system])) == "get_order:ok"
    assert key_last_tool_result(ModelRequest(messages=[user, tool_ok, tool_err])) == "check_refund:timeout"
