"""docs/agents.md's hand-written agent, as a user copies it: it asks the user through
the session, so wrapping policy:steady in it keeps steady's verdicts (C4-DR-03, the
impatient user, is the case a wrapper that turns questions into replies fails)."""

import re
from pathlib import Path

from typer.testing import CliRunner

from tether.cli import app
from tether.evals.results import Results

DOC = Path(__file__).resolve().parents[1] / "docs" / "agents.md"


def test_the_template_agent_keeps_steady_s_verdicts(tmp_path, monkeypatch):
    body = re.search(r"<!-- docs-test: file my_agents.py -->\n```python\n(.*?)```", DOC.read_text(encoding="utf-8"),
                     re.S).group(1)
    (tmp_path / "my_agents.py").write_text(body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    common = ["--case", "C4-DR-*", "--store", str(tmp_path / "t.db")]
    wrapped = runner.invoke(app, ["eval", "c4", "--agent", "my_agents.py:build", *common, "--json", "a.json"])
    alone = runner.invoke(app, ["eval", "c4", "--model", "policy:steady", *common, "--json", "b.json"])
    assert wrapped.exit_code == 0 and alone.exit_code == 0, wrapped.output + alone.output
    a, b = Results.load(tmp_path / "a.json").runs[0], Results.load(tmp_path / "b.json").runs[0]
    assert {c.case_id: c.auto_verdict for c in a.cases} == {c.case_id: c.auto_verdict for c in b.cases}
    assert a.case("C4-DR-03").auto_verdict == "pass"
