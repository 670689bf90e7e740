"""Issue 19: a record from elsewhere is data, never code (findings 1 and 4).

Each test builds a real run, exports it, edits the export as an attacker would,
imports it into another store and drives the public CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .records import cli, finished_export, paused_export, write_export

EVIL = """\
from pathlib import Path
Path(__file__).with_name("RAN").write_text("evil code ran", encoding="utf-8")

def make():
    Path(__file__).with_name("MADE").write_text("factory called", encoding="utf-8")
    raise RuntimeError("evil factory")
"""


def _evil_export(tmp_path: Path) -> tuple[Path, Path]:
    events = paused_export(tmp_path / "src", "imp1")
    evil = tmp_path / "evil.py"
    evil.write_text(EVIL, encoding="utf-8")
    events[0]["meta"]["cli"]["model"] = f"{evil}:make"        # run_started.model still says policy:steady
    return write_export(tmp_path / "run.jsonl", events), tmp_path


def test_resume_of_an_imported_run_runs_no_code_and_says_why(tmp_path):
    export, folder = _evil_export(tmp_path)
    db = str(tmp_path / "mine.db")
    imported = cli("runs", "import", str(export), "--store", db)
    if imported.exit_code == 0:       # a store may refuse the mismatching record outright: also no code
        res = cli("resume", "imp1", "--store", db)
        assert res.exit_code == 2, res.output
        assert "model" in res.output and "--trust" in res.output, res.output
        approve = cli("approve", "imp1", "--store", db)
        assert approve.exit_code == 2, approve.output
    else:
        assert imported.exit_code == 2 and "model" in imported.output, imported.output
    assert not (folder / "RAN").exists() and not (folder / "MADE").exists()


def test_runs_list_never_shows_another_model_than_the_record_names(tmp_path):
    export, _ = _evil_export(tmp_path)
    db = str(tmp_path / "mine.db")
    imported = cli("runs", "import", str(export), "--store", db)
    listed = cli("runs", "list", "--store", db)
    if imported.exit_code == 0:
        assert "evil.py:make" in listed.output, listed.output
    else:
        assert "imp1" not in listed.output


def test_a_record_naming_code_in_run_started_is_refused_without_trust(tmp_path):
    events = paused_export(tmp_path / "src", "imp2")
    evil = tmp_path / "evil.py"
    evil.write_text(EVIL, encoding="utf-8")
    spec = f"{evil}:make"
    events[0]["model"] = spec
    events[0]["meta"]["cli"]["model"] = spec
    export = write_export(tmp_path / "run.jsonl", events)
    db = str(tmp_path / "mine.db")
    assert cli("runs", "import", str(export), "--store", db).exit_code == 0
    assert "evil.py:make" in cli("runs", "list", "--store", db).output
    res = cli("resume", "imp2", "--store", db)
    assert res.exit_code == 2 and "[meta.cli.model]" in res.output and "--trust" in res.output, res.output
    assert not (tmp_path / "RAN").exists()
    # --trust: what it did before (the user said so): the factory is loaded and called
    trusted = cli("resume", "imp2", "--store", db, "--trust")
    assert (tmp_path / "MADE").exists(), trusted.output
    assert trusted.exit_code == 2 and "evil factory" in trusted.output, trusted.output


def test_model_from_the_command_line_is_used_instead_of_the_record(tmp_path):
    events = paused_export(tmp_path / "src", "imp3")
    evil = tmp_path / "evil.py"
    evil.write_text(EVIL, encoding="utf-8")
    events[0]["model"] = events[0]["meta"]["cli"]["model"] = f"{evil}:make"
    db = str(tmp_path / "mine.db")
    assert cli("runs", "import", str(write_export(tmp_path / "run.jsonl", events)), "--store", db).exit_code == 0
    res = cli("resume", "imp3", "--store", db, "--model", "policy:steady")
    assert not (tmp_path / "RAN").exists()
    assert "evil" not in res.output or "no checkpoint" in res.output, res.output


def test_an_allow_list_trusts_the_specs_it_names(tmp_path, monkeypatch):
    events = paused_export(tmp_path / "src", "imp4")
    evil = tmp_path / "evil.py"
    evil.write_text(EVIL, encoding="utf-8")
    events[0]["model"] = events[0]["meta"]["cli"]["model"] = f"{evil}:make"
    db = str(tmp_path / "mine.db")
    assert cli("runs", "import", str(write_export(tmp_path / "run.jsonl", events)), "--store", db).exit_code == 0
    monkeypatch.setenv("TETHER_TRUSTED_SPECS", "*/other.py:*")
    assert cli("resume", "imp4", "--store", db).exit_code == 2
    assert not (tmp_path / "MADE").exists()
    monkeypatch.setenv("TETHER_TRUSTED_SPECS", f"{tmp_path}/*.py:make")
    cli("resume", "imp4", "--store", db)
    assert (tmp_path / "MADE").exists()


@pytest.mark.parametrize("field,value", [
    ("eval_id", 'ev-x"><img src=x onerror=alert(1)>'),
    ("case_id", "../../etc/passwd"),
    ("kind", "<script>"),
    ("trial", -1),
    ("guards", "x" * 5000),
    ("model", "m\x1b]52;c;aGVsbG8=\x07"),
])
def test_every_imported_field_is_validated_naming_it(tmp_path, field, value):
    events = paused_export(tmp_path / "src", "imp5")
    events[0][field] = value
    db = str(tmp_path / "mine.db")
    res = cli("runs", "import", str(write_export(tmp_path / "run.jsonl", events)), "--store", db)
    assert res.exit_code == 2, res.output
    assert f"[{field}]" in res.output or f"run_started.{field}:" in res.output, res.output
    assert "Traceback" not in res.output


def test_an_imported_status_outside_the_enum_is_refused(tmp_path):
    events = finished_export(tmp_path / "src", "imp6")
    events[-1]["status"] = "pwned"
    db = str(tmp_path / "mine.db")
    res = cli("runs", "import", str(write_export(tmp_path / "run.jsonl", events)), "--store", db)
    assert res.exit_code == 2 and "status" in res.output, res.output


def test_an_imported_run_never_joins_an_existing_eval(tmp_path):
    db = str(tmp_path / "mine.db")
    res = cli("eval", "c4", "--model", "policy:steady", "--case", "C4-LD-01", "--store", db, "-q",
              "--json", str(tmp_path / "r.json"))
    assert res.exit_code in (0, 1), res.output
    eval_id = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["eval_id"]
    events = finished_export(tmp_path / "src", "imp7")
    events[0]["eval_id"] = eval_id
    events[0]["kind"] = "eval"
    res = cli("runs", "import", str(write_export(tmp_path / "run.jsonl", events)), "--store", db)
    listed = cli("runs", "list", "--store", db, "--eval", eval_id)
    assert "imp7" not in listed.output, (res.output, listed.output)
    assert res.exit_code == 2 and "eval_id" in res.output, res.output


def test_events_after_run_finished_make_score_refuse_the_run(tmp_path):
    db = str(tmp_path / "a.db")
    results = tmp_path / "r.json"
    res = cli("eval", "c4", "--model", "policy:steady", "--case", "C4-LD-01", "--store", db, "-q",
              "--json", str(results))
    assert res.exit_code in (0, 1), res.output
    doc = json.loads(results.read_text(encoding="utf-8"))
    run_id = doc["runs"][0]["cases"][0]["trials"][0]["run_id"]
    from tether.store import SQLiteStore

    store = SQLiteStore(db)
    events = store.events(run_id)
    extra = {"seq": len(events), "at_ms": 1.0, "type": "tool_call", "step": 99, "call_id": "x9",
             "tool": "search_flights", "arguments": {"q": "again"}}
    store.append_events(run_id, [(len(events), extra)])
    store.close()
    res = cli("score", str(results), "--store", db)
    assert res.exit_code == 2, res.output
    assert run_id in res.output and "after run_finished" in res.output, res.output
    # the report shows that trial as refused, naming it, and renders no transcript of it
    page = tmp_path / "r.html"
    res = cli("report", str(results), "--html", str(page), "--store", db)
    assert res.exit_code == 0, res.output
    html = page.read_text(encoding="utf-8")
    assert run_id in html and "after run_finished" in html
    assert '"again"' not in html and "&#34;again&#34;" not in html
    # diff of the run's export refuses it too
    export = tmp_path / "e.jsonl"
    export.write_text(cli("runs", "export", run_id, "--store", db).stdout, encoding="utf-8")
    res = cli("diff", str(export), str(export))
    assert res.exit_code == 2 and "after run_finished" in res.output, res.output


def test_digest_covers_events_after_run_finished(tmp_path):
    from tether.events import EVENT_ADAPTER, Trajectory

    events = finished_export(tmp_path / "src", "dg1")
    before = Trajectory(EVENT_ADAPTER.validate_python(e) for e in events).digest()
    extra = {"seq": len(events), "at_ms": 1.0, "type": "agent_message", "kind": "final", "content": "done!"}
    after = Trajectory(EVENT_ADAPTER.validate_python(e) for e in [*events, extra]).digest()
    assert before != after
