"""What a read command loads as a process: a listing of 100,000 runs takes ~10 ms in the store, so
what a user waits for is Python's start-up and imports. These pin the causes (a timing cannot, on a
shared machine); benchmarks/store_scale.py measures the processes ("as a process" rows)."""

import ast
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from tether.cli import app

# Never needed to read the store and print a listing: pydantic (Typer 0.2x coerces options through a
# pydantic TypeAdapter; tether.cli._params reads plain values without it), the event models, the eval
# runner and the judge (asyncio with them), the results model, markdown, jsonschema, and psycopg for a file.
_LISTING_NEVER = ("pydantic", "typer._adapters", "tether.events", "tether.messages", "tether.evals",
                  "tether.report.compare", "asyncio", "rich.markdown", "jsonschema", "psycopg", "yaml")
@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    db = str(tmp_path_factory.mktemp("startup") / "t.db")
    res = CliRunner().invoke(app, ["run", "C4-PA-02", "--run-id", "s1", "--store", db], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return db


def _loaded(args: list[str], never: tuple[str, ...]) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``tether ARGS`` in a fresh process (stdout a pipe), and which of ``never`` it imported."""
    probe = ("import sys\n"
             f"sys.argv = ['tether', *{args!r}]\n"
             "from tether.cli import main\n"
             "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
             f"sys.stderr.write('\\nLOADED ' + repr(sorted(m for m in {never!r} if m in sys.modules)))\n"
             "sys.exit(code)\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    loaded = proc.stderr.rpartition("LOADED ")[2].strip()
    return proc, ast.literal_eval(loaded) if loaded.startswith("[") else [f"(no probe output: {proc.stderr[-300:]})"]


@pytest.mark.parametrize("args", [
    ["runs", "list"],
    ["runs", "list", "--eval", "ev-20250101-*", "--limit", "20"],
    ["runs", "list", "--format", "json", "--kind", "run"],
    ["stats"],
    ["stats", "--since", "7d", "--format", "json"],
])
def test_a_listing_loads_no_models(store, args):
    proc, loaded = _loaded([*args, "--store", store], _LISTING_NEVER)
    assert proc.returncode == 0, proc.stderr
    assert loaded == [], f"tether {' '.join(args)} loaded {loaded}"


@pytest.mark.parametrize("messages", ["full", "new", "none"])
def test_runs_show_loads_no_models(store, messages):
    """runs show checks every event against the trace schema and prints records (tether.store.records)."""
    proc, loaded = _loaded(["runs", "show", "s1", "--messages", messages, "--store", store], _LISTING_NEVER)
    assert proc.returncode == 0, proc.stderr
    assert "run s1" in proc.stdout and "run_finished" in proc.stdout
    assert loaded == [], f"tether runs show loaded {loaded}"


@pytest.mark.parametrize("args, message", [
    (["runs", "list", "--limit", "0"], "greater than or equal to 1"),
    (["runs", "list", "--limit", "x"], "valid integer"),
    (["runs", "list", "--format", "nope"], "'nope' is not one of"),
])
def test_a_bad_value_still_gets_typers_own_message(store, args, message):
    """A value the plain reading does not take is handed to Typer's coercion: its message, exit 2."""
    res = CliRunner().invoke(app, [*args, "--store", store])
    assert res.exit_code == 2 and message in res.output, res.output


def test_plain_values_read_as_typer_reads_them(store):
    """The same document for --limit 3 and for ' 3' (which only Typer's own coercion takes)."""
    runner = CliRunner()
    plain = runner.invoke(app, ["runs", "list", "--limit", "3", "--format", "json", "--store", store])
    spaced = runner.invoke(app, ["runs", "list", "--limit", " 3", "--format", "json", "--store", store])
    assert plain.exit_code == 0 and spaced.exit_code == 0, spaced.output
    assert plain.stdout == spaced.stdout and '"kind": "runs"' in plain.stdout


def test_a_group_builds_only_the_subcommand_it_runs(store):
    """Typer reads every parameter of every subcommand to build a group: `tether runs list` builds `list`."""
    probe = ("import sys\n"
             f"sys.argv = ['tether', 'runs', 'list', '--store', {store!r}]\n"
             "import tether.cli as cli\n"
             "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
             "sys.stderr.write('\\nBUILT ' + repr(sorted(c.name for c in cli._BUILT['runs'].commands.built())))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert proc.stderr.rpartition("BUILT ")[2].strip() == "['list']", proc.stderr[-500:]


def test_a_groups_help_lists_every_subcommand():
    res = CliRunner().invoke(app, ["runs", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    for name in ("list", "evals", "approvals", "show", "export", "import", "export-otel"):
        assert f" {name} " in res.output, name
    near = CliRunner().invoke(app, ["runs", "lst"])
    assert near.exit_code == 2 and "list" in near.output
