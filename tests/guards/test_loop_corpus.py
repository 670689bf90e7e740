"""The labelled loop corpora through the reference stack, offline (what
`tether guard-check` sees): the floors of issue 25, so a regression fails CI.
No timing here.

* the tuning pool: every blind item under tests/data/loop_corpus/tuning (rounds
  1-6, all looked at or measured while rules were tuned) plus the authors'
  corpus: recall >= 95% by trip_by, hints on ok <= 2%, no block and no stop on
  ok; the blind items alone are pinned at their measured level;
* the held-out set (tests/data/loop_corpus/heldout, sealed; empty until round 5
  lands, and then re-pinned by the lead): the floor, and no worse than measured
  once recorded in HELDOUT_MEASURED; both skip while the folder holds no item;
  their failure messages carry counts only, never item ids;
* the authors' corpus (corpus.py): recall >= 95%, nothing on ok.
"""

import json
import sys
from functools import cache
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
    summarize,
)

from tether.errors import CaseFileError  # noqa: E402
from tether.guards.stacks import guard_stack  # noqa: E402

FOLDERS = default_folders()
SCRIPT = ROOT / "benchmarks" / "guard_quality.py"


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
    assert m["blocks"] == [] and m["stops"] == [] and m["hints"] == [], (m["blocks"], m["stops"], m["hints"])


def _half(half):
    if not corpus_files(FOLDERS, half):
        pytest.skip(f"no {half} items under tests/data/loop_corpus/{half} (sealed material goes there)")
    return _measured(half)


@cache
def _measured(half: str, with_authors: bool = False) -> dict:
    """One measurement per pool and module run (a fresh reference stack, the items read once), shared read-only
    by the tests that check different floors on it."""
    if half == "tuning" and not with_authors:       # the blind items of the pool's one run (not run twice)
        return summarize([o for o in _measured(half, with_authors=True)["outcomes"] if o.item.half != "authors"])
    items = load_corpus(FOLDERS, half) + (authors_items() if with_authors else [])
    return measure(items, guard_stack("on"))


def _assert_floor(m, sealed=False):
    """The floor; a sealed set's failure says how many, never which."""
    def names(ids):
        return len(ids) if sealed else ids
    assert m["blocks"] == [] and m["stops"] == [], (names(m["blocks"]), names(m["stops"]))
    assert len(m["hints"]) / m["oks"] <= 0.02, names(m["hints"])
    assert m["caught"] / m["loops"] >= 0.95, names(m["missed"])
    assert passes(m)


@pytest.mark.xfail(reason="rounds 1-7 in the tuning pool, after the seventh rules pass (i25-rules7, 2026-12-02): "
                          "the pool with the authors' corpus is 642/682 = 94.1%, hints on 16/635 = 2.5%, 0 blocks, 0 "
                          "stops on ok (rules of i25-rules6 on the same pool: 619/682, 21/635, 0, 2): recall and hints "
                          "miss the floor", strict=True)
def test_tuning_pool_meets_the_floor():
    _assert_floor(_measured("tuning", with_authors=True))


def test_blind_tuning_items_do_not_get_worse():
    """Pinned at the measured level: 603/642 caught; hints on 16/590 ok items (2 of them the budget's 80% notice
    on batches of 21 and 23 calls); no block and no stop on an ok item (2026-12-02, seventh rules pass, i25-rules7,
    with round 7 in the pool; the rules of i25-rules6 on the same pool: 580/642, 21 hints, 2 stops)."""
    m = _half("tuning")
    assert m["blocks"] == [] and m["stops"] == [], (m["blocks"], m["stops"])
    assert len(m["hints"]) <= 16, m["hints"]
    assert m["caught"] >= 603, m["missed"]


# The sealed half as measured once: (loops, oks, caught, hints on ok, stops on ok). Round 8 (heldout/m, heldout/n),
# measured once on the frozen rules of i25-rules7 (2026-12-02, 01:14 UTC). Round 7 (84, 78, 64, 6, 2 on the frozen
# rules of i25-rules6) moved into tuning/k7, tuning/l7; round 6 (88, 86, 74, 7, 4 on the rules of i25-rules5) into
# tuning/i6, tuning/j6; round 5 (92, 89, 73, 10, 4 on the rules of i25-rules4) into tuning/g5, tuning/h5.
HELDOUT_MEASURED: tuple[int, int, int, int, int] | None = (91, 80, 64, 11, 1)


@pytest.mark.xfail(reason="the sealed round 8, measured once on the frozen rules of 2026-12-02 (i25-rules7): recall "
                          "64/91 = 70.3%, hints on 11/80 ok = 13.8%, 0 blocks, 1 stop on ok (issue 25's floor: 95%, "
                          "2%, 0, 0); its two readers' own labels, scored the same way: 72/91 and 80/91",
                   strict=True)
def test_heldout_meets_the_floor():
    _assert_floor(_half("heldout"), sealed=True)


def test_heldout_is_no_worse_than_measured():
    """The sealed half as measured once: a change to the rules may not make it worse. Counts only."""
    m = _half("heldout")
    if HELDOUT_MEASURED is None:
        pytest.skip("no measurement of the held-out half recorded yet (HELDOUT_MEASURED)")
    loops, oks, caught, hints, stops = HELDOUT_MEASURED
    assert (m["loops"], m["oks"]) == (loops, oks)
    assert m["caught"] >= caught and len(m["hints"]) <= hints and m["blocks"] == [] and len(m["stops"]) <= stops, \
        (m["caught"], len(m["hints"]), len(m["blocks"]), len(m["stops"]))


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


def _item(id_, label="ok", **extra):
    doc = {"id": id_, "family": "f", "label": label, "task": "t", "source": {"url": "https://example.org"},
           "actions": [{"tool": "get", "args": {"id": 1}, "result": {"ok": True, "data": {"x": 1}}}] * 4}
    doc.update(extra)
    return json.dumps(doc)


def test_sealed_items_are_reported_without_their_ids(tmp_path, capsys):
    """A sealed set prints aggregates and the family table only; a second
    reader's labels beside the items are not an item."""
    from guard_quality import main

    held = tmp_path / "heldout" / "r3"
    held.mkdir(parents=True)
    (held / "secret-loop.json").write_text(_item("secret-loop", "loop", trip_by=1), encoding="utf-8")  # missed
    (held / "secret-ok.json").write_text(_item("secret-ok"), encoding="utf-8")
    (held / "second_reader.json").write_text(json.dumps({"secret-ok": {"label": "ok"}}), encoding="utf-8")
    main(["--corpus", str(tmp_path), "--half", "heldout", "--items"])
    out = capsys.readouterr().out
    assert "2 items (1 loop, 1 ok)" in out and "| f | 1 | 0 | 1 |" in out
    assert "secret" not in out and "sealed" in out
    main(["--corpus", str(tmp_path), "--half", "heldout", "--show-sealed-ids"])
    assert "missed: secret-loop" in capsys.readouterr().out       # named only when asked


def test_an_empty_heldout_folder_is_skipped_cleanly(tmp_path, capsys):
    from guard_quality import main

    (tmp_path / "heldout").mkdir()
    (tmp_path / "heldout" / "README.md").write_text("round 3 goes here", encoding="utf-8")
    assert main(["--corpus", str(tmp_path), "--half", "heldout"]) == 0
    assert "held-out: no items" in capsys.readouterr().out


def test_a_broken_sealed_file_is_reported_without_its_name(tmp_path, capsys):
    from guard_quality import main

    held = tmp_path / "heldout"
    held.mkdir()
    (held / "secret-item.json").write_text("{broken", encoding="utf-8")
    (held / "labels-by-reader-2.json").write_text(json.dumps({"secret-item": {"label": "ok"}}), encoding="utf-8")
    assert main(["--corpus", str(tmp_path), "--half", "heldout"]) == 2
    err = capsys.readouterr().err
    assert "sealed" in err and "secret" not in err
    assert main(["--corpus", str(tmp_path), "--half", "heldout", "--show-sealed-ids"]) == 2
    assert "secret-item.json" in capsys.readouterr().err


def test_lowo_reports_each_writer_with_their_batches_together(tmp_path, capsys):
    """`guard_quality.py --lowo`: one row per writer (a writer's second batch, ``a2``, with ``a``), the
    authors' corpus apart, and the worst writer named."""
    from guard_quality import main

    for folder, label in (("a", "loop"), ("a2", "ok"), ("b", "ok")):
        (tmp_path / "tuning" / folder).mkdir(parents=True)
        extra = {"trip_by": 1} if label == "loop" else {}
        (tmp_path / "tuning" / folder / f"{folder}.json").write_text(_item(f"{folder}-1", label, **extra),
                                                                     encoding="utf-8")
    main(["--corpus", str(tmp_path), "--lowo"])
    out = capsys.readouterr().out
    # the items call one tool 4 times alike: the loop is caught late (due at its 1st action), the ok ones stopped
    assert "| a | a, a2 | 0/1 = 0.0% | 1/1 = 100.0% | 0 | 1 | MISSES |" in out
    assert "| b | b | - | 1/1 = 100.0% | 0 | 1 | MISSES |" in out
    assert "| authors |" in out and "worst writer by recall: a" in out
