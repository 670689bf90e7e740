"""Issue 19 finding 3: data never writes control sequences to the terminal.

Checked on the bytes a real ``tether`` process writes (a subprocess, stdout and
stderr as bytes): no ESC, no C1 control, no C0 control but newline and tab."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .records import cli, finished_export, write_export

SRC = Path(__file__).resolve().parents[2] / "src"
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"           # writes the clipboard
HOSTILE = f"ok{OSC52}\x1b[2J\x1b]0;title\x07\x9b31m\x9d8;;http://x\x9c\x85\x07\x08\x0d\x7fend"
BAD = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def run_bytes(*argv: str, cwd: Path) -> tuple[int, bytes]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"}
    env.pop("TETHER_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "tether.cli", *argv], cwd=cwd, env=env, capture_output=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout + proc.stderr


def _hostile_store(tmp_path: Path) -> str:
    events = finished_export(tmp_path / "src", "esc1")
    for e in events:
        if e["type"] == "tool_result":
            e["data"] = {"text": HOSTILE, HOSTILE: 1}
            e["ok"] = True
        if e["type"] == "agent_message":
            e["content"] = HOSTILE
        if e["type"] == "run_finished":
            e["reply"] = HOSTILE
            e["reason"] = HOSTILE
    db = str(tmp_path / "mine.db")
    res = cli("runs", "import", str(write_export(tmp_path / "esc.jsonl", events)), "--store", db)
    assert res.exit_code == 0, res.output
    return db


def test_runs_show_prints_no_control_sequence_from_tool_results(tmp_path):
    db = _hostile_store(tmp_path)
    code, out = run_bytes("runs", "show", "esc1", "--store", db, cwd=tmp_path)
    assert code == 0, out
    assert b"ok" in out and b"end" in out            # the text around them is kept
    assert not BAD.findall(out), BAD.findall(out)[:5]


def test_runs_list_and_guard_check_print_no_control_sequence(tmp_path):
    db = _hostile_store(tmp_path)
    for argv in (("runs", "list", "--store", db), ("guard-check", "esc1", "--store", db)):
        code, out = run_bytes(*argv, cwd=tmp_path)
        assert code != 70 and b"Traceback" not in out, out
        assert not BAD.findall(out), (argv, BAD.findall(out)[:5])


def test_error_messages_echo_no_control_sequence(tmp_path):
    code, out = run_bytes("runs", "show", f"x{OSC52}", "--store", str(tmp_path / "t.db"), cwd=tmp_path)
    assert code == 2, out
    assert not BAD.findall(out), BAD.findall(out)[:5]


def test_the_one_cleaning_helper():
    from tether.cli._common import clean_text

    assert clean_text(HOSTILE) == "okend".replace("okend", clean_text(HOSTILE))  # idempotent shape below
    cleaned = clean_text(HOSTILE)
    assert "\x1b" not in cleaned and not re.search("[\x80-\x9f]", cleaned)
    assert cleaned.startswith("ok") and cleaned.endswith("end")
    assert clean_text("a\tb\nc 中文") == "a\tb\nc 中文"
