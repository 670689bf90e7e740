"""tether store: a hostile argument is a usage error (exit 2) naming it, never an internal error (70)."""

from __future__ import annotations

from typer.testing import CliRunner

from tether.cli import app


def test_prune_with_an_empty_older_than_is_a_usage_error(tmp_path):
    res = CliRunner().invoke(app, ["store", "prune", "--older-than", "", "--store", str(tmp_path / "t.db")])
    assert res.exit_code == 2, res.output
    assert "--older-than ''" in res.output and "internal error" not in res.output


def test_upkeep_of_a_directory_says_it_is_a_directory(tmp_path):
    """`tether store prune | vacuum --store DIR` named a directory "no such file"."""
    for args in (("prune", "--older-than", "1d"), ("vacuum",)):
        res = CliRunner().invoke(app, ["store", *args, "--store", str(tmp_path)])
        assert res.exit_code == 2 and "is a directory; give the store's file" in res.output, res.output
