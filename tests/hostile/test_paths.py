"""Paths stay inside: one id pattern (tether.ids), checked where ids are read;
paths built from data resolved under their root."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tether.errors import UsageError
from tether.ids import ID_PATTERN, check_id, inside, is_id
from tether.testing.pytest_plugin import cassette_path

from .corpus import _case
from .harness import invoke

BAD_IDS = ["../../../tmp/pwned", "/tmp/pwned", "", "..", "a/b", "a\\b", "a..b", ".hidden", "-x", "x" * 129, "a b",
           "a\x00b", "é", "C4/../x"]


@pytest.mark.parametrize("value", BAD_IDS)
def test_the_one_pattern_refuses(value):
    assert not is_id(value)
    with pytest.raises(UsageError, match="run id"):
        check_id(value, "run id")


@pytest.mark.parametrize("value", ["C4-LD-01", "ev-20260101-1a2b3c-policy_steady-off-C4-LD-01-t0", "a", "x" * 128,
                                   "openai:gpt-4.1", "r1.2"])
def test_the_one_pattern_accepts(value):
    assert is_id(value) and ID_PATTERN.startswith("^")


def test_inside_refuses_what_resolves_outside(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path)
    assert inside(tmp_path / "root", "a", "b.json") == (tmp_path / "root" / "a" / "b.json").resolve()
    for parts in (("..", "x"), ("/etc/passwd",), ("link", "x")):
        with pytest.raises(UsageError, match="outside"):
            inside(tmp_path / "root", *parts)


def test_a_case_id_climbing_out_is_refused_and_eval_writes_nothing_outside_out(tmp_path):
    work = tmp_path / "a" / "work"
    work.mkdir(parents=True)
    (work / "pwned.yaml").write_text(_case("../../../tmp/pwned"), encoding="utf-8")
    checked = invoke(["case", "validate", "pwned.yaml"], work)
    assert checked.code == 1 and "pwned.yaml:1:5 [id]" in checked.output and "../../../tmp/pwned" in checked.output
    ran = invoke(["eval", "pwned.yaml", "--model", "policy:steady", "--out", "out", "--store", "s.db", "-q"], work)
    assert ran.code == 2 and "pwned.yaml" in ran.output
    outside = [p for p in tmp_path.rglob("*") if p != work and work not in p.parents]
    assert outside == [tmp_path / "a"], outside
    assert not Path("/tmp/pwned.jsonl").exists()


def test_eval_exports_stay_under_out(tmp_path):
    res = invoke(["eval", "c4", "--model", "policy:steady", "--case", "C4-LD-01", "--out", "out", "--store", "s.db",
                  "-q"], tmp_path)
    assert res.code == 0, res.output
    assert [p.parent for p in (tmp_path / "out").rglob("*.jsonl")] == [tmp_path / "out"]


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "", "a/../../x", "..", "a/./b"])
def test_a_cassette_name_cannot_leave_cassettes(name, tmp_path):
    node = SimpleNamespace(path=tmp_path / "tests" / "test_x.py", nodeid="tests/test_x.py::test_a", name="test_a")
    with pytest.raises(UsageError):
        cassette_path(node, name)   # type: ignore[arg-type]
    assert cassette_path(node, "shared/refund-b") == (tmp_path / "tests" / "cassettes" / "shared" / "refund-b.json")


def test_a_baseline_entry_pointing_outside_is_refused(tmp_path):
    bl = tmp_path / "bl"
    bl.mkdir()
    (tmp_path / "secret.json").write_text("{}", encoding="utf-8")
    entry = {"name": "c4", "suite": "c4", "reason": "r", "accepted_at": "x", "source": "s", "path": "../secret.json"}
    (bl / "history.jsonl").write_text(json.dumps(entry) + "\n", encoding="utf-8")
    (tmp_path / "new.json").write_text("{}", encoding="utf-8")
    res = invoke(["diff", "--baseline", "c4", "new.json", "--baseline-dir", "bl"], tmp_path)
    assert res.code == 2 and "outside" in res.output and "history.jsonl" in res.output


def test_results_naming_runs_outside_copy_nothing(tmp_path, hostile_fixture):
    hostile_fixture.install(tmp_path)
    doc = json.loads((tmp_path / "good.json").read_text(encoding="utf-8"))
    doc["runs"][0]["cases"][0]["trials"][0]["run_id"] = "../../../etc/passwd"
    (tmp_path / "evil.json").write_text(json.dumps(doc), encoding="utf-8")
    res = invoke(["baseline", "accept", "evil.json", "--reason", "r", "--dir", "bl"], tmp_path)
    copied = [p for p in (tmp_path / "bl").rglob("*/runs/*") if p.is_file()]
    assert copied == [] and "not a valid id" in res.output
