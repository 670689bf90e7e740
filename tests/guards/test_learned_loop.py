"""The learned loop-scorer experiment (benchmarks/learned_loop.py, docs/learned-loop-scorer.md):
its features see what they claim to see and its threshold keeps the alarm budget (the
leave-one-writer-out run itself needs the bench extra: docs/learned-loop-scorer.md). No timing here."""

import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from learned_loop import pick_threshold  # noqa: E402
from loop_features import FEATURES, Action, Featurizer  # noqa: E402


def run(actions):
    fz = Featurizer()
    return [dict(zip(FEATURES, fz.step(a))) for a in actions]


def call(tool, args, data=None, ok=True, error=""):
    return Action("call", tool=tool, args=args, ok=ok, data=data, error=error,
                  error_type="" if ok else "tool_error")


def test_arguments_and_results_compare_after_canonicalisation():
    f = run([call("search", {"q": "ＡＢＣ  widgets!", "n": 5}, {"items": ["x", "y"]}),
             call("search", {"n": 5, "q": "abc widgets"}, {"items": ["y", "x"]})])
    assert f[0]["same_call"] == 0
    assert f[1]["same_call"] == math.log1p(1)                   # width, case, punctuation, key order
    assert f[1]["same_call_same_result"] == math.log1p(1)       # list order
    assert f[1]["novelty_word"] == 0 and f[0]["novelty_word"] == 1


def test_a_create_returning_a_fresh_id_is_the_same_result():
    f = run([call("create_ticket", {"title": "Login broken"}, {"id": "TCK-1041", "title": "Login broken"}),
             call("create_ticket", {"title": "Login broken"}, {"id": "TCK-1042", "title": "Login broken"})])
    assert f[1]["fresh_id_same_result"] == 1.0
    assert f[1]["same_call_same_result"] == 0                   # the raw results differ (the id)
    assert f[1]["same_call_stable_result"] == math.log1p(1)


def test_paging_past_the_end_and_changing_errors():
    f = run([call("list", {"page": 1}, {"items": ["a"], "has_more": False}),
             call("list", {"page": 2}, {"items": []}),
             call("list", {"page": 3}, {"items": []}),
             call("edit", {"x": 1}, ok=False, error="line 3: missing colon"),
             call("edit", {"x": 2}, ok=False, error="line 9: unknown name foo")])
    assert f[1]["page_arg_advanced"] == 1.0 and f[1]["paging_after_end"] > 0
    assert f[2]["paging_after_end"] > f[1]["paging_after_end"] and f[2]["empty_streak_tool"] > 0
    assert f[4]["error_streak"] == math.log1p(2) and f[4]["error_distinct_ratio"] == 1.0


def test_the_threshold_keeps_the_alarm_budget():
    oks = [i / 100 for i in range(100)]                          # 100 ok items: 2 may alarm
    thr = pick_threshold(oks, 0.02)
    assert sum(s >= thr for s in oks) == 2
    assert sum(s >= pick_threshold(oks[:49], 0.02) for s in oks[:49]) == 0
