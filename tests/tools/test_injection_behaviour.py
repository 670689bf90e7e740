"""Mock behaviour in YAML (fail the first N calls, fail on the n-th, a sequence
of results, latency) and the params_match operators, checked end to end:
a case's examples run against its own mocks through ``tether case test``."""

from __future__ import annotations

import asyncio
import time

from typer.testing import CliRunner

from tether.cli import app
from tether.tools.injection import CaseInjection, MockedCall, ToolMock, match_value

runner = CliRunner()

CASE = """\
id: behaviour
title: a flaky quote service
dimension: LD
input:
  message: quote for 600519 please, then list the orders
mock_tools:
- name: get_quote
  parameters:
    type: object
    properties:
      code: {type: string}
      days: {type: integer}
- name: list_orders
  parameters:
    type: object
    properties:
      page: {type: integer, default: 1}
tools: [get_quote, list_orders]
tool_config:
- type: tool_mock
  unmatched: error
  mocked_calls:
  - tool: get_quote
    params_match: {code: {regex: '^\\d{6}$'}, days: {min: 1, max: 30}}
    fail_first: 2
    inject_result: {content: '{"price": 1700}'}
  - tool: get_quote
    params_match: {code: {any_of: [茅台, moutai]}}
    inject_result: {content: '{"hint": "use the six-digit code"}'}
  - tool: list_orders
    params_match: {page: {min: 1}}
    results:
    - {content: '{"orders": ["A1"], "has_more": true}'}
    - {content: '{"orders": ["A2"], "has_more": false}'}
    fail_on: [3]
    failure: {is_error: true, content: 'Error: rate limited', error_type: rate_limited}
criteria:
- id: quote-retries
  check: call_count
  tools: [get_quote]
  after_failure: true
  pass: {min: 1, max: 1}
  fail: {min: 2}
- id: recovered
  check: strategies
  tools: [get_quote]
  pass: {min: 1}
  fail: {max: 0}
- id: invented
  check: no_invented
  patterns: ['A\\d']
examples:
EXAMPLES
"""

EXAMPLES = """\
- name: fails-twice-then-answers
  steps:
  - call: get_quote
    args: {code: '600519', days: 5}
    times: 3
  - call: list_orders
    args: {page: 1}
  - call: list_orders
    args: {page: 2}
  - reply: 1700; orders A1 and A2
  expect: {quote-retries: fail, recovered: pass, invented: pass}
- name: a-call-no-operator-matches
  steps:
  - call: get_quote
    args: {code: '6005', days: 5}
  - call: get_quote
    args: {code: MOUTAI, days: 99}
  - reply: nothing
  expect: {quote-retries: pass, recovered: pass}
"""


def _run(tmp_path, examples: str):
    path = tmp_path / "behaviour.yaml"
    path.write_text(CASE.replace("EXAMPLES\n", examples), encoding="utf-8")
    return runner.invoke(app, ["case", "test", str(path)])


def test_the_mocks_behave_as_written(tmp_path):
    res = _run(tmp_path, EXAMPLES)
    assert res.exit_code == 0, res.output
    assert "2 example(s), 5 verdict(s) as expected" in res.output


def test_a_third_quote_call_would_succeed_so_an_example_saying_otherwise_fails(tmp_path):
    # two failures then a price: the third call succeeds, so the count after a failure is 1, not 2
    wrong = EXAMPLES.replace("    times: 3\n", "    times: 2\n", 1)
    res = _run(tmp_path, wrong)
    assert res.exit_code == 1
    assert "example 'fails-twice-then-answers': criterion quote-retries expected fail, got pass" in res.output
    # the sequence's second page is what the second call got: the reply's A2 came from a tool
    assert "invented" not in res.output.split("FAIL", 1)[1]


def test_the_sequence_and_fail_on_in_order():
    async def main():
        layer = CaseInjection([ToolMock.model_validate({
            "type": "tool_mock",
            "mocked_calls": [{"tool": "list_orders", "results": [{"content": "1"}, {"content": "2"}],
                              "fail_on": [3], "latency_ms": 20}]})])

        async def world(name, args):
            raise AssertionError("the mock answers")

        started = time.monotonic()
        got = [await layer("list_orders", {}, world) for _ in range(4)]
        return got, time.monotonic() - started

    got, took = asyncio.run(main())
    assert [(r.ok, r.data if r.ok else r.error_type) for r in got] == [
        (True, 1), (True, 2), (False, "unavailable"), (True, 2)]
    assert took >= 4 * 0.02          # latency is a lower bound: each answer waited


def test_operators():
    assert match_value({"contains": "李宁"}, "羽毛球鞋 李 宁 男")
    assert not match_value({"contains": "安踏"}, "羽毛球鞋 李宁")
    assert match_value({"regex": r"^\d{4}-\d{2}-\d{2}$"}, "2026-04-17")
    assert not match_value({"regex": r"^\d{4}-"}, "下周五")
    assert match_value({"any_of": ["北京", "Beijing"]}, "beijing")
    assert match_value({"min": 1, "max": 5}, "３")          # text that reads as a number, NFKC
    assert not match_value({"min": 1}, 0)
    assert not match_value({"min": 1}, "one")
    assert match_value({"page": 1}, {"page": 1})            # a mapping with other keys: equality
    assert not MockedCall.model_validate({"tool": "t", "inject_result": {"content": "x"}}).fail_first


def test_bad_behaviour_and_operators_are_located_errors(tmp_path):
    text = CASE.replace("EXAMPLES\n", EXAMPLES).replace("{regex: '^\\d{6}$'}", "{regex: '[0-9'}") \
        .replace("    fail_first: 2\n", "    fail_first: -1\n")
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    res = runner.invoke(app, ["case", "validate", str(path)])
    assert res.exit_code == 1
    rows = [r for r in res.output.splitlines() if r.startswith("error ")]
    assert any(":24:" in r and "regex: not a regular expression" in r for r in rows), res.output
    assert any(":25:" in r and "fail_first" in r for r in rows), res.output
