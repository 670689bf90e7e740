"""`tether resume RUN --agent ... --tools ...`: a run not started by `tether run`
is continued by the agent named on the command line (never by code a record names)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tether import RunConfig, run_agent_sync
from tether.cli import app
from tether.store import SQLiteStore

AGENT = '''\
import json

from tether import Decision, FunctionModel, ToolSet, tool
from tether.runtime import LoopAgent

REFUNDS = []


@tool(description="refund", side_effect=True)
def create_refund(order_id: str, amount: int):
    REFUNDS.append(amount)
    return {"refund_id": f"R{len(REFUNDS)}"}


def tools():
    return ToolSet([create_refund])


def decide(request):
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < 2:
        return Decision.call("create_refund", {"order_id": "A100", "amount": 100})
    return Decision.final("two refunds")


def build():
    return LoopAgent(FunctionModel(decide, name="two-refunds"))
'''


class Crash(BaseException):
    pass


def test_resume_names_the_agent_and_its_tools(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "two_refunds.py").write_text(AGENT, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import two_refunds

    calls = {"n": 0}

    def dying(request):
        calls["n"] += 1
        if calls["n"] == 3:          # after both refunds, before the final answer
            raise Crash()
        return two_refunds.decide(request)

    from tether import FunctionModel

    store = SQLiteStore(tmp_path / "s.db")
    with pytest.raises(Crash):
        run_agent_sync(FunctionModel(dying), two_refunds.tools(), message="refund A100 twice", run_id="r1",
                       config=RunConfig(store=store))
    runner = CliRunner()
    args = ["resume", "r1", "--store", str(tmp_path / "s.db")]
    out = runner.invoke(app, args, catch_exceptions=False)
    assert out.exit_code != 0 and "--agent MODULE:FACTORY" in out.output and "Traceback" not in out.output
    out = runner.invoke(app, [*args, "--agent", "two_refunds.py:build"], catch_exceptions=False)
    assert out.exit_code != 0 and "--tools" in out.output and "Traceback" not in out.output
    out = runner.invoke(app, [*args, "--agent", "two_refunds.py:build", "--tools", "two_refunds.py:tools"],
                        catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert store.get_run("r1")["status"] == "completed"
    assert [e["status"] for e in store.effects("r1")] == ["done", "done"]      # two intended refunds, each once
