"""`tether case list` reads case files quickly; what it shows matches the checked load,
and a file that does not read as a case still gets the checked load's errors."""

import pytest
from typer.testing import CliRunner

from tether.cli import app
from tether.errors import CaseFileError
from tether.evals import load_suite
from tether.evals.case_index import summaries

runner = CliRunner()


def test_the_quick_listing_matches_the_checked_load():
    quick = summaries("c4")
    full = load_suite("c4")
    assert [(s.id, s.dimension, s.difficulty, s.title, list(s.tools), s.auto, s.judge) for s in quick] == \
        [(c.id, c.dimension, c.difficulty, c.title, c.tools, len(c.auto_criteria), len(c.judge_criteria))
         for c in full]


def test_a_file_that_is_not_a_case_gets_the_checked_errors(tmp_path):
    (tmp_path / "ok.yaml").write_text(runner.invoke(app, ["case", "show", "C4-LD-01"]).output, encoding="utf-8")
    (tmp_path / "bad.yaml").write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(CaseFileError, match="must be a YAML mapping"):
        summaries(tmp_path)
    res = runner.invoke(app, ["case", "list", str(tmp_path)])
    assert res.exit_code != 0 and "bad.yaml" in res.output


def test_case_list_does_not_import_the_models(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src"
    code = ("import sys; from tether.cli import main; sys.argv = ['tether', 'case', 'list'];\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('LOADED', 'tether.evals.case' in sys.modules, 'tether.evals.runner' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}).stdout
    assert "C4-LD-01" in out and "LOADED False False" in out
