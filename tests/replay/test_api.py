"""The public names of tether.replay resolve, and mismatches import light."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tether
import tether.replay as replay


def test_every_public_name_resolves():
    for name in replay.__all__:
        assert getattr(replay, name) is not None, name
    assert replay.Cassette.__module__ == "tether.replay.cassette"


def test_importing_a_mismatch_does_not_load_the_players():
    code = ("import sys; from tether.replay import ToolArgumentsMismatch; "
            "assert 'tether.replay.session' not in sys.modules and 'tether.replay.player' not in sys.modules")
    env = {**os.environ, "PYTHONPATH": str(Path(tether.__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
