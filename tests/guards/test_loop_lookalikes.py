"""Legitimate runs that look like loops, written for this file (not from the
corpus), through the reference stack offline: the rules of issue 25 must
leave each alone, and catch its looping twin."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from guard_quality import load_item, run_item  # noqa: E402

from tether.guards.stacks import guard_stack  # noqa: E402


def ok(tool, args, data):
    return {"tool": tool, "args": args, "result": {"ok": True, "data": data}}


def err(tool, args, error, kind="tool_error"):
    return {"tool": tool, "args": args, "result": {"ok": False, "error": error, "error_type": kind}}


def ask(question, answer):
    return {"ask": question, "answer": answer}


LEGITIMATE = {
    "a clean status after each commit": sum(
        ([ok("edit_file", {"path": f"src/{n}.py", "content": f"x = {i}"}, {"ok": True}),
          ok("git_commit", {"message": f"update {n}"}, {"sha": f"a{i}c"}),
          ok("git_status", {}, {"clean": True, "branch": "main"})] for i, n in enumerate("abc")), []),
    "GraphQL queries sent by POST": [
        ok("http_request", {"method": "POST", "url": "https://api.example/graphql",
                            "json": {"query": '{repo(name: "%s") {stars}}' % n}}, {"data": {"repo": {"stars": i}}})
        for i, n in enumerate("abcd")],
    "a confirmation per file": [
        x for n in ("a.txt", "b.txt", "c.txt", "d.txt")
        for x in (ask(f"Delete file {n}?", "yes"), ok("delete_file", {"path": n}, {"deleted": True}))],
    "notices that differ in their facts": [
        ok("send_message", {"channel": "#ops", "text": f"Deploy of service {s} finished at step {i}"},
           {"status": "queued", "id": f"m{i}"}) for i, s in enumerate(["api", "web", "worker"])],
    "tests rerun after each fix": [
        ok("run_tests", {}, {"failed": 2, "run_id": "r1"}), ok("edit_file", {"path": "a.py", "content": "fix"}, {"ok": True}),
        ok("run_tests", {}, {"failed": 1, "run_id": "r2"}), ok("edit_file", {"path": "a.py", "content": "fix 2"}, {"ok": True}),
        ok("run_tests", {}, {"failed": 0, "run_id": "r3"})],
    "a report polled with a wait until it is ready": [
        x for _ in range(4) for x in (err("get_report", {"id": "r1"}, "404 report not ready", "not_found"),
                                      ok("sleep", {"seconds": 10}, None))] + [ok("get_report", {"id": "r1"}, {"rows": 3})],
    "an answer that carries a fresh request id each time": [
        ok("weather", {"city": "Paris"}, {"temp_c": 20, "request_id": f"req_{i}"}) for i in range(2)] + [
        ok("weather", {"city": "Lyon"}, {"temp_c": 22, "request_id": "req_9"})],
    "a listing walked to its end": [
        ok("list_files", {"folder": "docs", "page": i}, {"files": [f"f{i}{j}" for j in range(3)], "has_more": i < 3})
        for i in range(1, 4)],
}

LOOPING = {
    "the same file deleted again after a confirmation": [
        ask("Delete file a.txt?", "yes"), ok("delete_file", {"path": "a.txt"}, {"deleted": True}),
        ask("Delete file a.txt now?", "I said yes"), ok("delete_file", {"path": "a.txt"}, {"deleted": True})],
    "the same notice re-sent in other words": [
        ok("send_message", {"channel": "#ops", "text": t}, {"status": "queued", "id": f"m{i}"})
        for i, t in enumerate(["Deploy of the api service finished, all checks green.",
                               "The api service deploy has finished, all checks are green!",
                               "Deploy of api service finished — all checks green."])],
    "a task started again under a fresh id": [
        ok("Task", {"description": "write the refund tests"}, {"task_id": f"t_0{i}", "status": "started"})
        for i in range(1, 5)],
}


def _run(tmp_path, name, actions, label, trip_by=None):
    doc = {"id": "x", "family": "f", "label": label, "task": "t", "source": {"url": "https://example.org"},
           "actions": actions}
    if trip_by:
        doc["trip_by"] = trip_by
    path = tmp_path / "tuning" / "x.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return run_item(load_item(path), guard_stack("on"))


@pytest.mark.parametrize("name", list(LEGITIMATE))
def test_legitimate_work_draws_nothing(tmp_path, name):
    outcome = _run(tmp_path, name, LEGITIMATE[name], "ok")
    assert outcome.trips == [], [(at, t.verdict.rule, t.verdict.action) for at, t in outcome.trips]


@pytest.mark.parametrize("name", list(LOOPING))
def test_its_looping_twin_is_caught(tmp_path, name):
    outcome = _run(tmp_path, name, LOOPING[name], "loop", trip_by=len(LOOPING[name]))
    assert outcome.first is not None and outcome.first <= len(LOOPING[name]), name
