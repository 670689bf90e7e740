"""The labelled loop corpus through the reference stack, offline (what
`tether guard-check` sees): the bar issue 13 sets. No timing here."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "data" / "loop_corpus"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from corpus import items  # noqa: E402
from guard_quality import measure  # noqa: E402

from tether.guards.stacks import guard_stack  # noqa: E402


@pytest.fixture(scope="module")
def corpus():
    return items()


def test_corpus_is_big_enough_and_labelled(corpus):
    assert len(corpus) >= 60
    assert {i.label for i in corpus} == {"loop", "ok"}
    assert all(i.trip_by for i in corpus if i.label == "loop")
    assert all(i.source.startswith("https://github.com/") for i in corpus)
    assert len({i.id for i in corpus}) == len(corpus)


def test_reference_stack_meets_the_bar(corpus):
    m = measure(corpus, guard_stack("on"))
    assert m["caught"] / m["loops"] >= 0.95, m["missed"]
    assert len(m["alarms"]) / m["oks"] <= 0.02, m["alarms"]
    assert m["stops"] == [], m["stops"]
