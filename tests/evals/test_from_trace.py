"""``tether case from-trace``: a recorded run becomes a case skeleton that validates and runs."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from tether.cli import app
from tether.evals import load_case
from tether.testing import TrajectoryBuilder


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_a_stubborn_ld01_run_becomes_a_case_that_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    recorded = run("run", "C4-LD-01", "--model", "policy:stubborn", "--store", "tmp.db", "--run-id", "ld01-stubborn")
    assert recorded.exit_code == 3, recorded.output                  # the loop guard stopped it

    made = run("case", "from-trace", "ld01-stubborn", "--store", "tmp.db", "-o", "ld01.yaml")
    assert made.exit_code == 0, made.output
    text = (tmp_path / "ld01.yaml").read_text(encoding="utf-8")
    assert "\\u" not in text and "# TODO criteria" in text
    raw = yaml.safe_load(text)
    assert raw["input"] == {"message": "查一下下周五北京到上海的机票"}
    assert [t["name"] for t in raw["mock_tools"]] == ["search_flights", "web_search"] == raw["tools"]
    assert raw["mock_tools"][0]["parameters"]["required"] == ["departure_city", "arrival_city", "date"]
    [entry] = raw["tool_config"]["mocked_calls"]                     # three identical calls, one mock
    assert entry["params_match"] == {"departure_city": "北京", "arrival_city": "上海", "date": "下周五"}
    assert entry["inject_result"]["is_error"] and "Invalid date parameter format" in entry["inject_result"]["content"]
    assert [c["id"] for c in raw["criteria"]] == ["TODO.placeholder"] and raw["dimension"] == "LD"

    assert run("case", "validate", "ld01.yaml").exit_code == 0
    res = run("eval", "ld01.yaml", "--model", "policy:stubborn", "--model", "policy:steady", "--json", "r.json", "-q")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    by_model = {r["model"]: r["cases"][0] for r in doc["runs"]}
    assert {c["case_id"] for c in by_model.values()} == {"FROM-ld01-stubborn"}
    assert all(c["verdict"] == "unjudged" for c in by_model.values())     # the placeholder is never a pass
    assert by_model["policy:stubborn"]["trials"][0]["counters"]["max_identical"] >= 20
    assert case_loads(tmp_path / "ld01.yaml")


def case_loads(path):
    return load_case(path).id.startswith("FROM-")


def test_secrets_redacted_and_personal_data_pseudonymised(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    email = "zhang.wei@example.com"
    key = "sk-" + "a1B2" * 8
    t = (TrajectoryBuilder(case_id="SHOP-01", model="some-model")
         .user(f"我的邮箱是 {email}，用 key {key} 查一下订单 A1001")
         .call("lookup_order", {"email": email, "keyword": "A1001"}, data={"email": email, "status": "已发货"})
         .call("lookup_order", {"email": email, "keyword": "A1002"}, error="not found", error_type="not_found")
         .final(f"已发到 {email}"))
    (tmp_path / "run.jsonl").write_text(t.to_jsonl(), encoding="utf-8")

    made = run("case", "from-trace", "run.jsonl")
    assert made.exit_code == 0, made.output
    text = made.output
    assert email not in text and key not in text and "[REDACTED]" in text
    assert "Redaction: 1 secret(s) removed, pseudonyms: email 1." in text
    raw = yaml.safe_load(text)
    alias = "email-001@example.invalid"
    assert alias in raw["input"]["message"]
    calls = raw["tool_config"]["mocked_calls"]
    assert [c["params_match"] for c in calls] == [{"email": alias, "keyword": "A1001"},
                                                  {"email": alias, "keyword": "A1002"}]
    assert alias in calls[0]["inject_result"]["content"]
    assert calls[1]["inject_result"] == {"is_error": True, "content": "not found", "error_type": "not_found"}
    # an old trace without tool specs: the tool is declared with an empty schema
    assert raw["mock_tools"] == [{"name": "lookup_order", "description": "",
                                  "parameters": {"type": "object", "properties": {}}}]
    (tmp_path / "case.yaml").write_text(text, encoding="utf-8")
    assert run("case", "validate", "case.yaml").exit_code == 0
    assert run("eval", "case.yaml", "--model", "policy:steady", "-q").exit_code == 0


def test_from_trace_usage_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = run("case", "from-trace", "nope")
    assert out.exit_code == 2 and "no run store at" in out.output
    (tmp_path / "s.db").write_bytes(b"")
    run("run", "C4-PA-01", "--model", "policy:steady", "--store", "s.db", "--run-id", "pa01")
    missing = run("case", "from-trace", "other", "--store", "s.db")
    assert missing.exit_code == 2 and "no run 'other'" in missing.output
    assert run("case", "from-trace", "pa01", "--store", "s.db", "-o", "x.yaml").exit_code == 0
    again = run("case", "from-trace", "pa01", "--store", "s.db", "-o", "x.yaml")
    assert again.exit_code == 2 and "x.yaml exists" in again.output
