"""Issue 19 findings 6 and 11: large YAML is refused (or read) quickly, and the
error names what the file really holds (aliases only when it has aliases).

No timing is asserted here (the machine is shared); benchmarks/hostile_bench.py
times the 1 MB case. What is checked: the parser PyYAML runs is libyaml's when
it is installed, and the messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.errors import CaseFileError
from tether.evals import case_yaml

from .records import cli


def _base(tmp_path: Path) -> str:
    res = cli("case", "show", "C4-LD-01")
    assert res.exit_code == 0
    return res.stdout.rstrip("\n")


def _many_values(base: str, size: int = 990_000) -> str:
    lines = [base, "tags:"]
    total = len(base)
    while total < size:
        line = f"  - tagvalue-{len(lines):06d}"
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def test_many_values_without_aliases_does_not_blame_aliases(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text(_many_values(_base(tmp_path)), encoding="utf-8")
    res = cli("case", "validate", str(big))
    assert res.exit_code == 1, res.output
    message = res.output.split(": ", 1)[1]
    assert "alias" not in message, res.output
    assert "too many values" in res.output and "20,000" in res.output, res.output


def test_an_alias_bomb_names_its_aliases(tmp_path):
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 6):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\nid: bomb\n", encoding="utf-8")
    res = cli("case", "validate", str(bomb))
    assert res.exit_code == 1 and "alias" in res.output, res.output


def test_the_fast_parser_is_used_when_libyaml_is_there():
    import yaml

    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML without libyaml here")
    assert issubclass(case_yaml.LOADER, yaml.CSafeLoader)       # libyaml, with dates read as text


def test_control_characters_are_still_refused_with_their_line(tmp_path):
    with pytest.raises(CaseFileError) as exc:
        case_yaml.parse("id: x\ntitle: a\x01b\n", "c.yaml")
    loc, msg = exc.value.problems[0]
    assert loc.line == 2 and "U+0001" in msg


def test_a_one_megabyte_case_is_read_by_libyaml(tmp_path):
    text = _many_values(_base(tmp_path), 900_000)
    with pytest.raises(CaseFileError) as exc:
        case_yaml.parse(text, "big.yaml")
    assert "alias" not in str(exc.value.problems)


def test_a_date_in_a_case_is_text(tmp_path):
    """`date: 2026-04-08` is the text a tool receives (tool arguments are JSON), not a Python date."""
    import yaml

    assert yaml.load("args: {date: 2026-04-08}", Loader=case_yaml.LOADER) == {"args": {"date": "2026-04-08"}}
