"""The README's flows, end to end, exactly as written there.

* the approval flow (section "Durable runs"): its commands, run in order in a
  scratch folder (in-process, through the CLI app), pause, approve with edited arguments, wait on the same approval
  after a resume, and complete;
* the pytest snippet (section "Testing your agent"): in a fresh project with
  the README's ``pyproject.toml`` and test file, ``pytest`` records, ``CI=1
  pytest`` replays, a changed scripted amount makes ``CI=1 pytest`` fail
  naming the step, and ``pytest --tether-record-mode=all`` records it again.
  (tests/test_docs.py leaves these two sections' commands to this file.) The default test reuses this interpreter (tether's plugin and
  pytest-asyncio only, as a fresh project has); ``-m slow`` does it in a new venv.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("_docs_blocks", Path(__file__).with_name("test_docs.py"))
_docs = sys.modules.setdefault("_docs_blocks", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_docs)             # the docs test's block reader and scratch folder, shared
ROOT, Block, blocks, commands, scratch_env = _docs.ROOT, _docs.Block, _docs.blocks, _docs.commands, _docs.scratch_env
tether_in_process = _docs.tether_in_process

README = "README.md"


def _section(title: str) -> list[Block]:
    text = (ROOT / README).read_text(encoding="utf-8")
    start = text.index(title)
    end = text.index("\n## ", start + 1)
    first, last = text.count("\n", 0, start) + 1, text.count("\n", 0, end) + 1
    return [b for b in blocks(README) if first <= b.line <= last]


def _sh(command: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


# -- approvals -------------------------------------------------------------------------------------------------

def test_the_approval_flow_runs_as_the_readme_shows(tmp_path):
    [block] = [b for b in _section("## Durable runs") if b.lang == "bash"]
    steps = commands(block)
    expected = ["tether run C4-PA-02 --approve 'zhihu_*' --run-id shoes", "tether runs list",
                "tether approve shoes --edit '{\"query\": \"跑鞋 足弓支撑\"}'", "tether resume shoes",
                "tether approve shoes --no-resume", "tether resume shoes", "tether runs show shoes"]
    assert [cmd for cmd, _, _ in steps][:len(expected)] == expected, "the README's approval commands changed"
    env = scratch_env(tmp_path)
    outs = []
    for cmd, codes, written in steps:          # plain tether commands: through the CLI app, as tests/cli do
        code, output, _ = tether_in_process(cmd, tmp_path, env)
        assert code in codes, f"{written}\n{output}"
        outs.append(output)
    run, listed, edited, resumed, approved, finished, shown = outs[:7]
    first = re.search(r"awaiting approval (ap-\w+): zhihu_search_questions", run)
    assert first and "decide with: tether approve shoes" in run
    assert "shoes" in listed and "1 approval" in listed
    assert "跑鞋 足弓支撑" in edited                                          # the search ran with the edit
    second = re.search(r"awaiting approval (ap-\w+): zhihu_get_answers", edited)
    assert second and second.group(1) != first.group(1)
    # a resumed run waits on the approval it already asked for: no second request for the same call
    assert re.findall(r"awaiting approval (ap-\w+)", resumed)[-1] == second.group(1)
    assert f"{second.group(1)}: approved" in approved
    assert "status completed" in finished
    assert set(re.findall(r"ap-[0-9a-f]{10}", shown)) == {first.group(1), second.group(1)}   # two, no duplicate
    from tether.store import SQLiteStore

    approvals = SQLiteStore(env["TETHER_STORE"]).approvals("shoes")
    assert sorted(a["status"] for a in approvals) == ["consumed", "consumed"]       # none left pending


# -- the pytest snippet ----------------------------------------------------------------------------------------

def _project(folder: Path) -> Path:
    files = {b.arg: b.body for b in _section("## Testing your agent") if b.marker == "file"}
    assert set(files) == {"pyproject.toml", "tests/test_refund.py"}, files
    for name, body in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(body, encoding="utf-8")
    return folder


def _flow(project: Path, pytest_cmd: str, env: dict[str, str]) -> list[str]:
    """pytest records, CI=1 pytest replays, a changed amount fails naming the step, and is re-recorded."""
    [block] = [b for b in _section("## Testing your agent") if b.lang == "bash"]
    assert [cmd for cmd, _, _ in commands(block)] == ["pytest", "CI=1 pytest", "pytest --tether-record-mode=all"], \
        "the README's pytest commands changed"
    env = {k: v for k, v in env.items() if k != "CI"}
    record = _sh(pytest_cmd, project, env)
    assert record.returncode == 0, record.stdout + record.stderr
    assert (project / "tests" / "cassettes" / "test_refund" / "test_refund.json").is_file()
    replay = _sh(f"CI=1 {pytest_cmd}", project, env)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    test = project / "tests" / "test_refund.py"
    text = test.read_text(encoding="utf-8")
    scripted = '"amount": 19900}),'
    assert text.count(scripted) == 1
    test.write_text(text.replace(scripted, '"amount": 199}),'), encoding="utf-8")
    edited = _sh(f"CI=1 {pytest_cmd}", project, env)
    assert edited.returncode == 1, edited.stdout + edited.stderr
    assert "ReplayMismatch.ToolArguments at step 2: create_refund" in edited.stdout
    assert "amount: expected 19900, actual 199" in edited.stdout
    assert "site-packages/tether" not in edited.stdout and "src/tether/" not in edited.stdout, edited.stdout
    cassette = project / "tests" / "cassettes" / "test_refund" / "test_refund.json"
    intended = test.read_text(encoding="utf-8")
    assert intended.count('"amount": 19900}') == 1                # the assertion: the change was intended after all
    test.write_text(intended.replace('"amount": 19900}', '"amount": 199}'), encoding="utf-8")
    rerecord = _sh(f"{pytest_cmd} --tether-record-mode=all", project, env)
    assert rerecord.returncode == 0, rerecord.stdout + rerecord.stderr
    assert '"amount": 199' in cassette.read_text(encoding="utf-8").replace('"amount":199', '"amount": 199')
    return [record.stdout.strip().splitlines()[-1], replay.stdout.strip().splitlines()[-1],
            next(x for x in edited.stdout.splitlines() if x.startswith("FAILED"))]


@pytest.mark.slow      # four pytest processes (~4 s); by default tests/replay/test_pytest_plugin.py runs the same
def test_the_pytest_snippet_records_replays_and_names_the_step(tmp_path):   # record, CI replay, named mismatch
    project = _project(tmp_path)
    env = scratch_env(tmp_path)             # PYTEST_PLUGINS: tether's plugin and pytest-asyncio, nothing else
    print("\n".join(_flow(project, "pytest -q -p no:cacheprovider -W error::DeprecationWarning", env)))


@pytest.mark.slow
def test_the_pytest_snippet_in_a_new_venv(tmp_path):
    """`python -m venv`, `pip install <clone> pytest pytest-asyncio` (the README's line), nothing else."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", str(ROOT), "pytest", "pytest-asyncio"],
                             capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout + install.stderr
    project = _project(tmp_path / "project")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHONPATH", "TETHER_", "CI"))}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    env["TETHER_STORE"] = str(tmp_path / "store.db")
    print("\n".join(_flow(project, "pytest -q", env)))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-s"]))
