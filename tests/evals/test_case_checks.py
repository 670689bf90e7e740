"""The traps a case file used to validate through: each is now an error or a
warning with file:line:column, through ``tether case validate``."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from tether.cli import app

runner = CliRunner()

BASE = """\
id: trap
title: pages
dimension: LD
input:
  message: list the orders from page 1
mock_tools:
- name: list_orders
  parameters:
    type: object
    properties:
      page: {PAGE}
      status: {type: string}
tools: [list_orders]
tool_config:
  type: tool_mock
  mocked_calls:
  - tool: list_orders
    params_match: {MATCH}
    inject_result: {content: '{"orders": [], "next": null}'}
criteria:
- id: calls
  check: call_count
  tools: [list_orders]
  pass: {PASS}
  fail: {FAIL}
"""


def case(tmp_path, *, page="{type: integer, description: 'page number, from 1.', default: 1}",
         match="{page: 1}", pass_="{min: 1, max: 3}", fail="{min: 6}", extra=""):
    text = (BASE.replace("{PAGE}", page).replace("{MATCH}", match).replace("{PASS}", pass_)
            .replace("{FAIL}", fail)) + extra
    path = tmp_path / "trap.yaml"
    path.write_text(text, encoding="utf-8")
    res = runner.invoke(app, ["case", "validate", str(path)])
    return res, res.output


def located(output: str, line: int, what: str) -> bool:
    return any(re.search(rf"trap\.yaml:{line}:\d+ .*{what}", row) for row in output.splitlines())


def test_a_clean_case_validates_with_only_the_no_examples_warning(tmp_path):
    res, out = case(tmp_path)
    assert res.exit_code == 0, out
    assert "warning" in out and "no examples" in out
    assert len([row for row in out.splitlines() if row.startswith("warning ")]) == 1


def test_an_unknown_params_match_key_is_an_error_with_its_line(tmp_path):
    res, out = case(tmp_path, match="{pgae: 1}")
    assert res.exit_code == 1
    assert located(out, 18, "params_match: tool 'list_orders' has no argument 'pgae'; did you mean 'page'")


def test_overlapping_and_inverted_ranges_are_errors(tmp_path):
    res, out = case(tmp_path, pass_="{min: 1, max: 4}", fail="{min: 3}")
    assert res.exit_code == 1
    assert located(out, 25, r"overlap on 3\.\.4")
    res, out = case(tmp_path, pass_="{min: 5, max: 2}", fail="{min: 6}")
    assert res.exit_code == 1
    assert located(out, 24, "inverted pass range: min 5 is above max 2")
    res, out = case(tmp_path, fail="{min: 9, max: 7}")
    assert located(out, 25, "inverted fail range")


def test_the_flow_mapping_comma_trap_is_an_error(tmp_path):
    res, out = case(tmp_path, page="{type: integer, description: page number, from 1.}")
    assert res.exit_code == 1
    assert located(out, 11, "schema key 'from 1.' with no value")
    assert "quote the description" in out


def test_a_prose_property_name_is_a_warning(tmp_path):
    res, out = case(tmp_path, page="{type: integer}\n      the page number.: {type: string}")
    assert res.exit_code == 0, out
    assert located(out, 12, "property name 'the page number.' reads like prose")


def test_criteria_no_run_can_decide_are_errors(tmp_path):
    extra = """\
- id: counter-on-a-missing-tool
  check: call_count
  tools: [search_orders]
  pass: {max: 2}
- id: status
  check: status_in
  statuses: [complete]
- id: invented
  check: no_invented
  patterns: ['[A-Z']
- id: nothing
  check: tool_called
  tools: []
"""
    res, out = case(tmp_path, extra=extra)
    assert res.exit_code == 1
    assert located(out, 28, "counts tool 'search_orders', which is not listed under tools")
    assert located(out, 32, "no run ends with status 'complete'; did you mean 'completed'")
    assert located(out, 35, "not a regular expression")
    assert located(out, 38, "over no tools can never be decided")


def test_params_match_on_a_world_tool_is_checked_against_its_schema(tmp_path):
    text = runner.invoke(app, ["case", "show", "C4-PA-01"]).output
    path = tmp_path / "world.yaml"
    assert "tool_config" in text
    text += """\
examples:
- name: wrong-argument
  steps:
  - call: taobao_search_products
    args: {keywrd: 羽毛球鞋}
  - reply: 好的
  expect: {PA-01.search: pass}
"""
    path.write_text(text, encoding="utf-8")
    res = runner.invoke(app, ["case", "validate", str(path)])
    out = res.output
    assert res.exit_code == 1
    assert "tool 'taobao_search_products' has no argument 'keywrd'" in out


def test_a_mock_tool_schema_json_schema_refuses_is_an_error_with_its_line_not_a_crash_at_run(tmp_path):
    res, out = case(tmp_path, page="{type: '['}")
    assert res.exit_code == 1, out
    assert located(out, 11, r"not a valid JSON Schema: '\[' is not valid"), out
    for argv in (["case", "test", str(tmp_path / "trap.yaml")],
                 ["run", str(tmp_path / "trap.yaml"), "--store", str(tmp_path / "t.db")]):
        res = runner.invoke(app, argv, env={"TETHER_DEBUG": ""})
        assert res.exit_code in (1, 2), (argv, res.output)     # was 70: jsonschema's SchemaError at the tool's build
        assert "not a valid JSON Schema" in res.output and "internal error" not in res.output, res.output


EXAMPLES = """examples:
- name: calls-once
  steps:
  - call: list_orders
    args: {page: 1}
  - reply: none
  expect: {calls: pass}
"""


def test_a_tool_list_of_non_text_is_a_schema_error_not_a_crash(tmp_path):
    for bad in ("true", "1e308", "null", "[a]"):
        path = tmp_path / "trap.yaml"
        text = BASE.replace("{PAGE}", "{type: integer}").replace("{MATCH}", "{page: 1}").replace(
            "{PASS}", "{min: 1, max: 3}").replace("{FAIL}", "{min: 6}")
        path.write_text(text.replace("tools: [list_orders]", f"tools: [{bad}]") + EXAMPLES, encoding="utf-8")
        res = runner.invoke(app, ["case", "validate", str(path)], env={"TETHER_DEBUG": ""})
        assert res.exit_code == 1, (bad, res.output)
        assert located(res.output, 13, r"\[tools\.0\]"), (bad, res.output)
        assert "internal error" not in res.output
