"""`tether guard-check --json`: every trip, machine-readable."""

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from tether.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "data" / "loop_corpus"))
from corpus import items  # noqa: E402


def test_json_lists_every_trip_with_call_index(tmp_path):
    item = next(i for i in items() if i.id == "L01-read-same-offset")
    path = item.trajectory.save(tmp_path / "t.jsonl")
    res = CliRunner().invoke(app, ["guard-check", str(path), "--json"], catch_exceptions=False)
    assert res.exit_code == 3            # the stack would have stopped this run
    doc = json.loads(res.output)
    first = doc["trips"][0]
    assert (first["call"], first["guard"], first["rule"], first["verdict"]) == (3, "loop", "identical", "hint")
    assert first["numbers"] == {"count": 3, "limit": 2, "tool": "read_file"}
    assert doc["trips"][1]["verdict"] == "stop" and not doc["trips"][1]["after_stop"]
    assert doc["trips"][-1]["after_stop"]


def test_json_for_a_clean_trace(tmp_path):
    item = next(i for i in items() if i.id == "K06-move-files")
    path = item.trajectory.save(tmp_path / "t.jsonl")
    res = CliRunner().invoke(app, ["guard-check", str(path), "--json"], catch_exceptions=False)
    assert res.exit_code == 0 and json.loads(res.output)["trips"] == []
