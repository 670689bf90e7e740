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
    assert (line, field) == (15, "criteria.0.pass.min") and msg == "expected a whole number (got 'three')"


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
    assert found[1][:2] == (9, "tool_config.intercept_tool")
    assert "intercepts or mocks tool 'search_flights', which is not listed under tools:" in found[1][2]
    assert found[2][:2] == (14, "criteria.0.tools.0") and "criterion counts tool 'search_flights'" in found[2][2]


def test_a_directory_of_cases_is_a_suite(tmp_path):
    write(tmp_path, VALID, "a.yaml")
    write(tmp_path, VALID.replace("MY-01", "MY-02"), "b.yaml")
    assert [c.id for c in load_suite(tmp_path)] == ["MY-01", "MY-02"]


def test_builtin_suite_loads():
    ids = [c.id for c in load_suite("c4")]
    assert ids == sorted(ids) and len(ids) == 16        # the seed's 12 and tether's 4 follow-ups
    assert {i.split("-")[1] for i in ids} == {"LD", "DR", "PA", "AR"}


# -- every problem in one pass, in the case format's words ---------------------------------
def located(path: Path):
    with pytest.raises(CaseFileError) as exc:
        load_case(path)
    return [(loc.line, loc.column, loc.field, msg) for loc, msg in exc.value.problems]


def test_schema_errors_and_unknown_tools_come_together(tmp_path):
    text = (VALID.replace("tools: [search_flights, web_search]", "tools: [search_flights, web_serch]")
            .replace("pass: {min: 3, max: 4}", "pass: [3, 4]"))
    found = located(write(tmp_path, text))
    assert [(line, col, field) for line, col, field, _ in found] == [(6, 25, "tools.1"), (15, 11, "criteria.0.pass")]
    assert "unknown tool 'web_serch'; did you mean 'web_search'?" in found[0][3]
    msg = found[1][3]
    assert msg.startswith("expected a range like {min: 1, max: 4} (keys min and max") and "got [3, 4]" in msg
    assert "Range" not in msg and "dictionary" not in msg and "instance" not in msg


MESSAGES = [
    ("    fail: {min: 7}", "    fail: 7", "criteria.0.fail", "expected a range like {min: 1, max: 4}"),
    ("    check: call_count", "    check: call_cnt", "criteria.0", "unknown check 'call_cnt'; checks: call_count, "),
    ("    check: call_count", "    kind: judge\n    check: call_count", "criteria.0.check",
     "a kind: judge criterion takes check: rubric"),
    ("    tools: [search_flights]\n", "    tools: [search_flights]\n    includ_history: true\n",
     "criteria.0.includ_history", "unknown key 'includ_history'; keys here: id, description"),
    ("  inject_tool_result: {is_error: true, content: \"Error: boom\"}",
     "  inject_tool_result: {is_error: true, content: \"Error: boom\", errortype: x}",
     "tool_config.0.inject_tool_result.errortype", "unknown key 'errortype' (did you mean 'error_type'?)"),
    ("dimension: LD", "dimension: L D", "dimension", "a dimension is a short label"),
    ("  message: 查一下下周五北京到上海的机票", "  message: ''", "input", "input needs a message"),
]


@pytest.mark.parametrize("old,new,field,start", MESSAGES, ids=[m[2] for m in MESSAGES])
def test_messages_name_keys_not_classes(tmp_path, old, new, field, start):
    assert old in VALID
    found = located(write(tmp_path, VALID.replace(old, new)))
    [msg] = [m for _, _, f, m in found if f == field]
    assert start in msg
    assert not any(word in msg for word in ("Range", "CallCount", "Rubric", "InjectedResult", "instance of"))


def test_groups_of_mentions_explained_once(tmp_path):
    text = VALID + "  - id: said\n    check: mentions\n    groups: [机票, 日期]\n"
    found = located(write(tmp_path, text))
    assert [(f, m.split(";")[0]) for _, _, f, m in found] == [("criteria.1.groups", "each group is a list of terms")]


def test_duplicate_keys_and_ids_are_problems(tmp_path):
    text = VALID.replace("title: 测试用例", "title: 测试用例\ntitle: again") + "  - id: calls\n    check: status_in\n    statuses: [completed]\n"
    found = located(write(tmp_path, text))
    assert any("key 'title' appears twice" in m and line == 3 for line, _, _, m in found)
    assert any(f == "criteria.1.id" and "'calls' is used twice" in m for _, _, f, m in found)


# -- hostile and wrong-kind files ----------------------------------------------------------
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("text,expected", [
    (LAUGHS, "too many values once aliases are expanded"),
    ("a: &a [1, *a]\n", "an alias refers to a value that contains it"),
    ("x: " + "[" * 60 + "]" * 60 + "\n", "nested too deeply"),
    ("x: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
    ("x: '" + "a" * 1_100_000 + "'\n", "file too large"),
    ("", "the file is empty"),
    ("id: A\n---\nid: B\n", "more than one YAML document"),
    ("- just\n- a list\n", "a case file must be a YAML mapping"),
], ids=["billion-laughs", "cycle", "deep", "deeper", "large", "empty", "two-documents", "list"])
def test_hostile_yaml_is_refused_cleanly(tmp_path, text, expected):
    [(line, _, _, msg)] = located(write(tmp_path, text))
    assert expected in msg and line is not None


@pytest.mark.parametrize("text,expected", [
    ('{"format": "tether.results", "version": 1, "suite": "c4", "runs": []}\n',
     "this is a results document (written by tether eval --json), not a case file"),
    ('{"seq": 0, "type": "run_started", "run_id": "r"}\n{"seq": 1, "type": "run_finished"}\n',
     "this is a run trace (JSON Lines of events), not a case file"),
    ('{"format": "tether.cassette", "version": 1}\n', "this is a replay cassette, not a case file"),
], ids=["results", "trace", "cassette"])
def test_other_tether_files_are_named(tmp_path, text, expected):
    [(_, _, _, msg)] = located(write(tmp_path, text, "thing.json"))
    assert msg.startswith(expected)


# -- finding cases by id -------------------------------------------------------------------
def test_ids_match_case_insensitively_and_misses_suggest():
    from tether.errors import UsageError
    from tether.evals.loader import find_case

    assert find_case("c4-ld-01").id == "C4-LD-01"
    with pytest.raises(UsageError, match="did you mean C4-LD-01\\?"):
        find_case("C4-LD-1")
    with pytest.raises(UsageError, match="no case 'zzz' in the c4 suite \\(list them"):
        find_case("zzz")


def test_a_file_read_again_is_a_case_of_its_own_and_an_edit_is_seen(tmp_path):
    """The YAML of a file is read once per text in a process (tether.evals.loader._parsed): every load still
    returns its own case, and an edited file is read anew, its checks included."""
    from tether.evals.case_index import summary

    p = write(tmp_path, VALID)
    first = load_case(p)
    first.input.message = "changed by the caller"
    first.criteria[0].tools.append("web_search")
    again = load_case(p)
    assert again.input.message == "查一下下周五北京到上海的机票" and again.criteria[0].tools == ["search_flights"]
    assert summary(p).title == "测试用例"
    write(tmp_path, VALID.replace("测试用例", "改过的").replace("tools: [search_flights]", "tools: [search_flight]"))
    assert summary(p).title == "改过的"
    assert any("search_flight" in msg for _, _, msg in problems(p))
