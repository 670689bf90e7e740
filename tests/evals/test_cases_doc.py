"""docs/cases.md is a reference a user can write from: every block in it runs as written.

* the shell block's commands run (through the CLI) in a scratch folder;
* every YAML block validates: a whole case as it is, a part of one merged into
  a small base case; the Python block is the ``mytools`` module a YAML block uses;
* every key of the case schema and every check has its place in the page;
* the scenario-tools section is what the code generates today.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tether.cli import app
from tether.evals import load_case_text
from tether.evals.case import Case
from tether.evals.case_errors import CHECKS
from tether.evals.templates import doc_section

DOC = Path(__file__).resolve().parents[2] / "docs" / "cases.md"
TEXT = DOC.read_text(encoding="utf-8")
BLOCKS = [(m.group(1), m.group(2)) for m in re.finditer(r"^ *```(\w+)\n(.*?)^ *```$", TEXT, re.M | re.S)]

BASE = {
    "id": "DOC-01", "title": "doc", "dimension": "LD",
    "input": {"message": "查一下下周五北京到上海的机票"},
    "tools": ["search_flights", "web_search", "taobao_search_products", "beike_lookup_city_id",
              "beike_search_resale_housing", "maps_text_search", "zhihu_search_questions", "zhihu_get_answers"],
    "criteria": [{"id": "base", "check": "status_in", "statuses": ["completed"]}],
}


def _dedent(block: str) -> str:
    lines = block.splitlines()
    indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return "\n".join(x[indent:] for x in lines) + "\n"


def yaml_blocks() -> list[str]:
    return [_dedent(body) for lang, body in BLOCKS if lang == "yaml"]


def test_the_page_has_its_blocks():
    langs = [lang for lang, _ in BLOCKS]
    assert langs.count("sh") == 1 and langs.count("python") == 1 and langs.count("yaml") >= 16


@pytest.fixture
def mytools(tmp_path, monkeypatch):
    [python] = [body for lang, body in BLOCKS if lang == "python"]
    (tmp_path / "mytools.py").write_text(_dedent(python), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("index", range(len(yaml_blocks())))
def test_every_yaml_block_validates(index, mytools):
    text = yaml_blocks()[index]
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    if {"id", "criteria"} <= set(data):
        case = load_case_text(text, f"docs/cases.md block {index}")
    else:                                    # a part of a case: merged into the base
        merged = {**BASE, **data}
        if "criteria" in data:
            merged["criteria"] = [*BASE["criteria"], *data["criteria"]]
        case = load_case_text(yaml.safe_dump(merged, allow_unicode=True, sort_keys=False),
                              f"docs/cases.md block {index}")
    assert case.id


def test_the_commands_run_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    [sh] = [body for lang, body in BLOCKS if lang == "sh"]
    ran = 0
    for line in sh.splitlines():
        command = line.split("#", 1)[0].strip()
        if not command:
            continue
        words = shlex.split(command)
        assert words[0] == "tether", line
        target = None
        if ">" in words:
            words, target = words[:words.index(">")], words[words.index(">") + 1]
        out = CliRunner().invoke(app, words[1:], catch_exceptions=False)
        assert out.exit_code == 0, f"{line}\n{out.output}"
        if target:
            (tmp_path / target).write_text(out.output, encoding="utf-8")
        ran += 1
    assert ran == 12
    assert (tmp_path / "my-case.yaml").is_file() and (tmp_path / "from-run.yaml").is_file()
    assert '"criteria"' in (tmp_path / "case.schema.json").read_text(encoding="utf-8")


def test_every_key_and_check_is_documented():
    table = TEXT[TEXT.index("## Every key"):TEXT.index("### `input`")]
    for name, info in Case.model_fields.items():
        assert f"`{info.alias or name}`" in table, name
    for check in CHECKS:
        assert f"### `{check}`" in TEXT, check
    assert "### `kind: judge`" in TEXT
    for phrase in ("pass: {min: 3, max: 4}", "groups:", "error_type", "kind: auto", "include_history: true",
                   "toolset:", "mock_tools:", "world:"):
        assert phrase in TEXT, phrase


def test_the_scenario_tools_section_is_generated_from_the_code():
    assert doc_section("c4") in TEXT, (
        "docs/cases.md's scenario tools drifted from the code: run `python -m tether.evals.templates docs/cases.md`")
    for name in ("search_flights", "zhihu_get_answers", "travel_plan_itinerary"):
        assert f"#### `{name}`" in TEXT
    assert "| `departure_city` | string | yes |" in TEXT
