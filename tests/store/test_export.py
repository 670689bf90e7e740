"""A run as a self-contained file and back: export, import (same digest),
version 1 traces, and the one-line errors for what is not a trace."""

from __future__ import annotations

import json

import pytest

from tether import Decision, RunConfig, ScriptedModel, ToolSet, run_agent_sync, tool
from tether.errors import CaseFileError, UsageError
from tether.store import SQLiteStore
from tether.store.export import export_run, import_run, load_run, load_trace_or_run, read_trace


@tool(description="查询订单")
def query_order(order_id: str):
    return {"order_id": order_id, "status": "paid"}


V1_TRACE = [
    {"type": "run_started", "version": 1, "run_id": "v1-run", "model": "legacy", "case_id": "C4-PA-01",
     "tools": ["query_order"], "guards": "off", "meta": {}, "seq": 0, "at_ms": 0.0},
    {"type": "user_message", "content": "查订单", "source": "input", "seq": 1, "at_ms": 0.1},
    {"type": "model_request", "step": 1, "message_count": 2, "tools": ["query_order"], "request_hash": "ab",
     "seq": 2, "at_ms": 0.2},
    {"type": "model_decision", "step": 1, "kind": "final", "text": "已付款", "tool_calls": [],
     "usage": {"input_tokens": 12, "output_tokens": 3, "cost": 0.0}, "seq": 3, "at_ms": 0.3},
    {"type": "run_finished", "status": "completed", "reply": "已付款", "steps": 1,
     "usage": {"input_tokens": 12, "output_tokens": 3, "cost": 0.0}, "error": None, "reason": "final answer",
     "seq": 4, "at_ms": 0.4},
]


def v1_text() -> str:
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in V1_TRACE)


def test_export_then_import_elsewhere_is_the_same_run(tmp_path):
    a, b = SQLiteStore(tmp_path / "a.db"), SQLiteStore(tmp_path / "b.db")
    model = ScriptedModel([Decision.call("query_order", {"order_id": "A1"}), Decision.final("已付款")])
    result = run_agent_sync(model, ToolSet([query_order]), message="查订单 A1", config=RunConfig(store=a),
                            run_id="r1")
    text = export_run(a, "r1")
    assert "查订单 A1" in text and "\\u" not in text                   # UTF-8 as is
    assert import_run(b, text) == ("r1", True)
    assert b.get_run("r1")["digest"] == a.get_run("r1")["digest"] == result.trajectory.digest()
    copy = load_run(b, "r1")
    assert copy.digest() == result.trajectory.digest()
    assert [m for _, m in copy.requests()] == [m for _, m in result.trajectory.requests()]
    assert import_run(b, text) == ("r1", False)                            # twice: a no-op
    with pytest.raises(UsageError, match="no run 'nope'"):
        export_run(a, "nope")


def test_a_version_1_trace_loads_imports_and_keeps_its_record(tmp_path):
    t = read_trace(v1_text())
    assert t.started.version == 1 and t.started.kind == "run" and t.started.tool_specs == []
    request, messages = t.requests()[0]
    assert request.message_count == 2 and messages == [] and request.role == "agent"
    assert t.usage().input_tokens == 12 and t.finished.error_kind is None
    store = SQLiteStore(tmp_path / "t.db")
    assert import_run(store, v1_text()) == ("v1-run", True)
    assert load_run(store, "v1-run").final_reply == "已付款"


def test_what_is_not_a_trace_is_one_clear_error(tmp_path):
    with pytest.raises(CaseFileError, match="empty: not a trace"):
        read_trace("\n\n", path="e.jsonl")
    results = json.dumps({"format": "tether.results", "version": 1, "runs": [{"x": i} for i in range(500)]}, indent=2)
    with pytest.raises(CaseFileError) as exc:
        read_trace(results, path="r.json")
    assert len(exc.value.problems) == 1 and "a results document (tether.results)" in str(exc.value)
    with pytest.raises(CaseFileError, match="the first line is not an event"):
        read_trace('{"hello": 1}\n{"type": "user_message", "content": "x"}\n')
    broken = "\n".join([json.dumps(V1_TRACE[0])] + ["{not json"] * 40)
    with pytest.raises(CaseFileError) as exc:
        read_trace(broken)
    # the first five, then a count (reading stops after tether.inputs.MAX_PROBLEMS problems)
    assert len(exc.value.problems) == 6 and "more problem(s)" in exc.value.problems[-1][1]
    newer = json.dumps({**V1_TRACE[0], "version": 99})
    with pytest.raises(CaseFileError, match="newer than this tether"):
        read_trace(newer)


def test_load_trace_or_run_takes_a_file_or_a_run_id(tmp_path):
    store = SQLiteStore(tmp_path / "t.db")
    import_run(store, v1_text())
    trace = tmp_path / "old.jsonl"
    trace.write_text(v1_text(), encoding="utf-8")
    assert load_trace_or_run(str(trace))[1] == str(trace)
    t, source = load_trace_or_run("v1-run", tmp_path / "t.db")
    assert source == "run v1-run" and t.started.run_id == "v1-run"
    with pytest.raises(UsageError, match="trace not found"):
        load_trace_or_run(str(tmp_path / "missing.jsonl"))
    with pytest.raises(UsageError, match="no store at"):
        load_trace_or_run("v1-run", tmp_path / "absent.db")


def test_an_import_stopped_half_way_leaves_nothing_and_a_second_import_makes_the_run(store_url, monkeypatch):
    """`tether runs import` is one transaction: stopped after the run's row and events were written but
    before its end (Ctrl-C, a killed CI job), nothing of it is there, and importing again makes it whole.
    It used to leave a run "running" for ever, which every later import took for a run still being
    written ("try again once it has finished")."""
    from tether.store import facts, open_store

    store = open_store(store_url)
    real = facts.run_facts

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(facts, "run_facts", interrupted)
    with pytest.raises(KeyboardInterrupt):
        import_run(store, v1_text())
    assert store.get_run("v1-run") is None and store.events("v1-run") == []
    monkeypatch.setattr(facts, "run_facts", real)
    assert import_run(store, v1_text()) == ("v1-run", True)
    row = store.get_run("v1-run")
    assert row["status"] == "completed" and row["digest"] == read_trace(v1_text()).digest()
    assert len(store.events("v1-run")) == len(V1_TRACE)
    store.close()


def test_an_export_that_stops_before_its_run_ended_imports_as_ended_with_why(store_url):
    """An export with no run_finished (taken while the run went on, or of a run that crashed) is stored
    with its events as they are and its row "ended", saying why: it used to stay "running" for ever in a
    store where nothing runs it (never pruned), and importing it again was refused."""
    from tether.store import open_store
    from tether.store.export import UNFINISHED

    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in V1_TRACE[:-1])
    store = open_store(store_url)
    assert import_run(store, text) == ("v1-run", True)
    row = store.get_run("v1-run")
    assert (row["status"], row["reason"], row["digest"]) == ("ended", UNFINISHED, read_trace(text).digest())
    assert len(store.events("v1-run")) == len(V1_TRACE) - 1
    assert import_run(store, text) == ("v1-run", False)                    # twice: a no-op
    store.close()
