"""`--model mypkg.models:make` and `--model ./file.py:Class`: a user's own Model, no registration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tether.errors import UnknownModelSpec, UsageError
from tether.models import resolve_model

MODEL = '''
from tether import Decision, ModelResponse


class EchoModel:
    """Answers every request with a final answer naming the last user message."""

    name = "echo"

    async def request(self, request):
        return ModelResponse(decision=Decision.final("好的：" + request.last_user_text[:20]))


def make():
    return EchoModel()
'''


def _package(root: Path) -> None:
    pkg = root / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "models.py").write_text(MODEL, encoding="utf-8")


def test_module_factory_and_file_class(tmp_path, monkeypatch):
    _package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert resolve_model("mypkg.models:make").name == "echo"
    assert resolve_model(f"{tmp_path / 'mypkg' / 'models.py'}:EchoModel").name == "echo"


def test_clear_errors_for_bad_references(tmp_path, monkeypatch):
    _package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UsageError, match="has no attribute 'nope'"):
        resolve_model("mypkg.models:nope")
    with pytest.raises(UsageError, match="module 'nopkg' not found"):
        resolve_model("nopkg.models:make")
    with pytest.raises(UsageError, match="not a Model"):
        resolve_model("mypkg.models:MODEL_TEXT_DOES_NOT_EXIST".replace("MODEL_TEXT_DOES_NOT_EXIST", "__name__"))
    with pytest.raises(UnknownModelSpec):
        resolve_model("nonsense:foo")


def test_eval_loads_a_users_model_from_the_working_directory(tmp_path):
    _package(tmp_path)
    res = subprocess.run([sys.executable, "-m", "tether.cli", "eval", "c4", "--model", "mypkg.models:make",
                          "--case", "C4-LD-01", "--store", str(tmp_path / "t.db"), "--json", "r.json", "-q"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    [run] = doc["runs"]
    assert run["model"] == "mypkg.models:make"
    assert run["cases"][0]["trials"][0]["status"] == "completed"
    assert run["cases"][0]["trials"][0]["reply"].startswith("好的：")


def test_a_top_level_module_works_as_for_agents(tmp_path, monkeypatch):
    """`--model my_model:make` (a module in the current folder, no package) is taken, as
    `--agent my_agents:build` is; an unknown provider prefix is still an error naming the forms."""
    (tmp_path / "my_model.py").write_text(MODEL, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert resolve_model("my_model:make").name == "echo"
    with pytest.raises(UnknownModelSpec, match="module:factory"):
        resolve_model("no_such_provider_xyz:large")
