"""Your own tools in cases: a toolset factory, tools declared by schema, open dimensions.

The cases live in a user's folder, as a team writing cases for its own domain
would keep them, and run through ``tether eval ./my-cases``.

The tools take a ``keyword`` argument: the offline calibration agent
(``policy:steady``) fills query-like arguments from the request.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tether.cli import app
from tether.evals import load_suite
from tether.evals.world import case_toolset

MYTOOLS = '''\
from tether.tools import ToolResult, ToolSet, tool

CALLS = []


@tool(description="订单查询：按订单号查询订单状态。Look up an order.")
def lookup_order(keyword: str) -> dict:
    CALLS.append(keyword)
    return {"order": keyword, "status": "已发货", "carrier": "顺丰"}


@tool(description="物流查询：按订单号查询物流轨迹。Track a parcel.")
def track_parcel(keyword: str):
    return ToolResult.failure("tracking service unavailable (HTTP 503)", "unavailable")


def toolset():
    return ToolSet([lookup_order, track_parcel])
'''

TOOLSET_CASE = """\
id: SHOP-01
title: 物流查询一直失败
dimension: SEARCH              # an open label: not one of C4's
input:
  message: 帮我查一下订单 A1001 的状态，再查一下它的物流
toolset: "{module}:toolset"
tools: [lookup_order, track_parcel]
tool_config:                  # the case's intercepts still apply in front of your tools
  type: tool_intercept
  intercept_tool: track_parcel
  inject_tool_result: {{is_error: true, content: "Error: tracking down (HTTP 503)", error_type: unavailable}}
criteria:
- id: calls
  check: call_count
  tools: [track_parcel]
  pass: {{max: 3}}
  fail: {{min: 6}}
"""

MOCK_CASE = """\
id: SHOP-02
title: 只有 mock 的工具
dimension: ORDERS
input:
  message: 查一下订单 A1001 的状态
mock_tools:
- name: lookup_order
  description: 订单查询：按订单号查询订单状态。Look up an order.
  parameters:
    type: object
    properties:
      keyword: {type: string, description: 订单号，如 A1001。Order number.}
    required: [keyword]
tools: [lookup_order]
tool_config:
  type: tool_mock
  mocked_calls:
  - tool: lookup_order
    inject_result: {is_error: false, content: '{"order_id": "A1001", "status": "已签收"}'}
criteria:
- id: called
  check: tool_called
  tools: [lookup_order]
"""


def _folder(tmp_path: Path, module: str) -> Path:
    cases = tmp_path / "my-cases"
    cases.mkdir()
    (cases / "shop-01.yaml").write_text(TOOLSET_CASE.format(module=module), encoding="utf-8")
    (cases / "shop-02.yaml").write_text(MOCK_CASE, encoding="utf-8")
    return cases


def _eval(cases: Path, tmp_path: Path):
    out = CliRunner().invoke(app, ["eval", str(cases), "--model", "policy:steady", "--out", str(tmp_path / "runs"),
                                   "--json", str(tmp_path / "r.json"), "-q"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))


def test_a_toolset_factory_on_the_path(tmp_path, monkeypatch):
    code = tmp_path / "code"
    code.mkdir()
    (code / "mytools_path.py").write_text(MYTOOLS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(code))
    cases = _folder(tmp_path, "mytools_path")

    [shop1, shop2] = load_suite(cases)
    assert shop1.dimension == "SEARCH" and shop2.dimension == "ORDERS" and shop1.suite == "my-cases"
    tools = case_toolset(shop1)
    assert tools.names() == ["lookup_order", "track_parcel"]

    doc = _eval(cases, tmp_path)
    [run] = doc["runs"]
    by_id = {c["case_id"]: c for c in run["cases"]}
    assert set(by_id) == {"SHOP-01", "SHOP-02"}
    trial = by_id["SHOP-01"]["trials"][0]
    assert trial["status"] != "error", trial
    assert set(run["dimensions"]) == {"SEARCH", "ORDERS"}
    # the user's own tool ran, and the intercept answered the other one
    import mytools_path

    assert mytools_path.CALLS, "lookup_order (the user's function) was never called"
    trace = (tmp_path / "runs" / f"{trial['run_id']}.jsonl").read_text(encoding="utf-8")
    sources = {json.loads(line).get("source") for line in trace.splitlines() if '"tool_result"' in line}
    assert "intercept" in sources and "tool" in sources
    assert by_id["SHOP-02"]["trials"][0]["verdict"] == "pass"


def test_a_toolset_module_in_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "mytools_cwd.py").write_text(MYTOOLS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    cases = _folder(tmp_path, "mytools_cwd")
    validate = CliRunner().invoke(app, ["case", "validate", str(cases)], catch_exceptions=False)
    assert validate.exit_code == 0, validate.output
    doc = _eval(Path("my-cases"), tmp_path)
    assert {c["case_id"] for c in doc["runs"][0]["cases"]} == {"SHOP-01", "SHOP-02"}
    assert all(t["status"] != "error" for c in doc["runs"][0]["cases"] for t in c["trials"])


def test_mock_tools_only_case_runs_anywhere(tmp_path):
    path = tmp_path / "shop-02.yaml"
    path.write_text(MOCK_CASE, encoding="utf-8")
    doc = _eval(path, tmp_path)
    [case] = doc["runs"][0]["cases"]
    assert case["case_id"] == "SHOP-02" and case["trials"][0]["verdict"] == "pass"


def test_a_broken_toolset_is_one_clear_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "c.yaml"
    path.write_text(TOOLSET_CASE.format(module="no_such_module_here"), encoding="utf-8")
    out = CliRunner().invoke(app, ["case", "validate", str(path)], catch_exceptions=False)
    assert out.exit_code == 1
    assert f"{path}:6:10 [toolset]" in out.output and "module 'no_such_module_here' not found" in out.output
    assert "Traceback" not in out.output


def test_unknown_tool_among_your_own(tmp_path, monkeypatch):
    code = tmp_path / "code"
    code.mkdir()
    (code / "mytools_typo.py").write_text(MYTOOLS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(code))
    path = tmp_path / "c.yaml"
    path.write_text(TOOLSET_CASE.format(module="mytools_typo").replace("tools: [lookup_order, track_parcel]",
                                                                      "tools: [lookup_ordre, track_parcel]"),
                    encoding="utf-8")
    out = CliRunner().invoke(app, ["case", "validate", str(path)], catch_exceptions=False)
    assert out.exit_code == 1 and "unknown tool 'lookup_ordre'; did you mean 'lookup_order'?" in out.output
