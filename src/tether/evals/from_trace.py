"""A case skeleton from a recorded run (``tether case from-trace RUN``).

The skeleton replays the run's world: the user's message and history, the
simulated user's replies as a scripted persona, every tool the agent was
offered declared under ``mock_tools`` (its recorded schema) and answered by a
``tool_mock`` entry per distinct recorded call (``params_match`` = the
recorded arguments, ``inject_result`` = the recorded result). Secrets are
redacted and personal data pseudonymised with one
:class:`~tether.replay.redact.Redactor`, so a value keeps the same pseudonym
in the message, the arguments and the results, and the mocks still match.

What a good run looks like cannot be read off one run: the criteria are left
as TODO comments (with the recorded counts), plus one judge placeholder that
stays ``unjudged`` (never a pass) so the file validates and runs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from ..errors import UsageError
from ..events import AgentMessage, ToolCallEvent, ToolResultEvent, Trajectory, UserMessage
from ..messages import canonical_json

# Results that no tool produced (a guard blocked the call, the runner refused it): not replayed.


def load_trajectory(ref: str, store: str | Path | None = None) -> Trajectory:
    """A run by id from the store, or a trace file (JSON Lines)."""
    from ..store import SQLiteStore, default_store_path
    from ..store.export import load_run
    from .loader import read_utf8

    path = Path(ref)
    if path.suffix in (".jsonl", ".json") or path.is_file():
        return Trajectory.from_jsonl(read_utf8(path, "trace file"), path=str(path))
    from ..store.connect import is_url, open_store, store_spec

    if is_url(store_spec(store)):
        return load_run(open_store(store, read_only=True), ref)
    db_path = Path(store) if store is not None else default_store_path()
    if not db_path.is_file():
        raise UsageError(f"no run store at {db_path} (give --store, or a trace file)")
    return load_run(SQLiteStore(db_path), ref)


def _content(result: ToolResultEvent) -> str:
    if not result.ok:
        return result.error or "error"
    data = result.data
    return data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:60] or "run"


class _Literal(str):
    """A multi-line string written as a YAML block."""


def _dumper() -> type[yaml.SafeDumper]:
    class Dumper(yaml.SafeDumper):
        pass

    def literal(dumper: yaml.SafeDumper, value: _Literal) -> yaml.Node:
        return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style="|")

    Dumper.add_representer(_Literal, literal)
    return Dumper


def _dump(data: dict[str, Any]) -> str:
    return yaml.dump(data, Dumper=_dumper(), allow_unicode=True, sort_keys=False, width=10**9,
                     default_flow_style=False)


def case_from_run(trajectory: Trajectory, *, case_id: str | None = None) -> str:
    """The YAML text of a case skeleton for ``trajectory``."""
    from ..replay.redact import Redactor

    started = trajectory.started
    if started is None:
        raise UsageError("this trace has no run_started event; is it a tether trace?")
    events = trajectory.events
    history: list[dict[str, Any]] = []
    message: str | None = None
    replies: list[str] = []
    for ev in events:
        if isinstance(ev, UserMessage):
            if ev.source == "history":
                history.append({"role": "user", "content": ev.content})
            elif ev.source == "simulator":
                replies.append(ev.content)
            elif message is None:
                message = ev.content
        elif isinstance(ev, AgentMessage) and ev.source == "history":
            turn: dict[str, Any] = {"role": "agent", "content": ev.content}
            if ev.kind == "question":
                turn["question"] = True
            history.append(turn)
    if message is None and not history:
        raise UsageError(f"run {started.run_id} has no user message to start a case from")

    calls = {ev.call_id: ev for ev in events if isinstance(ev, ToolCallEvent)}
    mocked: list[dict[str, Any]] = []
    answered: dict[str, str] = {}         # (tool, arguments) -> first recorded result
    changed: Counter[str] = Counter()
    per_tool: Counter[str] = Counter()
    identical: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for ev in events:
        if not isinstance(ev, ToolResultEvent) or not ev.executed or ev.call_id not in calls:
            continue
        call = calls[ev.call_id]
        key = f"{call.tool}\n{canonical_json(call.arguments)}"
        per_tool[call.tool] += 1
        identical[key] += 1
        errors[call.tool] += 0 if ev.ok else 1
        content = _content(ev)
        if key in answered:
            if answered[key] != content:
                changed[call.tool] += 1
            continue
        answered[key] = content
        result: dict[str, Any] = {"is_error": not ev.ok, "content": content}
        if not ev.ok and ev.error_type:
            result["error_type"] = ev.error_type
        entry: dict[str, Any] = {"tool": call.tool}
        if call.arguments:
            entry["params_match"] = dict(call.arguments)
        entry["inject_result"] = result
        mocked.append(entry)

    specs = list(started.tool_specs)
    spec_names = [s.name for s in specs]
    mock_tools = [{"name": s.name, "description": s.description, "parameters": s.parameters,
                   **({"side_effect": True} if s.side_effect else {})} for s in specs]
    for name in [*started.tools, *per_tool]:
        if name not in spec_names:          # an older trace without tool specs
            spec_names.append(name)
            mock_tools.append({"name": name, "description": "",
                               "parameters": {"type": "object", "properties": {}}})

    finished = trajectory.finished
    dimension = "TODO"
    m = re.match(r"^[A-Za-z0-9]+-([A-Za-z][A-Za-z0-9_]*)-\d+$", started.case_id or "")
    if m:
        dimension = m.group(1)
    new_id = case_id or f"FROM-{_slug(started.run_id)}"

    redactor = Redactor()
    inp: dict[str, Any] = {}
    if message is not None:
        inp["message"] = message
    if history:
        inp["history"] = history
    body: dict[str, Any] = {
        "id": new_id,
        "title": f"from run {started.run_id}" + (f" (case {started.case_id})" if started.case_id else ""),
        "dimension": dimension,
        "failure_injection": any(e.get("inject_result", {}).get("is_error") for e in mocked),
        "scoring": ["judge"],
        "input": inp,
        "mock_tools": mock_tools,
        "tools": spec_names,
    }
    if mocked:
        body["tool_config"] = {"type": "tool_mock", "mocked_calls": mocked, "unmatched": "error"}
    if replies:
        body["persona"] = {"description": "the user as recorded in the run (its replies, in order)",
                           "replies": replies, "then": "stop"}
    body["max_steps"] = max(30, (finished.steps if finished else 0) + 5)
    body["criteria"] = [{
        "id": "TODO.placeholder",
        "kind": "judge",
        "description": "A placeholder so the skeleton validates: it stays unjudged (never a pass). "
                       "Replace it with the criteria below.",
        "rubric": "TODO: what does a good run of this case do?",
    }]
    if finished is not None and finished.reply:
        body["notes"] = _Literal(f"The recorded run ended {finished.status} after {finished.steps} step(s). "
                                 f"Its final reply:\n{finished.reply}")
    redacted = redactor.redact(body, skip_keys={"pattern", "type"})
    if "notes" in redacted:
        redacted["notes"] = _Literal(redacted["notes"])
    text = _dump(redacted)
    record = redactor.record()
    head = [f"# A case skeleton from run {started.run_id} (model {started.model}), made by tether case from-trace.",
            "# Every tool is declared under mock_tools and answered from the recorded results (tool_mock:",
            "# params_match = the recorded arguments; a call nothing matches gets a not_found error).",
            f"# Redaction: {record.secrets_removed} secret(s) removed, pseudonyms: "
            f"{', '.join(f'{k} {v}' for k, v in sorted(record.pseudonyms.items())) or 'none'}.",
            "# Check it: tether case validate FILE; run it: tether eval FILE --model policy:steady"]
    if changed:
        head.append("# Note: the same call got different results over the run for "
                    f"{', '.join(sorted(changed))}; only the first result is mocked (first match wins).")
    return "\n".join(head) + "\n" + text + _todo(per_tool, identical, errors, finished)


def _todo(per_tool: Counter[str], identical: Counter[str], errors: Counter[str], finished: Any) -> str:
    total = sum(per_tool.values())
    most = max(identical.values(), default=0)
    status = finished.status if finished is not None else "unfinished"
    lines = [
        "",
        "# TODO criteria: decide what a good run does, then replace TODO.placeholder above.",
        f"# The recorded run: status {status}, {total} tool call(s)"
        + (f" ({', '.join(f'{t} x{n}' for t, n in per_tool.most_common())})" if per_tool else "")
        + f", at most {most} identical call(s)"
        + (f", errors from {', '.join(f'{t} x{n}' for t, n in errors.items() if n)}" if any(errors.values()) else "")
        + ".",
        "# Suggestions (see docs/cases.md for every check):",
    ]
    tool = per_tool.most_common(1)[0][0] if per_tool else "TOOL"
    suggestion = {
        "criteria": [
            {"id": "calls", "check": "call_count", "tools": [tool], "pass": {"min": 1, "max": 3}, "fail": {"min": 6},
             "failure_type": "loop"},
            {"id": "identical", "check": "identical_calls", "pass": {"max": 2}, "fail": {"min": 4},
             "failure_type": "loop"},
            {"id": "finishes", "check": "status_in", "statuses": ["completed"]},
            {"id": "answer", "check": "mentions", "groups": [["TODO term", "or another"]], "on_miss": "unclear"},
            {"id": "judged", "kind": "judge", "rubric": "TODO", "pass_when": "TODO", "fail_when": "TODO"},
        ]
    }
    lines += ["# " + line for line in _dump(suggestion).splitlines()]
    return "\n".join(lines) + "\n"
