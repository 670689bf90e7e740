"""Threshold sweeps: setting parsing, stack factories, the CLI table."""

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.errors import UsageError
from tether.evals.sweep import parse_sweep, sweep_stacks
from tether.guards.budget import BudgetGuard
from tether.guards.loop import LoopGuard


def test_parse_sweep():
    assert parse_sweep("loop.max_identical=3, 5,10") == ("loop.max_identical", ["3", "5", "10"])
    with pytest.raises(UsageError, match="expected <guard>.<setting>"):
        parse_sweep("max_identical=3")


def test_one_fresh_stack_per_value_with_the_setting_changed():
    stacks = sweep_stacks("loop.max_identical", [3, 5])
    assert list(stacks) == ["loop.max_identical=3", "loop.max_identical=5"]
    first, again = stacks["loop.max_identical=3"](), stacks["loop.max_identical=3"]()
    loops = [g for g in first if isinstance(g, LoopGuard)]
    assert loops[0].config.max_identical == 3 and [g.name for g in first] == ["budget", "loop", "result"]
    assert loops[0] is not next(g for g in again if isinstance(g, LoopGuard))


def test_budget_settings_and_errors():
    stacks = sweep_stacks("budget.max_tool_calls", ["10"])
    budget = next(g for g in stacks["budget.max_tool_calls=10"]() if isinstance(g, BudgetGuard))
    assert budget.budget.max_tool_calls == 10
    with pytest.raises(UsageError, match="no setting 'nope'"):
        sweep_stacks("loop.nope", ["1"])
    with pytest.raises(UsageError, match="not a number"):
        sweep_stacks("loop.max_identical", ["many"])
    with pytest.raises(UsageError, match="no 'goal' guard"):
        sweep_stacks("goal.check_every", ["2"])


def test_cli_prints_the_comparison(tmp_path):
    res = CliRunner().invoke(app, ["eval", "c4", "--model", "policy:stubborn", "--case", "C4-LD-01", "--quiet",
                                   "--sweep", "loop.max_identical=2,5", "--out", str(tmp_path)],
                             catch_exceptions=False, env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "sweep of loop.max_identical" in res.output
    assert "automatic passes" in res.output and "tool calls" in res.output and "cost (USD)" in res.output
