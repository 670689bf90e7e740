"""Case files: errors with file, line and field; new cases need no code change."""

from pathlib import Path

import pytest

from tether.errors import CaseFileError
from tether.evals import load_case, load_suite

VALID = """\
id: MY-01
title: 测试用例
dimension: LD
input:
  message: 查一下下周五北京到上海的机票
tools: [search_flights, web_search]
tool_config:
  type: tool_intercept
  intercept_tool: search_flights
  inject_tool_result: {is_error: true, content: "Error: boom"}
criteria:
  - id: calls
    check: call_count
    tools: [search_flights]
    pass: {min: 3, max: 4}
    fail: {min: 7}
"""


def write(tmp_path: Path, text: str, name: str = "case.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def problems(path: Path):
    with pytest.raises(CaseFileError) as exc:
        load_case(path)
    return [(loc.line, loc.field, msg) for loc, msg in exc.value.problems]


def test_valid_case_loads(tmp_path):
    c = load_case(write(tmp_path, VALID))
    assert c.id == "MY-01" and c.tool_config[0].tools == ["search_flights"]


def test_wrong_field_type_names_line_and_field(tmp_path):
    text = VALID.replace("pass: {min: 3, max: 4}", "pass: {min: three, max: 4}")
    [(line, field, msg)] = problems(write(tmp_path, text))
    assert (line, field) == (15, "criteria.0.pass.min") and "integer" in msg


def test_unknown_key_names_its_line(tmp_path):
    text = VALID.replace("  message:", "  colour: red\n  message:")
    [(line, field, msg)] = problems(write(tmp_path, text))
    assert (line, field) == (5, "input.colour") and "unknown key" in msg


def test_broken_yaml(tmp_path):
    path = write(tmp_path, VALID.replace("tools: [search_flights, web_search]", "tools: [search_flights, web_search"))
    [(line, field, msg)] = problems(path)
    assert line is not None and "broken YAML" in msg


def test_unknown_tool_and_unlisted_configured_tool(tmp_path):
    text = VALID.replace("tools: [search_flights, web_search]", "tools: [web_search, teleport]")
    found = problems(write(tmp_path, text))
    assert (6, "tools.1") == found[0][:2] and "unknown tool 'teleport'" in found[0][2]
    assert "'search_flights' is intercepted or mocked but not listed" in found[1][2]


def test_a_directory_of_cases_is_a_suite(tmp_path):
    write(tmp_path, VALID, "a.yaml")
    write(tmp_path, VALID.replace("MY-01", "MY-02"), "b.yaml")
    assert [c.id for c in load_suite(tmp_path)] == ["MY-01", "MY-02"]


def test_builtin_suite_loads():
    ids = [c.id for c in load_suite("c4")]
    assert ids == sorted(ids) and len(ids) == 12
    assert {i.split("-")[1] for i in ids} == {"LD", "DR", "PA", "AR"}
