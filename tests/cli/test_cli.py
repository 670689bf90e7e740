"""The CLI, run as a user would (typer's runner, real files)."""

import json
from pathlib import Path

from typer.testing import CliRunner

from tether.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_help_carries_examples():
    for args in (["--help"], ["eval", "--help"], ["case", "--help"], ["case", "validate", "--help"],
                 ["case", "list", "--help"], ["case", "show", "--help"], ["case", "schema", "--help"],
                 ["case", "new", "--help"], ["case", "tools", "--help"], ["case", "from-trace", "--help"],
                 ["runs", "--help"], ["runs", "list", "--help"], ["runs", "show", "--help"], ["runs", "export", "--help"],
                 ["runs", "import", "--help"], ["guard-check", "--help"]):
        out = run(*args)
        assert out.exit_code == 0
        assert "Example" in out.output, args


def test_case_list_and_show():
    out = run("case", "list")
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert out.exit_code == 0 and len(rows) == 17 and all(len(r) == 6 for r in rows)   # piped: a header, one line per case
    assert rows[0][0] == "id" and rows[1][:3] == ["C4-AR-01", "AR", "medium"]
    show = run("case", "show", "C4-DR-01")
    assert show.exit_code == 0 and "就不说" in show.output
    assert run("case", "show", "NOPE").exit_code == 2


def test_case_show_round_trips_through_validate(tmp_path):
    for case_id in ("C4-LD-01", "c4-ar-03", "C4-LD-04"):          # ids match case-insensitively
        show = run("case", "show", case_id)
        assert show.exit_code == 0
        path = tmp_path / f"{case_id}.yaml"
        path.write_text(show.output, encoding="utf-8")
        source = next(p for p in (Path(__file__).parents[2] / "src/tether/c4/cases").glob("*.yaml")
                      if p.stem.lower() == case_id.lower())
        assert show.output == source.read_text(encoding="utf-8")    # as is: no wrapping, no extra lines
        ok = run("case", "validate", str(path))
        assert ok.exit_code == 0 and ok.output.startswith(f"ok {path}")


def test_a_mistyped_case_id_gets_a_suggestion():
    for args in (("case", "show", "C4-LD-1"), ("run", "c4-ld-1", "--model", "policy:steady")):
        out = run(*args)
        assert out.exit_code == 2 and "did you mean C4-LD-01?" in out.output, args
        assert "Traceback" not in out.output


def test_case_new_writes_a_case_that_validates_and_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    new = run("case", "new", "my-case")
    assert new.exit_code == 0 and (tmp_path / "my-case.yaml").is_file()
    assert run("case", "new", "my-case").exit_code == 2                  # never overwrites by accident
    assert run("case", "validate", "my-case.yaml").exit_code == 0
    res = run("eval", "my-case.yaml", "--model", "policy:steady", "--json", "r.json", "-q")
    assert res.exit_code == 0, res.output
    [case] = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["runs"][0]["cases"]
    assert case["case_id"] == "my-case" and case["trials"][0]["status"] == "completed"


def test_wrong_kind_files_are_named_in_one_line(tmp_path):
    results = tmp_path / "results.json"
    results.write_text('{"format": "tether.results", "version": 1, "suite": "c4", "runs": []}', encoding="utf-8")
    out = run("case", "validate", str(results))
    assert out.exit_code == 1
    assert out.output.splitlines()[0] == (f"error {results}:1: this is a results document (written by tether eval "
                                          "--json), not a case file")


def test_case_tools_lists_arguments():
    out = run("case", "tools", "--world", "c4")
    assert out.exit_code == 0 and out.output.startswith("world c4: 18 tools")
    assert "    departure_city (string, required): " in out.output
    assert run("case", "tools", "--world", "nope").exit_code == 2


def test_case_validate_reports_file_line_field(tmp_path):
    good = run("case", "validate", "src/tether/c4/cases")
    assert good.exit_code == 0 and good.output.count("ok ") == 16
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: X\ntitle: t\ndimension: LD\ninput:\n  message: hi\nmax_steps: lots\ncriteria: []\n",
                   encoding="utf-8")
    out = run("case", "validate", str(bad))
    assert out.exit_code == 1
    assert f"{bad}:6:12 [max_steps]: expected a whole number (got 'lots')" in out.output
    assert f"{bad}:7:11 [criteria]: a case needs at least one criterion" in out.output


def test_case_schema_is_json():
    out = run("case", "schema")
    schema = json.loads(out.output)
    assert "criteria" in schema["properties"]


def test_unknown_model_is_a_clean_error(tmp_path):
    out = run("eval", "c4", "--model", "nope:x", "--out", str(tmp_path))
    assert out.exit_code == 2 and "unknown model spec" in out.output


def test_a_non_utf8_output_encoding_is_no_internal_error(tmp_path):
    """PYTHONIOENCODING=ascii (or a Latin-1 locale): printing a C4 run was an internal error (70)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    db = str(tmp_path / "t.db")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "PYTHONIOENCODING": "ascii",
           "COLUMNS": "200"}
    env.pop("TETHER_DEBUG", None)

    def tether(*argv):
        proc = subprocess.run([sys.executable, "-m", "tether.cli", *argv], env=env, capture_output=True, timeout=120,
                              cwd=tmp_path, stdin=subprocess.DEVNULL)
        return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace")

    code, out, err = tether("run", "C4-LD-01", "--run-id", "zh", "--store", db)
    assert code in (0, 1, 3), err
    code, out, err = tether("runs", "show", "zh", "--store", db)
    assert code == 0, err
    assert "查一下" in out and "internal error" not in err          # a pipe gets UTF-8 whatever the locale says
