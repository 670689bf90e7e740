"""Property-based: whatever text the case, results, trace and review loaders are
given, they return a value or raise the documented error (CaseFileError /
UsageError, naming the file) and nothing else."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.errors import UsageError
from tether.evals.loader import load_case_text
from tether.evals.results import Results
from tether.events import Trajectory
from tether.store.export import read_trace

# 20 random examples a run (new ones each run); tests/hostile/test_fuzz.py fuzzes the same loaders under -m slow
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Every character UTF-8 can encode (all but the surrogates), as st.text()'s default; named by category because the
# default finds them by encoding each of the 1.1 M code points once per fresh .hypothesis folder (~2 s CPU a clone).
CHARS = st.characters(exclude_categories=["Cs"])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(CHARS, max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(CHARS, max_size=8), kids, max_size=4),
    max_leaves=30)
keys = st.sampled_from(["id", "title", "dimension", "input", "criteria", "tools", "version", "max_steps", "format",
                        "runs", "suite", "type", "seq", "run_id", "trials", "verdict", "message", "now"])
docs = st.dictionaries(keys, json_values, max_size=8)
yamlish = st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"#\n \t0123456789.,?%@`\x00\ufeff")), max_size=200)


def _only_documented(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except UsageError as exc:                     # CaseFileError is one
        assert "<input>" in str(exc) or not getattr(exc, "problems", None), str(exc)


@SETTINGS
@given(st.one_of(yamlish, docs.map(json.dumps), st.text(CHARS, max_size=300)))
def test_case_loader(text):
    _only_documented(load_case_text, text, "<input>")


@SETTINGS
@given(st.one_of(docs.map(lambda d: json.dumps({"format": "tether.results", "version": 2, **d})),
                 docs.map(json.dumps), st.text(CHARS, max_size=300)))
def test_results_loader(text):
    _only_documented(Results.parse, text, path="<input>")


@SETTINGS
@given(st.lists(st.one_of(docs.map(json.dumps), st.text(CHARS, max_size=80)), max_size=6).map("\n".join))
def test_trace_loaders(text):
    _only_documented(Trajectory.from_jsonl, text, path="<input>")
    _only_documented(read_trace, text, path="<input>")


@SETTINGS
@given(st.one_of(yamlish, docs.map(lambda d: json.dumps({"format": "tether.review", "version": 1, **d}))))
def test_review_loader(tmp_path_factory, text):
    from tether.evals.review import read_review

    path = tmp_path_factory.mktemp("review") / "<input>"
    path.write_text(text, encoding="utf-8")
    try:
        read_review(path)
    except UsageError as exc:
        assert "<input>" in str(exc), str(exc)
