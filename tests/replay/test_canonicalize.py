"""Canon rules: explicit, serialized into the cassette, named in every mismatch."""

from __future__ import annotations

import itertools

import pytest

from tether import Decision, ModelRequest, ScriptedModel, ToolSet, tool
from tether.messages import Message
from tether.replay import (
    Canon,
    Cassette,
    DropRule,
    ModelRequestMismatch,
    Replayer,
    ToolResultMismatch,
    canonical_request,
    record_run,
)
from tether.replay.canonicalize import first_difference


def test_the_default_canon_drops_nothing_sorts_keys_and_trims_whitespace():
    canon = Canon()
    a = {"b": 1, "a": {"timestamp": "2026-08-20T10:00:00+08:00", "text": "退款  \r\n已提交  "}}
    b = {"a": {"text": "退款\n已提交", "timestamp": "2026-08-20T10:00:00+08:00"}, "b": 1}
    assert canon.key(a, "model_request") == canon.key(b, "model_request")
    later = {**b, "a": {**b["a"], "timestamp": "2026-09-20T10:00:00+08:00"}}
    assert canon.key(a, "model_request") != canon.key(later, "model_request")   # a timestamp may decide
    assert canon.describe() == ("canon 'default': keys sorted, whitespace trimmed (line endings, trailing spaces), "
                                "no fields dropped")


@pytest.mark.parametrize(("path", "doc", "left"), [
    ("$.request_id", {"request_id": "r1", "x": 1}, {"x": 1}),
    ("messages[*].timestamp", {"messages": [{"t": 1, "timestamp": 2}, {"timestamp": 3}]}, {"messages": [{"t": 1}, {}]}),
    ("$..trace_id", {"a": {"trace_id": 1, "b": [{"trace_id": 2, "c": 3}]}}, {"a": {"b": [{"c": 3}]}}),
    ("$.items[0]", {"items": [1, 2, 3]}, {"items": [2, 3]}),
    ('$["odd key"].*', {"odd key": {"a": 1, "b": 2}}, {"odd key": {}}),
    ("$.missing.path", {"x": 1}, {"x": 1}),
])
def test_drop_paths(path, doc, left):
    canon = Canon(drop=(DropRule(path=path, scope="tool_result"),))
    assert canon.apply(doc, "tool_result") == left
    assert canon.apply(doc, "model_request") == doc          # other scopes untouched


def test_rules_can_be_scoped_to_one_tool_and_bad_paths_are_refused():
    canon = Canon(drop=(DropRule(path="$.request_id", scope="tool_arguments", tool="search", reason="a nonce"),))
    assert canon.apply({"request_id": 1}, "tool_arguments", "search") == {}
    assert canon.apply({"request_id": 1}, "tool_arguments", "other") == {"request_id": 1}
    assert "dropped: $.request_id in tool_arguments of search (a nonce)" in canon.describe("tool_arguments", "search")
    with pytest.raises(ValueError, match="bad JSON path"):
        Canon(drop=(DropRule(path="$.a[", scope="tool_result"),)).apply({}, "tool_result")


def test_whitespace_modes():
    assert Canon(whitespace="collapse").apply({"t": " a \n\t b "}, "tool_result") == {"t": "a b"}
    assert Canon(whitespace="exact").apply({"t": " a "}, "tool_result") == {"t": " a "}
    assert Canon().apply({"t": "a \r\nb \n"}, "tool_result") == {"t": "a\nb"}


def test_canonical_request_parses_tool_results_and_hashes_tool_schemas():
    @tool(description="d")
    def f(x: int) -> dict:
        return {}

    req = ModelRequest(messages=[Message(role="user", content="hi"),
                                 Message(role="tool", name="f", tool_call_id="c1", content='{"ok":true,"data":{"n":1}}')],
                       tools=ToolSet([f]).specs(), step=2)
    doc = canonical_request(req)
    assert doc["messages"][1]["content"] == {"ok": True, "data": {"n": 1}}
    assert doc["tools"] == ["f"] and len(doc["tools_hash"]) == 16
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == ("$.a[1].b", 2, 3)


def clock_tools(times):
    @tool(description="订单状态及查询时间")
    def order_status(order_id: str) -> dict:
        return {"order_id": order_id, "status": "paid", "checked_at": next(times)}

    return ToolSet([order_status])


def script() -> ScriptedModel:
    return ScriptedModel([Decision.call("order_status", {"order_id": "A100"}), Decision.final("已付款")])


async def test_a_changed_timestamp_fails_by_default(cassette_dir):
    _, cassette = await record_run(script(), clock_tools(iter(["10:00"])), message="查 A100")
    cassette = Cassette.load(cassette.save(cassette_dir / "c.json"))
    with pytest.raises(ToolResultMismatch) as exc:
        await Replayer(cassette).run(tools=clock_tools(iter(["10:05"])), verify=True)
    assert exc.value.step == 1 and "first difference at $.data.checked_at" in exc.value.detail
    assert "no fields dropped" in exc.value.rule


async def test_an_opt_in_drop_rule_is_stored_in_the_cassette_and_used_when_replaying(cassette_dir):
    canon = Canon(name="ignore-check-time", drop=(
        DropRule(path="$.data.checked_at", scope="tool_result", tool="order_status", reason="not used to decide"),
        DropRule(path="$.messages[*].content.data.checked_at", reason="the same field, as the model sees it"),
    ))
    _, cassette = await record_run(script(), clock_tools(iter(["10:00"])), message="查 A100", canon=canon)
    loaded = Cassette.load(cassette.save(cassette_dir / "c.json"))
    assert loaded.canon == canon
    result = await Replayer(loaded).run(tools=clock_tools(itertools.repeat("10:05")), verify=True)
    assert result.status == "completed"


async def test_a_model_request_mismatch_names_the_canon_it_was_compared_under(cassette_dir):
    canon = Canon(name="no-ids", drop=(DropRule(path="$.messages[*].tool_call_id", reason="provider ids"),))
    _, cassette = await record_run(script(), clock_tools(iter(["10:00"])), message="查 A100", canon=canon)
    loaded = Cassette.load(cassette.save(cassette_dir / "c.json"))
    next(e for e in loaded.events if e.type == "user_message").content = "查 A101"   # the run now asks something else
    with pytest.raises(ModelRequestMismatch) as exc:
        await Replayer(loaded).run()
    assert exc.value.step == 1
    assert "canon 'no-ids'" in exc.value.rule and "$.messages[*].tool_call_id in model_request" in exc.value.rule
