"""A run's events as plain records (tether.store.records, what `tether runs show` reads): the same
values as the pydantic event models give, the same printed run, the same refusal of a damaged run."""

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.events import EVENT_ADAPTER
from tether.schemas import shipped
from tether.store import open_store
from tether.store.export import load_run
from tether.store.opening import DamagedRun
from tether.store.records import Record
from tether.store.records import run_records as _run_records


def run_records(store, run_id):
    """The records of a run, checked against the shipped trace schema (as `runs show` reads them)."""
    return _run_records(store, run_id, shipped("trace.schema.json"))


def _plain(value):
    """A record (or a part of one) as JSON-like data, to compare with a model's dump."""
    if isinstance(value, SimpleNamespace):
        return {k: _plain(v) for k, v in vars(value).items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _dumped(raw: dict) -> dict:
    event = EVENT_ADAPTER.validate_python(raw)
    out = event.model_dump(mode="json")
    if raw.get("type") == "tool_result":
        out["outcome"] = event.outcome.value          # a result stored before format 3: written back without it
    return out


@pytest.fixture(scope="module")
def c4_store(tmp_path_factory) -> str:
    """A real C4 eval, guarded (calls, results, guard trips, questions, finals)."""
    db = str(tmp_path_factory.mktemp("records") / "c4.db")
    res = CliRunner().invoke(app, ["eval", "c4", "--model", "policy:stubborn", "--guards", "on", "--store", db])
    assert res.exit_code in (0, 1), res.output
    return db


def _run_ids(db: str) -> list[str]:
    res = CliRunner().invoke(app, ["runs", "list", "--limit", "1000", "--format", "json", "--store", db])
    assert res.exit_code == 0, res.output
    return [r["run"] for r in json.loads(res.output)["rows"]]


def test_every_record_holds_what_its_model_reads(c4_store):
    db = open_store(c4_store, read_only=True)
    kinds = set()
    for run_id in _run_ids(c4_store):
        raws = db.events(run_id)
        records = run_records(db, run_id)
        assert all(isinstance(r, Record) for r in records), "a stored event fell back to its model"
        assert [_plain(r) for r in records] == [_dumped(raw) for raw in raws]
        kinds |= {r.type for r in records}
    assert {"run_started", "user_message", "agent_message", "model_request", "model_decision", "tool_call",
            "tool_result", "guard_tripped", "run_finished"} <= kinds


def _show(db: str, run_id: str, *extra: str):
    return CliRunner().invoke(app, ["runs", "show", run_id, *extra, "--store", db])


@pytest.mark.parametrize("messages", ["full", "new", "none"])
def test_runs_show_prints_records_as_it_printed_the_models(c4_store, monkeypatch, messages):
    """The printed run, byte for byte and exit code, from records and from the event models."""
    from tether.store import records

    ids = _run_ids(c4_store)
    shown = {run_id: _show(c4_store, run_id, "--messages", messages) for run_id in ids}
    monkeypatch.setattr(records, "run_records", lambda store, run_id, schema: list(load_run(store, run_id)))
    for run_id in ids:
        by_model = _show(c4_store, run_id, "--messages", messages)
        assert (shown[run_id].exit_code, shown[run_id].output) == (by_model.exit_code, by_model.output), run_id
        assert shown[run_id].exit_code == 0 and "run_finished" in shown[run_id].output


def _store_with(tmp_path, events: list[dict]) -> tuple[str, str]:
    """A store holding one run whose events are ``events`` as given (a record written elsewhere)."""
    path = str(tmp_path / "odd.db")
    db = open_store(path)
    db.create_run("odd", model="m")
    db.append_events("odd", list(enumerate(events)))
    db.close()
    return path, "odd"


def _events(c4_store: str) -> list[dict]:
    db = open_store(c4_store, read_only=True)
    return db.events(next(i for i in _run_ids(c4_store) if "stubborn" in i))


def test_an_older_result_without_an_outcome_reads_it_from_its_source(c4_store, tmp_path):
    events = _events(c4_store)
    old = [{k: v for k, v in e.items() if not (e["type"] == "tool_result" and k == "outcome")} for e in events]
    old = [{**e, "source": "mock"} if e["type"] == "tool_result" else e for e in old]
    path, run_id = _store_with(tmp_path, old)
    db = open_store(path, read_only=True)
    results = [r for r in run_records(db, run_id) if r.type == "tool_result"]
    assert results and {r.outcome for r in results} == {"mocked"}
    assert [_plain(r) for r in run_records(db, run_id)] == [_dumped(e) for e in old]


@pytest.mark.parametrize("change", [
    lambda e: {**e, "step": "3"} if e["type"] == "tool_call" else e,            # lax: the model reads "3" as 3
    lambda e: {**e, "latency_ms": 12} if e["type"] == "model_decision" else e,   # an integer for a float
    lambda e: {**e, "outcome": None} if e["type"] == "tool_result" else e,       # inferred, field kept
])
def test_a_value_in_a_lax_form_is_read_as_the_model_reads_it(c4_store, tmp_path, monkeypatch, change):
    events = [change(e) for e in _events(c4_store)]
    path, run_id = _store_with(tmp_path, events)
    db = open_store(path, read_only=True)
    got = run_records(db, run_id)
    assert [_plain(r) if isinstance(r, SimpleNamespace) else r.model_dump(mode="json") for r in got] == \
        [_dumped(e) if e["type"] != "tool_result" or e.get("outcome") is not None else
         EVENT_ADAPTER.validate_python(e).model_dump(mode="json") for e in events]
    from tether.store import records

    shown = _show(path, run_id)
    monkeypatch.setattr(records, "run_records", lambda store, rid, schema: list(load_run(store, rid)))
    assert shown.exit_code == 0 and shown.output == _show(path, run_id).output


@pytest.mark.parametrize("change", [
    lambda e: {**e, "step": "three"} if e["type"] == "tool_call" else e,
    lambda e: {**e, "teleport": 1} if e["type"] == "user_message" else e,
    lambda e: {**e, "type": "teleport"} if e["type"] == "run_finished" else e,
    lambda e: {k: v for k, v in e.items() if k != "content"} if e["type"] == "user_message" else e,
    lambda e: {**e, "verdict": "shrug"} if e["type"] == "guard_tripped" else e,
])
def test_a_damaged_run_is_refused_as_the_models_refuse_it(c4_store, tmp_path, change):
    path, run_id = _store_with(tmp_path, [change(e) for e in _events(c4_store)])
    db = open_store(path, read_only=True)
    with pytest.raises(DamagedRun) as by_model:
        load_run(db, run_id)
    with pytest.raises(DamagedRun) as by_record:
        run_records(db, run_id)
    assert str(by_record.value) == str(by_model.value)
    shown = _show(path, run_id)
    assert shown.exit_code == 2 and str(by_model.value) in " ".join(shown.output.split())
