"""``run_suite(..., judge=, fail_under=, max_errors=)`` does what ``tether eval`` does:
the same results document, the same gate (FailUnder: exit 1, TooManyErrors: exit 4)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.evals import load_suite
from tether.evals.gates import FailUnder, TooManyErrors, check_gates
from tether.evals.results import Results
from tether.evals.runner import EvalConfig, run_suite
from tether.messages import Decision
from tether.models import FunctionModel, register_model_prefix


def _gate_judge(rest: str):
    def decide(request):
        crit = re.search(r"^## Criterion (\S+)", request.messages[1].content, re.M).group(1)
        return Decision.final(json.dumps({"verdict": rest, "reason": f"{crit}: {rest}", "steps": [1]}))

    return FunctionModel(decide, name=f"gatejudge-{rest}")


register_model_prefix("gatejudge", _gate_judge)

VOLATILE = {"eval_id", "created", "store", "run_id", "judged_at", "at", "digest", "duration_ms", "latency_ms"}


def _stable(value):
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def test_run_suite_with_a_judge_and_fail_under_gives_the_cli_document(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["eval", "c4", "--model", "policy:quitter", "--case", "C4-AR-0*",
                                   "--judge", "gatejudge:pass", "--fail-under", "0.9", "--max-errors", "0",
                                   "--store", "cli.db", "--json", "cli.json", "-q"])
    assert res.exit_code == 1, res.output
    assert "fail-under: policy:quitter (guards off): automatic pass rate" in res.output
    cli = json.loads((tmp_path / "cli.json").read_text(encoding="utf-8"))

    cases = [c for c in load_suite("c4") if c.id.startswith("C4-AR-0")]
    with pytest.raises(FailUnder) as caught:
        asyncio.run(run_suite(cases, ["policy:quitter"], EvalConfig(store=tmp_path / "lib.db", concurrency=8),
                              judge="gatejudge:pass", fail_under=0.9, max_errors=0))
    lib = caught.value.results.model_dump(mode="json")
    assert caught.value.exit_code == 1 and caught.value.lines[0].startswith("fail-under: policy:quitter")
    assert _stable(lib) == _stable(cli)
    # the judge decided the rubric criteria, in both
    judged = [cr for _, case, trial in caught.value.results.trials() for cr in trial.criteria if cr.kind == "judge"]
    assert judged and all(cr.verdict == "pass" and cr.judged_by == "llm:gatejudge-pass" for cr in judged)


class Unreachable:
    """A provider that cannot be reached: every trial ends in error (infrastructure)."""

    name = "test:unreachable"

    async def request(self, request):
        from tether.models._http import ProviderFailure

        raise ProviderFailure(self.name, request.step, "connection refused", reason="connection")


def test_max_errors_raises_too_many_errors_before_fail_under(tmp_path):
    cases = [c for c in load_suite("c4") if c.id in ("C4-LD-01", "C4-PA-01")]
    config = EvalConfig(store=tmp_path / "runs.db")
    with pytest.raises(TooManyErrors) as caught:
        asyncio.run(run_suite(cases, [Unreachable()], config, fail_under=0.5, max_errors=1))
    assert caught.value.exit_code == 4
    assert caught.value.lines == ["2 trial(s) ended in error (allowed: 1); their verdicts and rates are left out: "
                                  "exit 4"]
    assert [c.verdict for c in caught.value.results.runs[0].cases] == ["error", "error"]
    # within the budget, and no floor: the results come back
    results = asyncio.run(run_suite(cases, [Unreachable()], config, max_errors=2))
    assert results.runs[0].errors == 2
    check_gates(Results(suite="c4", runs=[]), fail_under=0.5, max_errors=0)   # nothing ran: nothing missed
