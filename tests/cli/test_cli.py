"""The CLI, run as a user would (typer's runner, real files)."""

import json

from typer.testing import CliRunner

from tether.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_help_carries_examples():
    for args in (["--help"], ["eval", "--help"], ["case", "--help"], ["case", "validate", "--help"],
                 ["case", "list", "--help"], ["case", "show", "--help"], ["case", "schema", "--help"],
                 ["runs", "--help"], ["runs", "list", "--help"], ["runs", "show", "--help"], ["runs", "export", "--help"],
                 ["runs", "import", "--help"], ["guard-check", "--help"]):
        out = run(*args)
        assert out.exit_code == 0
        assert "Example" in out.output, args


def test_case_list_and_show():
    out = run("case", "list")
    assert out.exit_code == 0 and "C4-LD-01" in out.output and "12 cases" in out.output
    show = run("case", "show", "C4-DR-01")
    assert show.exit_code == 0 and "就不说" in show.output
    assert run("case", "show", "NOPE").exit_code == 2


def test_case_validate_reports_file_line_field(tmp_path):
    good = run("case", "validate", "src/tether/c4/cases")
    assert good.exit_code == 0 and good.output.count("ok ") == 12
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: X\ntitle: t\ndimension: LD\ninput:\n  message: hi\nmax_steps: lots\ncriteria: []\n",
                   encoding="utf-8")
    out = run("case", "validate", str(bad))
    assert out.exit_code == 1
    assert f"{bad}:6:12 [max_steps]" in out.output


def test_case_schema_is_json():
    out = run("case", "schema")
    schema = json.loads(out.output)
    assert "criteria" in schema["properties"]


def test_unknown_model_is_a_clean_error(tmp_path):
    out = run("eval", "c4", "--model", "nope:x", "--out", str(tmp_path))
    assert out.exit_code == 2 and "unknown model spec" in out.output
