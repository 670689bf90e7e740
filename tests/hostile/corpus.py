"""The hostile-input corpus: files and options a careless user or an attacker
gives tether's file-consuming commands, generated (the big ones are never
checked in).

``build(work, fixture)`` writes every input into ``work`` and returns the
invocations: ``Hostile(name, argv, names)`` where ``names`` are strings of
which at least one must appear in the output (the input named: a file name,
an option or an id). Inputs marked ``slow`` need a memory limit and a
timeout (a subprocess) or take seconds; the default suite runs the others
in-process.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


@dataclass
class Hostile:
    name: str
    argv: list[str]
    names: tuple[str, ...]
    slow: bool = False
    setup: Callable[[Path], None] | None = field(default=None, repr=False)


@dataclass
class Fixture:
    """Valid inputs to combine with hostile ones, built once (see conftest)."""

    root: Path                 # holds good.db, good.json, good.jsonl, good.yaml, paused run "p1" in good.db

    def install(self, work: Path) -> None:
        for name in ("good.db", "good.json", "good.jsonl", "good.yaml", "review.yaml"):
            src = self.root / name
            if src.exists():
                shutil.copy2(src, work / name)
        # the results name their store by the name it had when written
        doc = json.loads((work / "good.json").read_text(encoding="utf-8"))
        doc["store"] = "good.db"
        (work / "good.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


# -- hostile file contents --------------------------------------------------------
def _billion_laughs() -> str:
    lines = ['lol0: &l0 "lol"']
    for i in range(1, 10):
        prev = ", ".join([f"*l{i - 1}"] * 10)
        lines.append(f"lol{i}: &l{i} [{prev}]")
    lines.append("id: laughs\ntitle: *l9\n")
    return "\n".join(lines)


def _results(**over) -> str:
    doc = {"format": "tether.results", "version": 2, "suite": "c4", "created": "2026-01-01T00:00:00Z",
           "eval_id": "ev-1", "store": None, "runs": []}
    doc.update(over)
    return json.dumps(doc)


def _results_with_trial(run_id: str, store: str | None = None) -> str:
    trial = {"trial": 0, "verdict": "pass", "auto_verdict": "pass", "status": "completed", "reply": "",
             "run_id": run_id, "digest": "0" * 64}
    case = {"case_id": "C4-LD-01", "dimension": "loop", "difficulty": "easy", "title": "t", "verdict": "pass",
            "trials": [trial]}
    run = {"model": "policy:steady", "guards": "off", "cases": [case]}
    return _results(store=store, runs=[run])


def _case(case_id: str, message: str = "hi") -> str:
    return (f"id: {json.dumps(case_id)}\ntitle: t\ndimension: loop\ndifficulty: easy\n"
            f"tools: [search_flights]\ninput:\n  message: {json.dumps(message)}\n"
            "criteria:\n  - id: c1\n    check: call_count\n    tools: [search_flights]\n    pass: {max: 3}\n")


FILES: dict[str, Callable[[], bytes | str]] = {
    "empty": lambda: b"",
    "whitespace": lambda: "   \n\n\t\n",
    "nul": lambda: b"id: a\x00b\ntitle: x\n",
    "bad-utf8": lambda: b"id: \xff\xfe\xfa\ntitle: \xc3\x28\n",
    "utf16": lambda: "id: x\ntitle: y\n".encode("utf-16"),
    "binary": lambda: random.Random(7).randbytes(4096),
    "yaml-deep": lambda: "[" * 10_000,
    "yaml-deep-map": lambda: "a: {" * 10_000 + "}" * 10_000,
    "json-deep": lambda: '{"a":' * 10_000 + "1" + "}" * 10_000,
    "json-list-deep": lambda: "[" * 10_000 + "]" * 10_000,
    "bigint": lambda: '{"format": "tether.results", "version": ' + "9" * 5000 + "}",
    "bigint-seq": lambda: '{"type": "run_started", "seq": ' + "7" * 5000 + "}\n",
    "billion-laughs": _billion_laughs,
    "huge-line": lambda: "x" * 2_500_000,
    "many-lines": lambda: "{}\n" * 200_000,
    "json-array": lambda: "[1, 2, 3]",
    "json-scalar": lambda: '"just a string"',
    "json-null": lambda: "null",
    "nan": lambda: '{"format": "tether.results", "version": NaN}',
    "multi-doc": lambda: "\ufeff---\nid: a\n---\nid: b\n",
    "yaml-tags": lambda: "!!python/object/apply:os.system ['echo pwned']\n",
    "results-v99": lambda: _results(version=99),
    "results-v-str": lambda: _results(version="2"),
    "results-format": lambda: _results(format="tether.nope"),
    "results-runs-str": lambda: _results(runs="nope"),
    "results-store-etc": lambda: _results_with_trial("r1", store="/etc/passwd"),
    "results-store-dev": lambda: _results_with_trial("r1", store="/dev/zero"),
    "results-store-up": lambda: _results_with_trial("r1", store="../../outside.db"),
    "results-runid-up": lambda: _results_with_trial("../../../etc/passwd", store="good.db"),
    "results-runid-abs": lambda: _results_with_trial("/etc/passwd", store="good.db"),
    "trace-garbage": lambda: '{"type": "run_started", "seq": 0}\nnot json\n{"type": "nope", "seq": 1}\n',
    "trace-v99": lambda: '{"type": "run_started", "seq": 0, "run_id": "r", "version": 99}\n',
    "trace-seq-neg": lambda: '{"type": "run_started", "seq": -1, "run_id": "../../x"}\n',
    "case-id-up": lambda: _case("../../../tmp/pwned"),
    "case-id-abs": lambda: _case("/tmp/pwned"),
    "case-id-empty": lambda: _case(""),
    "case-id-dots": lambda: _case(".."),
    "case-id-slash": lambda: _case("a/b"),
    "case-id-nul": lambda: _case("a\u0000b"),
    "case-v99": lambda: _case("ok-1").replace("id:", "version: 99\nid:", 1),
    "case-steps-neg": lambda: _case("ok-1") + "max_steps: -5\n",
    "case-now-bad": lambda: _case("ok-1").replace("  message:", "  now: not-a-date\n  message:", 1),
    "case-dup-key": lambda: _case("ok-1") + "title: again\n",
    "review-v99": lambda: "format: tether.review\nversion: 99\nitems: []\n",
    "review-trials-str": lambda: "format: tether.review\nversion: 1\ntrials: nope\n",
}

# Inputs that cost memory or seconds: run in a subprocess with limits (marked slow).
SLOW_FILES: dict[str, Callable[[], bytes | str]] = {
    "huge-file": lambda: ("a: " + "x" * 1000 + "\n") * 60_000,           # 60 MB
    "big-message": lambda: _case("big-1", "m" * 50_000_000),
    "json-huge-line": lambda: '{"format": "tether.results", "version": 2, "x": "' + "y" * 60_000_000 + '"}',
}

SPECIAL = {"dir": None, "devnull": "/dev/null", "missing": None}
SLOW_SPECIAL = {"devzero": "/dev/zero"}


def _write(path: Path, content: bytes | str) -> None:
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)


# Commands taking one file: (label, argv template with {f}, file suffix). eval and run
# load the suite around the file, so every file kind through them is in the slow part.
IN_SLOW_PART = {"eval", "run"}
FILE_COMMANDS: list[tuple[str, list[str], str]] = [
    ("case-validate", ["case", "validate", "{f}"], ".yaml"),
    ("eval", ["eval", "{f}", "--model", "policy:steady", "--store", "s.db", "--out", "out", "-q"], ".yaml"),
    ("run", ["run", "{f}", "--store", "s.db"], ".yaml"),
    ("guard-check", ["guard-check", "{f}"], ".jsonl"),
    ("diff", ["diff", "{f}", "good.json"], ".json"),
    ("score", ["score", "{f}", "-q"], ".json"),
    ("review-export", ["review", "export", "{f}", "--out", "rv.yaml"], ".json"),
    ("review-import", ["review", "import", "{f}", "--results", "good.json", "--json", "o.json", "-q"], ".yaml"),
    ("baseline-accept", ["baseline", "accept", "{f}", "--reason", "r", "--dir", "bl"], ".json"),
    ("runs-import", ["runs", "import", "{f}", "--store", "s.db"], ".jsonl"),
]

# Which file kinds make sense for which commands (all of them, by default).
SKIP: dict[str, set[str]] = {}


def _file_inputs(work: Path, files: dict[str, Callable[[], bytes | str]], slow: bool) -> list[Hostile]:
    out = []
    made: dict[str, bytes | str] = {}
    for label, template, suffix in FILE_COMMANDS:
        for kind, make in files.items():
            if kind in SKIP.get(label, set()):
                continue
            name = f"h-{kind}{suffix}"
            if name not in made:
                made[name] = make()
                _write(work / name, made[name])
            out.append(Hostile(f"{label}:{kind}", [a.replace("{f}", name) for a in template], (name,),
                               slow=slow or label in IN_SLOW_PART))
    return out


def _special_inputs(work: Path) -> list[Hostile]:
    out = []
    (work / "a-folder.json").mkdir(exist_ok=True)
    for label, template, _ in FILE_COMMANDS:
        out.append(Hostile(f"{label}:dir", [a.replace("{f}", "a-folder.json") for a in template], ("a-folder.json",)))
        out.append(Hostile(f"{label}:devnull", [a.replace("{f}", "/dev/null") for a in template], ("/dev/null",)))
        out.append(Hostile(f"{label}:missing", [a.replace("{f}", "no-such.json") for a in template], ("no-such.json",)))
        out.append(Hostile(f"{label}:devzero", [a.replace("{f}", "/dev/zero") for a in template], ("/dev/zero",),
                           slow=True))
    return out


# -- hostile stores ---------------------------------------------------------------
def _stores(work: Path, fixture: Fixture) -> dict[str, str]:
    """name -> path (relative to work) of a broken store."""
    good = (fixture.root / "good.db").read_bytes()
    (work / "st-dir.db").mkdir(exist_ok=True)
    (work / "st-text.db").write_text("this is not a database\n" * 50, encoding="utf-8")
    (work / "st-random.db").write_bytes(random.Random(3).randbytes(8192))
    (work / "st-half.db").write_bytes(good[: len(good) // 2])
    (work / "st-header.db").write_bytes(good[:100])
    garbled = bytearray(good)
    for i in range(4096, len(garbled), 512):     # scribble over every page after the first
        garbled[i:i + 64] = b"\xde\xad\xbe\xef" * 16
    (work / "st-garbled.db").write_bytes(bytes(garbled))
    shutil.copy2(fixture.root / "good.db", work / "st-future.db")
    with sqlite3.connect(work / "st-future.db") as con:
        con.execute("PRAGMA user_version = 99")
    con.close()
    shutil.copy2(fixture.root / "good.db", work / "st-badmeta.db")
    with sqlite3.connect(work / "st-badmeta.db") as con:
        con.execute("UPDATE runs SET meta = 'not json {' WHERE run_id = 'p1'")
    con.close()
    shutil.copy2(fixture.root / "good.db", work / "st-badrow.db")
    with sqlite3.connect(work / "st-badrow.db") as con:
        con.execute("UPDATE runs SET created = 'yesterday' WHERE run_id = 'p1'")
    con.close()
    return {"dir": "st-dir.db", "devnull": "/dev/null", "text": "st-text.db", "random": "st-random.db",
            "half": "st-half.db", "header": "st-header.db", "garbled": "st-garbled.db", "future": "st-future.db"}


STORE_COMMANDS: list[tuple[str, list[str]]] = [
    ("runs-list", ["runs", "list", "--store", "{s}"]),
    ("runs-show", ["runs", "show", "p1", "--store", "{s}"]),
    ("resume", ["resume", "p1", "--store", "{s}"]),
    ("approve", ["approve", "p1", "--by", "alice", "--store", "{s}"]),
    ("run", ["run", "C4-LD-01", "--store", "{s}"]),
    ("eval", ["eval", "c4", "--model", "policy:steady", "--case", "C4-LD-01", "--store", "{s}", "-q"]),
    ("score", ["score", "good.json", "--store", "{s}", "-q"]),
]


def _store_inputs(work: Path, fixture: Fixture) -> list[Hostile]:
    out = []
    for kind, path in _stores(work, fixture).items():
        for label, template in STORE_COMMANDS:
            out.append(Hostile(f"{label}:store-{kind}", [a.replace("{s}", path) for a in template], (path,)))
    out.append(Hostile("resume:store-badmeta", ["resume", "p1", "--store", "st-badmeta.db"], ("p1",)))
    out.append(Hostile("approve:store-badmeta", ["approve", "p1", "--store", "st-badmeta.db"], ("p1",)))
    return out


# -- hostile options and ids ------------------------------------------------------
def _option_inputs(work: Path) -> list[Hostile]:
    h: list[Hostile] = []
    run = ["run", "C4-LD-01", "--store", "good.db"]
    for value in ("tool_calls=nan", "tool_calls=inf", "tool_calls=-1", "tool_calls=0", "seconds=nan",
                  "cost=-inf", "tool_calls=1e400", "tokens=" + "9" * 5000, "tool_calls=abc", "nope=3", "=", ",,,=1"):
        h.append(Hostile(f"run:budget={value[:20]}", [*run, "--budget", value], ("--budget",)))
    h.append(Hostile("run:dup-run-id", [*run, "--run-id", "p1"], ("p1",)))
    for rid in ("../../escape", "/tmp/pwned", "", "a/b", "..", "x" * 300, "a\nb"):
        h.append(Hostile(f"run:run-id={rid[:12]!r}", [*run, "--run-id", rid], ("--run-id",)))
    h.append(Hostile("run:max-steps-0", [*run, "--max-steps", "0"], ("--max-steps",)))
    h.append(Hostile("run:max-steps-huge", [*run, "--max-steps", "9" * 30], ("--max-steps",)))
    (work / "trace-dir").mkdir(exist_ok=True)
    h.append(Hostile("run:trace-dir", [*run, "--trace", "trace-dir"], ("trace-dir",)))
    h.append(Hostile("run:approver-bad", [*run, "--approve", "x", "--approver", "nobody"], ("--approver",)))
    h.append(Hostile("run:case-up", ["run", "../../../etc/passwd", "--store", "good.db"], ("../../../etc/passwd",)))
    ev = ["eval", "c4", "--model", "policy:steady", "--case", "C4-LD-01", "--store", "good.db", "-q"]
    for opt, value in (("--trials", "99999999999999999999"), ("--trials", "0"), ("--trials", "-1"),
                       ("--trials", "100000"), ("--concurrency", "0"), ("--concurrency", "99999999999999999999"),
                       ("--max-steps", "0"), ("--max-steps", "99999999999"), ("--fail-under", "nan"),
                       ("--judge-samples", "99999999999"), ("--max-errors", "-1"), ("--trials", "nan")):
        h.append(Hostile(f"eval:{opt}={value[:12]}", [*ev, opt, value], (opt,)))
    (work / "out-file").write_text("x", encoding="utf-8")
    h.append(Hostile("eval:out-is-file", [*ev, "--out", "out-file"], ("out-file",)))
    h.append(Hostile("eval:json-is-dir", [*ev, "--json", "trace-dir"], ("trace-dir",)))
    h.append(Hostile("eval:sweep-bad", [*ev, "--sweep", "loop.max_identical=nan"], ("--sweep", "max_identical")))
    h.append(Hostile("eval:model-bad", ["eval", "c4", "--model", "../../x.py:y", "--case", "C4-LD-01"], ("x.py",)))
    for rid in ("../../../etc/passwd", "/etc/passwd", "", "nope"):
        h.append(Hostile(f"runs-show:{rid[:10]!r}", ["runs", "show", rid, "--store", "good.db"], (repr(rid)[1:-1] or "run id", "run")))
        h.append(Hostile(f"resume:{rid[:10]!r}", ["resume", rid, "--store", "good.db"], (repr(rid)[1:-1] or "run id", "run")))
    for edit in ('{"a":' * 5000 + "1" + "}" * 5000, "[1]", "NaN", "1" * 5000, "\ud800"):
        h.append(Hostile(f"approve:edit={edit[:8]!r}", ["approve", "p1", "--edit", edit, "--store", "good.db"], ("--edit",)))
    h.append(Hostile("approve:by-empty", ["approve", "p1", "--by", "", "--store", "good.db"], ("--by",)))
    h.append(Hostile("approve:approval-bad", ["approve", "p1", "--approval", "../x", "--store", "good.db"], ("../x",)))
    h.append(Hostile("runs-list:limit-huge", ["runs", "list", "--limit", "9" * 30, "--store", "good.db"], ("--limit",)))
    for name in ("../escape", "/tmp/pwned", "", ".."):
        h.append(Hostile(f"baseline-accept:name={name!r}", ["baseline", "accept", "good.json", "--reason", "r",
                                                             "--name", name, "--dir", "bl"], ("baseline name",)))
        h.append(Hostile(f"diff:baseline={name!r}", ["diff", "--baseline", name, "good.json", "--baseline-dir", "bl"],
                         ("baseline",)))
    (work / "bl-file").write_text("x", encoding="utf-8")
    h.append(Hostile("baseline-list:dir-is-file", ["baseline", "list", "--dir", "bl-file"], ("bl-file",)))
    h.append(Hostile("baseline-accept:dir-is-file", ["baseline", "accept", "good.json", "--reason", "r", "--dir",
                                                     "bl-file"], ("bl-file",)))
    h.append(Hostile("baseline-accept:reason-empty", ["baseline", "accept", "good.json", "--reason", " ", "--dir", "bl"],
                     ("reason",)))
    bl_bad = work / "bl-bad"
    bl_bad.mkdir(exist_ok=True)
    (bl_bad / "history.jsonl").write_text(
        json.dumps({"name": "c4", "suite": "c4", "reason": "r", "accepted_at": "x", "source": "s",
                    "path": "../../../../../../etc/passwd"}) + "\n{not json\n" + "[" * 10_000 + "\n",
        encoding="utf-8")
    h.append(Hostile("baseline-list:history-bad", ["baseline", "list", "--dir", "bl-bad"], ("history.jsonl",)))
    h.append(Hostile("diff:baseline-path-up", ["diff", "--baseline", "c4", "good.json", "--baseline-dir", "bl-bad"],
                     ("history.jsonl", "passwd")))
    bl_up = work / "bl-up"
    bl_up.mkdir(exist_ok=True)
    (bl_up / "history.jsonl").write_text(
        json.dumps({"name": "c4", "suite": "c4", "reason": "r", "accepted_at": "x", "source": "s",
                    "path": "../good.json"}) + "\n", encoding="utf-8")
    h.append(Hostile("diff:baseline-path-sibling", ["diff", "--baseline", "c4", "good.json", "--baseline-dir", "bl-up"],
                     ("history.jsonl", "../good.json")))
    h.append(Hostile("diff:one-path", ["diff", "good.json"], ("BASE",)))
    h.append(Hostile("diff:trace-vs-results", ["diff", "good.jsonl", "good.json"], ("BASE",)))
    h.append(Hostile("score:cases-up", ["score", "good.json", "--cases", "../../nowhere", "-q"], ("../../nowhere",)))
    h.append(Hostile("case-validate:dir-empty", ["case", "validate", "trace-dir"], ("trace-dir",)))
    return h


# -- issue 19: records from elsewhere, OTel spans, numbers too big, devices ---------
_PAYLOAD = '"><img src=x onerror=alert(1)>'
_OSC52 = "\x1b]52;c;cHduZWQ=\x07"


def _otlp(spans: object = None, **over: object) -> str:
    doc: dict = {"resourceSpans": [{"resource": {"attributes": []},
                                    "scopeSpans": [{"spans": spans if spans is not None else []}]}]}
    doc.update(over)
    return json.dumps(doc)


_CHAT = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "chat m",
         "startTimeUnixNano": "1", "endTimeUnixNano": "2",
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}

OTEL_FILES: dict[str, str] = {
    "rs-int": json.dumps({"resourceSpans": 7}),
    "rs-item-int": json.dumps({"resourceSpans": [7]}),
    "scope-str": json.dumps({"resourceSpans": [{"scopeSpans": "x"}]}),
    "span-int": _otlp([7]),
    "start-text": _otlp([{**_CHAT, "startTimeUnixNano": "soon"}]),
    "attrs-dict": _otlp([{**_CHAT, "attributes": {"k": "v"}}]),
    "attr-no-key": _otlp([{**_CHAT, "attributes": [{"value": {"stringValue": "chat"}}]}]),
    "events-int": _otlp([{**_CHAT, "events": 3}]),
    "trace-id-int": _otlp([{**_CHAT, "traceId": 12345}]),
    "tokens-text": _otlp([{**_CHAT, "attributes": _CHAT["attributes"] + [
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "lots"}}]}]),
    "resource-attrs-int": json.dumps({"resourceSpans": [{"resource": {"attributes": 5}, "scopeSpans": []}]}),
    "huge-time": _otlp([{**_CHAT, "startTimeUnixNano": "9" * 5000}]),
}


def _export_lines(fixture: Fixture, edit: Callable[[list[dict]], None]) -> str:
    events = [json.loads(line) for line in (fixture.root / "good.jsonl").read_text(encoding="utf-8").splitlines()
              if line.strip()]
    events[0]["run_id"] = "h19-" + str(abs(hash(edit.__name__)) % 10_000)
    edit(events)
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)


def _issue19_inputs(work: Path, fixture: Fixture) -> list[Hostile]:
    h: list[Hostile] = []
    for kind, text in OTEL_FILES.items():
        name = f"otel-{kind}.json"
        (work / name).write_text(text, encoding="utf-8")
        h.append(Hostile(f"runs-import-otel:{kind}", ["runs", "import", "--otel", name, "--store", "s19.db"], (name,)))
    # numbers past what SQLite (or anyone) stores
    doc = json.loads((work / "good.json").read_text(encoding="utf-8"))
    doc["runs"][0]["cases"][0]["trials"][0]["trial"] = 2 ** 70
    (work / "trial-huge.json").write_text(json.dumps(doc), encoding="utf-8")
    for label, argv in (("score", ["score", "trial-huge.json", "-q"]), ("diff", ["diff", "trial-huge.json", "good.json"]),
                        ("report", ["report", "trial-huge.json", "--html", "r19.html"]),
                        ("review-export", ["review", "export", "trial-huge.json", "--out", "rv19.yaml"])):
        h.append(Hostile(f"{label}:trial-2^70", argv, ("trial-huge.json", "trial")))
    for kind, text in (("criteria-7", "format: tether.review\nversion: 1\ntrials:\n- {case_id: C4-LD-01, model: m, "
                                      "guards: 'off', trial: 0, criteria: 7}\n"),
                       ("criteria-str", "format: tether.review\nversion: 1\ntrials:\n- {case_id: C4-LD-01, model: m, "
                                        "guards: 'off', trial: 0, criteria: nope}\n"),
                       ("trial-2^70", "format: tether.review\nversion: 1\ntrials:\n- {case_id: C4-LD-01, model: m, "
                                      f"guards: 'off', trial: {2 ** 70}, criteria: []}}\n")):
        name = f"rv-{kind}.yaml"
        (work / name).write_text(text, encoding="utf-8")
        h.append(Hostile(f"review-import:{kind}", ["review", "import", name, "--results", "good.json", "--json",
                                                   "o19.json", "-q"], (name,)))
    # run exports from elsewhere: every field checked, code never run, markup never stored
    def evil_model(events: list[dict]) -> None:
        events[0]["meta"]["cli"]["model"] = "./evil.py:make"

    def trial_huge(events: list[dict]) -> None:
        events[0]["trial"] = 2 ** 70

    def eval_markup(events: list[dict]) -> None:
        events[0]["eval_id"] = "ev-x" + _PAYLOAD

    def model_escape(events: list[dict]) -> None:
        events[0]["model"] = "m" + _OSC52

    (work / "evil.py").write_text("open('EVIL-RAN', 'w').write('x')\ndef make():\n    raise SystemExit(99)\n",
                                  encoding="utf-8")
    for edit in (trial_huge, eval_markup, model_escape):
        name = f"x19-{edit.__name__}.jsonl"
        (work / name).write_text(_export_lines(fixture, edit), encoding="utf-8")
        h.append(Hostile(f"runs-import:{edit.__name__}", ["runs", "import", name, "--store", "s19.db"], (name,)))

    def setup_evil(w: Path) -> None:
        from typer.testing import CliRunner

        from tether.cli import app

        (w / "x19-evil.jsonl").write_text(_export_lines(fixture, evil_model), encoding="utf-8")
        CliRunner().invoke(app, ["runs", "import", str(w / "x19-evil.jsonl"), "--store", str(w / "evil.db")])

    for label in ("resume", "approve"):
        h.append(Hostile(f"{label}:record-names-code", [label, "h19-" + str(abs(hash("evil_model")) % 10_000),
                                                        "--store", "evil.db"],
                         ("meta.cli.model",) if label == "resume" else ("meta.cli.model", "pending approval"),
                         setup=setup_evil))
    h.append(Hostile("run:approver-bogus-alone", ["run", "C4-LD-01", "--approver", "bogus", "--store", "s19.db"],
                     ("--approver",)))
    h.append(Hostile("runs-show:osc52-id", ["runs", "show", "x" + _OSC52, "--store", "good.db"], ("run",)))
    if Path("/dev/full").exists():
        h.append(Hostile("runs-export:dev-full", ["runs", "export", "p1", "--store", "good.db", "-o", "/dev/full"],
                         ("/dev/full",)))
    # a cassette that is not one
    for kind, text in (("json-list", "[1, 2]"), ("format-only", '{"format": "tether.cassette", "version": 2}'),
                       ("events-str", '{"format": "tether.cassette", "version": 2, "events": "x"}')):
        (work / f"cas-{kind}.json").write_text(text, encoding="utf-8")
    return h


def build(work: Path, fixture: Fixture, *, slow: bool = False) -> list[Hostile]:
    """Every hostile invocation (the cheap ones, or with ``slow`` the costly ones too),
    its inputs written under ``work``."""
    fixture.install(work)
    cases = _file_inputs(work, FILES, slow=False) + _special_inputs(work) + _store_inputs(work, fixture)
    cases += _option_inputs(work) + _issue19_inputs(work, fixture)
    if slow:
        cases += _file_inputs(work, SLOW_FILES, slow=True)
    return cases if slow else [c for c in cases if not c.slow]
