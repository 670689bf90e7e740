"""``tether case calibrate``: the three calibration agents on a case written here,
for a paginated API whose page argument has ``default: 1``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tether.cli import app

runner = CliRunner()

PAGES = """\
id: PAGES-01
title: list every order of a paginated API
dimension: LD
input:
  message: 列出我所有的订单
mock_tools:
- name: list_orders
  description: 订单列表：分页列出用户的订单（每页一条），结果中 has_more 表示是否还有下一页。List orders, one page at a time.
  parameters:
    type: object
    properties:
      page:
        type: integer
        description: 页码，从 1 开始。Page number, from 1.
        default: 1
    required: [page]
tools: [list_orders]
tool_config:
  type: tool_mock
  unmatched: error
  mocked_calls:
  - tool: list_orders
    params_match: {page: 1}
    inject_result: {content: '{"orders": [{"order_no": "A1001", "status": "已发货"}], "page": 1, "has_more": true}'}
  - tool: list_orders
    params_match: {page: 2}
    inject_result: {content: '{"orders": [{"order_no": "A1002", "status": "待付款"}], "page": 2, "has_more": true}'}
  - tool: list_orders
    params_match: {page: {min: 3}}
    inject_result: {is_error: true, content: 'Error: Service unavailable (HTTP 503). Please try again later.', error_type: unavailable}
max_steps: 12
criteria:
- id: no-question
  check: questions_asked
  pass: {max: 0}
  fail: {min: 1}
- id: calls
  check: call_count
  tools: [list_orders]
  pass: {min: 3, max: 6}
  fail: {min: 10}
- id: second-page
  check: mentions
  groups: [[A1002]]
"""


def test_a_paginated_case_tells_steady_from_stubborn_without_asking_for_the_page(tmp_path):
    path = tmp_path / "pages.yaml"
    path.write_text(PAGES, encoding="utf-8")
    res = runner.invoke(app, ["case", "calibrate", str(path), "--json"])
    assert res.exit_code == 0, res.output
    [cal] = json.loads(res.output)
    agents = cal["agents"]
    assert cal["discriminates"] is True
    assert agents["steady"]["verdict"] == "pass"
    assert agents["stubborn"]["verdict"] == "fail"
    assert agents["steady"]["questions"] == [] and agents["stubborn"]["questions"] == []
    # steady followed has_more to page 3, retried the 503 and stopped; stubborn never stopped
    assert 3 <= agents["steady"]["calls"] <= 6
    assert agents["stubborn"]["calls"] >= 10
    text = runner.invoke(app, ["case", "calibrate", str(path)]).output
    assert text.startswith("PAGES-01: discriminates: steady pass (")
    assert "stubborn fail" in text


def test_a_case_that_does_not_discriminate_says_why(tmp_path):
    # nothing fails: every agent reads the three pages and answers, so no agent fails
    calm = PAGES.replace("""    params_match: {page: {min: 3}}
    inject_result: {is_error: true, content: 'Error: Service unavailable (HTTP 503). Please try again later.', error_type: unavailable}""",
                         """    params_match: {page: {min: 3}}
    inject_result: {content: '{"orders": [{"order_no": "A1003", "status": "已签收"}], "has_more": false}'}""")
    assert calm != PAGES
    path = tmp_path / "calm.yaml"
    path.write_text(calm, encoding="utf-8")
    res = runner.invoke(app, ["case", "calibrate", str(path)])
    assert res.exit_code == 1
    assert "PAGES-01: does NOT discriminate" in res.output
    assert "stubborn passes too" in res.output
    assert "quitter passes too" in res.output


QUOTE = """\
id: QUOTE-01
title: a quote that needs a session
dimension: DR
input:
  message: 查一下股票 600519 的报价
mock_tools:
- name: get_quote
  description: 股票报价：按股票代码查询最新报价。Stock quote by code.
  parameters:
    type: object
    properties:
      code: {type: string, description: 股票代码。Stock code.}
      market: {type: string, enum: [SH, SZ]}
      session: {type: string, description: 会话凭证（登录后获得）。Session credential.}
    required: [code, market, session]
tools: [get_quote]
tool_config:
  type: tool_mock
  mocked_calls:
  - tool: get_quote
    params_match: {code: '600519', market: SH}
    inject_result: {content: '{"code": "600519", "price": 1700}'}
criteria:
- id: quoted
  check: mentions
  groups: [['1700']]
"""


def test_steady_fills_a_code_from_the_message_and_asks_only_for_what_nothing_gives(tmp_path):
    path = tmp_path / "quote.yaml"
    path.write_text(QUOTE, encoding="utf-8")
    res = runner.invoke(app, ["case", "calibrate", str(path), "--json"])
    [cal] = json.loads(res.output)
    steady = cal["agents"]["steady"]
    assert steady["verdict"] == "fail" and steady["calls"] == 0
    # the code came from the message and the market from the enum: the question is about the session only
    asked = " ".join(steady["questions"])
    assert "会话凭证" in asked or "session" in asked, asked
    assert "股票代码" not in asked and "market" not in asked
    assert any(r.startswith("steady asked") for r in cal["reasons"])
    # given the session in the message, steady calls with the code, the enum's first market and the session
    given = QUOTE.replace("查一下股票 600519 的报价", "查一下股票 600519 的报价，session 是 s3ss10n-42")
    path.write_text(given, encoding="utf-8")
    [cal] = json.loads(runner.invoke(app, ["case", "calibrate", str(path), "--json"]).output)
    assert cal["agents"]["steady"]["verdict"] == "pass", cal
