"""The fuzz corpus (issue 19): atheris over every loader, in a bounded subprocess.

hypothesis covers the loaders in the default suite (test_loaders_property.py);
this is the coverage-guided half, slow, so under ``-m slow``. Skips where
atheris is not installed (it ships wheels for Linux x86-64)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


@pytest.mark.slow
def test_atheris_finds_no_crash_in_the_loaders(tmp_path):
    pytest.importorskip("atheris")
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    # one seed per loader: a valid-looking start for each (the first byte picks the loader)
    for i, text in enumerate(["id: x\ntitle: t\n", "id: C4-x\nversion: 1\n", "format: tether.review\nversion: 1\n",
                              '{"type": "run_started", "seq": 0, "run_id": "r", "model": "m"}\n',
                              '{"type": "run_started", "seq": 0, "run_id": "r", "model": "m"}\n',
                              '{"format": "tether.results", "version": 2, "runs": []}',
                              '{"format": "tether.cassette", "version": 2}',
                              '{"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}']):
        (seeds / f"seed{i}").write_bytes(bytes([i]) + text.encode("utf-8"))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run([sys.executable, str(HERE / "fuzz_loaders.py"), "-runs=3000", "-max_len=2048",
                           "-rss_limit_mb=1536", "-timeout=20", f"-artifact_prefix={tmp_path}/", str(seeds)],
                          cwd=tmp_path, env=env, capture_output=True, timeout=900)
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode == 0, out[-4000:]
    assert "Done" in out, out[-2000:]
