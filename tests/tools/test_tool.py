import asyncio

import pytest
from pydantic import BaseModel

from tether import Tool, ToolResult, ToolSet, tool
from tether.tools.injection import CaseInjection, normalize_match_value, params_match
from tether.tools.injection import ToolIntercept, ToolMock


class RefundArgs(BaseModel):
    order_id: str
    amount: int


def call(ts: ToolSet, name, args):
    return asyncio.run(ts.call(name, args))


def test_schema_from_pydantic_and_validation():
    t = Tool("create_refund", "退款", RefundArgs, lambda order_id, amount: {"refund_id": "R900"}, side_effect=True)
    assert t.spec.parameters["required"] == ["order_id", "amount"]
    assert t.spec.side_effect
    ts = ToolSet([t])
    assert call(ts, "create_refund", {"order_id": "A100", "amount": 19900}).data == {"refund_id": "R900"}
    bad = call(ts, "create_refund", {"order_id": "A100", "amount": "lots"})
    assert not bad.ok and bad.error_type == "invalid_arguments" and "amount" in bad.error


def test_schema_from_dict():
    t = Tool("search", "搜索", {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"],
                                "additionalProperties": False}, lambda q: {"hits": [q]})
    ts = ToolSet([t])
    assert call(ts, "search", {"q": "x"}).ok
    r = call(ts, "search", {})
    assert r.error_type == "invalid_arguments" and "'q' is a required property" in r.error


def test_unknown_tool_raising_tool_and_non_object_arguments_are_error_results():
    @tool(description="boom")
    def boom():
        raise RuntimeError("disk on fire")

    ts = ToolSet([boom])
    unknown = call(ts, "nope", {})
    assert (unknown.ok, unknown.error_type) == (False, "unknown_tool")
    assert "available tools: boom" in unknown.error
    raised = call(ts, "boom", {})
    assert (raised.error_type, raised.error) == ("exception", "RuntimeError: disk on fire")
    assert call(ts, "boom", ["x"]).error_type == "invalid_arguments"


def test_tool_may_return_an_envelope():
    @tool(description="stock")
    def stock(sku: str):
        return ToolResult.failure("库存不足", "rejected")

    r = call(ToolSet([stock]), "stock", {"sku": "s"})
    assert (r.ok, r.error, r.error_type) == (False, "库存不足", "rejected")


@pytest.mark.parametrize("sent,expected,match", [
    ("羽毛球鞋李宁", "羽毛球鞋 李宁", True),
    ("羽毛球鞋  李宁 ", "羽毛球鞋 李宁", True),
    ("２０２６款特斯拉 model y", "2026款特斯拉Model Y", True),   # NFKC full-width digits, case folded
    ("李宁羽毛球鞋", "羽毛球鞋 李宁", False),                     # word order matters
    ("羽毛球鞋 李宁 男", "羽毛球鞋 李宁", False),                 # equality, not containment
])
def test_params_match_normalization(sent, expected, match):
    assert params_match({"keyword": expected}, {"keyword": sent}) is match


def test_params_match_non_strings_and_missing_keys():
    assert params_match({"n": 3}, {"n": 3})
    assert params_match({"n": 3}, {"n": "3"})        # a number sent as a string still matches
    assert not params_match({"n": 3}, {"n": 4})
    assert params_match({"tags": ["a", "b"]}, {"tags": ["a", "b"]})
    assert not params_match({"keyword": "x"}, {})
    assert params_match(None, {"anything": 1})
    assert normalize_match_value(" A b ") == "ab"


def _world():
    @tool(description="search")
    def search(keyword: str):
        return ToolResult.success({"from": "world", "keyword": keyword}, source="world")

    @tool(description="lookup")
    def lookup(city: str):
        return {"id": 1}

    return ToolSet([search, lookup])


def test_intercept_and_mock_layers():
    intercept = ToolIntercept.model_validate({
        "type": "tool_intercept", "intercept_tools": ["lookup"],
        "inject_tool_result": {"is_error": True, "content": "Error: Service unavailable (HTTP 503)."}})
    mock = ToolMock.model_validate({"type": "tool_mock", "mocked_calls": [
        {"tool": "search", "params_match": {"keyword": "羽毛球鞋 李宁"},
         "inject_result": {"is_error": False, "content": '{"total": 0, "products": []}'}}]})
    ts = _world().with_layer(CaseInjection([intercept, mock]))
    r = call(ts, "lookup", {"city": "北京"})
    assert (r.ok, r.source, r.error_type) == (False, "intercept", "tool_error")
    assert r.error == "Error: Service unavailable (HTTP 503)."
    m = call(ts, "search", {"keyword": "羽毛球鞋李宁"})
    assert (m.ok, m.source, m.data) == (True, "mock", {"total": 0, "products": []})
    w = call(ts, "search", {"keyword": "李宁羽毛球鞋"})
    assert (w.source, w.data["from"]) == ("world", "world")


@pytest.mark.parametrize("policy,ok,error_type", [("empty", True, None), ("error", False, "not_found")])
def test_unmatched_policies(policy, ok, error_type):
    mock = ToolMock.model_validate({"type": "tool_mock", "unmatched": policy, "mocked_calls": [
        {"tool": "search", "params_match": {"keyword": "a"}, "inject_result": {"content": "plain text"}}]})
    ts = _world().with_layer(CaseInjection([mock]))
    assert call(ts, "search", {"keyword": "a"}).data == "plain text"   # non-JSON content stays text
    r = call(ts, "search", {"keyword": "b"})
    assert (r.ok, r.error_type) == (ok, error_type)
