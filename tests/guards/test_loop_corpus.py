"""The labelled loop corpora through the reference stack, offline (what
`tether guard-check` sees): the floors of issue 25, so a regression fails CI.
No timing here.

* the corpus written blind (tests/data/loop_corpus/**/tuning and **/heldout,
  JSON items): per half, recall >= 95% by trip_by, hints on ok <= 2%, no block
  and no stop on ok. The held-out half does not meet it yet: that test is an
  expected failure (strict: it fails once the floor is met, to drop the mark)
  and the held-out numbers are pinned at their measured level;
* the authors' corpus (corpus.py, written by the rule authors): recall >= 95%,
  no block and no stop on ok; its hints (polls without any wait, which the
  authors' items make) are pinned so more of them fail.
"""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from guard_quality import (  # noqa: E402
    authors_items,
    corpus_files,
    default_folders,
    load_corpus,
    load_item,
    measure,
    passes,
)

from tether.errors import CaseFileError  # noqa: E402
from tether.guards.stacks import guard_stack  # noqa: E402

FOLDERS = default_folders()


@pytest.fixture(scope="module")
def authors():
    return authors_items()


def test_authors_corpus_is_labelled(authors):
    assert len(authors) >= 60
    assert {i.label for i in authors} == {"loop", "ok"}
    assert all(i.trip_by for i in authors if i.label == "loop")
    assert all(i.source.startswith("https://github.com/") for i in authors)
    assert len({i.id for i in authors}) == len(authors)


def test_authors_corpus_keeps_recall_and_never_stops_legitimate_work(authors):
    m = measure(authors, guard_stack("on"))
    assert m["caught"] / m["loops"] >= 0.95, m["missed"]
    assert m["blocks"] == [] and m["stops"] == [], (m["blocks"], m["stops"])
    assert len(m["hints"]) <= 4, m["hints"]


def _half(half):
    if not corpus_files(FOLDERS, half):
        pytest.skip(f"no {half} items under tests/data/loop_corpus")
    return measure(load_corpus(FOLDERS, half), guard_stack("on"))


def _assert_floor(m):
    assert m["blocks"] == [] and m["stops"] == [], (m["blocks"], m["stops"])
    assert len(m["hints"]) / m["oks"] <= 0.02, m["hints"]
    assert m["caught"] / m["loops"] >= 0.95, m["missed"]
    assert passes(m)


def test_blind_tuning_half_meets_the_floor():
    _assert_floor(_half("tuning"))


@pytest.mark.xfail(strict=True, reason="issue 25: the held-out floors are not met yet (sealed run at a31dc98: "
                                       "recall 54/65 = 83.1%, hints on ok 6/63, stops on ok 4); remove this mark "
                                       "when they are")
def test_blind_heldout_half_meets_the_floor():
    _assert_floor(_half("heldout"))


def test_blind_heldout_half_does_not_get_worse():
    """Pinned at the measured level until the floor is met: no regression goes unnoticed."""
    m = _half("heldout")
    assert m["blocks"] == [], m["blocks"]
    assert len(m["stops"]) <= 4 and len(m["hints"]) <= 6, (m["stops"], m["hints"])
    assert m["caught"] / m["loops"] >= 0.83, m["missed"]


def test_an_item_that_is_not_an_item_names_its_file(tmp_path):
    bad = tmp_path / "tuning" / "x.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"id": "x", "label": "loop", "actions": [{"tool": "t", "args": {}}]}), encoding="utf-8")
    with pytest.raises(CaseFileError, match=r"x\.json.*trip_by"):
        load_item(bad)
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(CaseFileError, match="not JSON"):
        load_item(bad)


def test_a_half_is_read_without_opening_the_other(tmp_path):
    for half in ("tuning", "heldout"):
        (tmp_path / "blind" / half).mkdir(parents=True)
    item = {"id": "a", "family": "f", "label": "ok", "task": "t", "source": {"url": "https://example.org"},
            "actions": [{"tool": "get", "args": {"id": 1}, "result": {"ok": True, "data": {"x": 1}}}]}
    (tmp_path / "blind" / "tuning" / "a.json").write_text(json.dumps(item), encoding="utf-8")
    (tmp_path / "blind" / "heldout" / "b.json").write_text("{broken", encoding="utf-8")
    items = load_corpus([tmp_path], "tuning")          # the broken held-out file is never opened
    assert [i.id for i in items] == ["a"] and items[0].half == "tuning"
    m = measure(items, guard_stack("on"))
    assert (m["oks"], m["hints"], m["families"]["f"]["oks"]) == (1, [], 1)
