"""The pytest plugin in a fresh project: pytest runs in a subprocess on a tiny
test suite that uses the fixtures, markers and option."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import tether
from tether.replay import Cassette, scan_for_secrets
from tether.store import SQLiteStore

SRC = Path(tether.__file__).resolve().parents[1]

PROJECT_TEST = '''
import os

import pytest

from tether import Decision, ToolSet, tool
from tether.models import model_requests_allowed


@tool(description="查询订单")
def get_order(order_id: str) -> dict:
    return {"order_id": order_id, "status": "paid", "total_amount": 19900}


@tool(description="检查能否退款")
def check_refund(order_id: str) -> dict:
    return {"refundable": True}


@tool(description="提交退款（分）", side_effect=True)
def create_refund(order_id: str, amount: int) -> dict:
    return {"refund_id": "R900", "status": "submitted",
            "echo_headers": {"Authorization": "Bearer sk-live-0123456789abcdefghij"}}


TOOLS = ToolSet([get_order, check_refund, create_refund])


def decisions(amount=19900):
    return [Decision.call("get_order", {"order_id": "A100"}), Decision.call("check_refund", {"order_id": "A100"}),
            Decision.call("create_refund", {"order_id": "A100", "amount": amount}),
            Decision.final("退款已提交，退款单号为 R900。")]


async def test_refund(tether_cassette, scripted_model):
    model = scripted_model(decisions(int(os.environ.get("AMOUNT", "19900"))))
    live = True if os.environ.get("LIVE_MODEL") == "1" else None     # None: a scripted double answers, checked
    result = await tether_cassette.run(model, TOOLS, message="请帮我退掉订单 A100", live_model=live)
    assert result.status == "completed" and "R900" in result.reply


@pytest.mark.tether_cassette(name="shared/refund-b", mode="once")
async def test_named_cassette(tether_cassette, scripted_model):
    await tether_cassette.run(scripted_model(decisions()), TOOLS, message="退掉 A100")
    assert tether_cassette.path.as_posix().endswith("cassettes/shared/refund-b.json")


async def test_offline_by_default():
    assert not model_requests_allowed()


async def test_opt_in(allow_model_requests):
    assert model_requests_allowed()


@pytest.mark.tether_allow_model_requests
async def test_opt_in_by_marker():
    assert model_requests_allowed()


@pytest.mark.skipif(os.environ.get("LEFTOVER") != "1", reason="only when asked")
def test_leftover_decision(scripted_model):
    from tether import run_agent_sync
    model = scripted_model(decisions() + [Decision.final("never asked")], name="refund-script")
    run_agent_sync(model, TOOLS, message="退掉 A100")
'''


def make_project(root: Path) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text(textwrap.dedent("""\
        [pytest]
        asyncio_mode = auto
        asyncio_default_fixture_loop_scope = function
        filterwarnings = error
        """), encoding="utf-8")
    (root / "tests" / "test_agent.py").write_text(PROJECT_TEST, encoding="utf-8")
    return root


def run_pytest(project: Path, *args: str, plugin: str = "tether.testing.pytest_plugin",
               **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("CI", "PYTEST_ADDOPTS", "AMOUNT", "LIVE_MODEL", "TETHER_STORE")}
    environ.update(PYTHONPATH=str(SRC), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    environ.update(env)
    cmd = [sys.executable, "-m", "pytest", "-p", "pytest_asyncio.plugin", "-p", plugin, "-p", "no:cacheprovider",
           "-q", "-rA", *args]
    return subprocess.run(cmd, cwd=project, env=environ, capture_output=True, text=True, timeout=300)


def test_the_plugin_records_then_replays_in_a_fresh_project(tmp_path, remember_cassettes):
    project = make_project(tmp_path / "proj")
    cassette = project / "tests" / "cassettes" / "test_agent" / "test_refund.json"

    first = run_pytest(project)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "5 passed, 1 skipped" in first.stdout
    assert cassette.exists() and (project / "tests" / "cassettes" / "shared" / "refund-b.json").exists()
    remember_cassettes(project / "tests" / "cassettes")
    assert scan_for_secrets(project / "tests" / "cassettes") == []
    recorded = cassette.read_text(encoding="utf-8")

    # CI: replay only; the cassettes exist, so everything passes and nothing is rewritten
    second = run_pytest(project, CI="true")
    assert second.returncode == 0, second.stdout + second.stderr
    assert cassette.read_text(encoding="utf-8") == recorded

    # a live model that sends 199 against the recorded tools: a typed mismatch naming step 3
    third = run_pytest(project, "-k", "test_refund", AMOUNT="199", LIVE_MODEL="1")
    assert third.returncode == 1
    assert "ReplayMismatch.ToolArguments at step 3: create_refund" in third.stdout
    assert "amount: expected 19900, actual 199" in third.stdout

    # every run went to the store under the rootdir, each with its own id
    store = SQLiteStore(project / ".tether" / "tether.db")
    runs = store.list_runs(kind="cassette")
    assert len(runs) == 5 and len({r["run_id"] for r in runs}) == 5     # 2 recorded, 2 replayed, 1 departed
    assert sorted(r["status"] for r in runs) == ["completed"] * 4 + ["error"]
    failed = next(r for r in runs if r["status"] == "error")
    assert failed["error_kind"] == "aborted" and failed["run_id"] in third.stdout   # the report names the run
    recorded_id = Cassette.load(cassette).run_id
    assert recorded_id in {r["run_id"] for r in runs}
    assert [e["type"] for e in store.events(recorded_id)] == [
        e.type for e in Cassette.load(cassette).events]                 # the cassette holds the stored run


@pytest.mark.slow        # the default suite's mismatch on CI: tests/test_readme_flows.py (and the live one above)
def test_a_test_that_now_scripts_another_decision_fails_naming_the_step(tmp_path, remember_cassettes):
    project = make_project(tmp_path / "proj")
    first = run_pytest(project, "-k", "test_refund")
    assert first.returncode == 0, first.stdout + first.stderr
    remember_cassettes(project / "tests" / "cassettes")

    changed = run_pytest(project, "-k", "test_refund", AMOUNT="199", CI="true",
                         TETHER_STORE=str(tmp_path / "elsewhere.db"))
    assert changed.returncode == 1
    assert "ReplayMismatch.ToolArguments at step 3: create_refund" in changed.stdout
    assert "amount: expected 19900, actual 199" in changed.stdout
    assert "tether runs" in changed.stdout and "elsewhere.db" in changed.stdout
    [run] = SQLiteStore(tmp_path / "elsewhere.db").list_runs()          # $TETHER_STORE wins
    assert (run["kind"], run["status"], run["error_kind"]) == ("cassette", "error", "aborted")


def test_missing_cassette_on_ci_fails_naming_the_file(tmp_path):
    project = make_project(tmp_path / "proj")
    result = run_pytest(project, "-k", "test_refund", CI="true")
    assert result.returncode == 1
    assert "CassetteNotFound" in result.stdout
    assert "tests/cassettes/test_agent/test_refund.json" in result.stdout.replace(os.sep, "/")
    assert "record mode 'none'" in result.stdout


@pytest.mark.slow        # two more pytest processes; the README flow re-records with --tether-record-mode=all
def test_the_command_line_option_overrides_the_marker(tmp_path, remember_cassettes):
    project = make_project(tmp_path / "proj")
    result = run_pytest(project, "-k", "test_named_cassette", "--tether-record-mode=none")
    assert result.returncode == 1 and "refund-b.json" in result.stdout
    ok = run_pytest(project, "-k", "test_named_cassette", "--tether-record-mode=all")
    assert ok.returncode == 0, ok.stdout
    remember_cassettes(project / "tests" / "cassettes")
    assert Cassette.load(project / "tests" / "cassettes" / "shared" / "refund-b.json").expected.status == "completed"


def test_a_leftover_scripted_decision_fails_at_teardown_naming_the_step(tmp_path):
    project = make_project(tmp_path / "proj")
    result = run_pytest(project, "-k", "test_leftover", LEFTOVER="1")
    assert result.returncode == 1
    assert "ERROR tests/test_agent.py::test_leftover_decision" in result.stdout
    assert "refund-script: 1 scripted decision(s) left unused" in result.stdout
    assert "first unused: step 5" in result.stdout


def entry_point_site(tmp_path: Path) -> Path | None:
    """A path on which ``importlib.metadata`` finds tether's pytest11 entry point.

    Installed packages need nothing (None). Otherwise a minimal ``dist-info``
    is written from pyproject.toml's ``[project.entry-points.pytest11]``, which
    is exactly what pytest reads after ``pip install``.
    """
    names = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    if names.get("tether") == "tether.testing.pytest_plugin":
        return None
    pyproject = SRC.parent / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("tether is not installed and no pyproject.toml is at hand to read its entry point from")
    declared = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get(
        "entry-points", {}).get("pytest11", {})
    if declared.get("tether") != "tether.testing.pytest_plugin":
        pytest.skip("pyproject.toml declares no pytest11 entry point `tether = \"tether.testing.pytest_plugin\"` yet")
    dist = tmp_path / "site" / "tether-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tether\nVersion: 0.1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[pytest11]\ntether = tether.testing.pytest_plugin\n", encoding="utf-8")
    return dist.parent


@pytest.mark.slow        # two more pytest processes; tests/test_readme_flows.py's venv flow autoloads the plugin too
def test_the_entry_point_form(tmp_path, remember_cassettes):
    site = entry_point_site(tmp_path)
    path = os.pathsep.join(str(p) for p in (SRC, site) if p is not None)
    project = make_project(tmp_path / "proj")
    explicit = run_pytest(project, plugin="tether", PYTHONPATH=path)         # -p tether, autoload off
    assert explicit.returncode == 0, explicit.stdout + explicit.stderr
    assert "5 passed, 1 skipped" in explicit.stdout
    remember_cassettes(project / "tests" / "cassettes")

    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    environ["PYTHONPATH"] = path
    auto = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project,
                          env={**environ, "CI": "true"}, capture_output=True, text=True, timeout=300)
    assert auto.returncode == 0, auto.stdout + auto.stderr                   # autoloaded, replaying on CI
