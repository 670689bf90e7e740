"""`guard_quality.py` scores a second reader's labels as a detector, by the same measure as the stack: the
agreement of two people on the same items, printed beside the stack (counts only for a sealed set)."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from guard_quality import load_corpus, main, reader_labels, reader_measure  # noqa: E402


def _item(id_, label, trip_by=None, n=4):
    doc = {"id": id_, "family": "f", "label": label, "task": "t", "source": {"url": "https://example.org"},
           "actions": [{"tool": "get", "args": {"id": i}, "result": {"ok": True, "data": {"x": i}}}
                       for i in range(n)]}
    if trip_by:
        doc["trip_by"] = trip_by
    return json.dumps(doc)


def _round(tmp_path, half):
    items = tmp_path / half / "x1"
    notes = tmp_path / half / "r1"
    items.mkdir(parents=True)
    notes.mkdir()
    for id_, label, trip in (("x-early", "loop", 3), ("x-late", "loop", 2), ("x-ok", "ok", None),
                             ("x-called", "ok", None), ("x-unread", "loop", 2)):
        (items / f"{id_}.json").write_text(_item(id_, label, trip), encoding="utf-8")
    reader = {"x-early": {"label": "loop", "trip_by": 2, "why": "earlier than the writer: caught"},
              "x-late": {"label": "loop", "trip_by": 4, "why": "later than the writer: missed"},
              "x-ok": {"label": "ok", "trip_by": None}, "x-called": {"label": "loop", "trip_by": 3},
              "not-in-corpus": {"label": "loop", "trip_by": 1}, "junk": "not a label"}
    (notes / "second_reader_round1.json").write_text(json.dumps(reader, ensure_ascii=False), encoding="utf-8")
    (notes / "second_reader_round1_items.json").write_text(json.dumps({"item-001": "x-ok"}), encoding="utf-8")
    return items


def test_the_reader_is_scored_by_the_writers_trip_by(tmp_path):
    items = _round(tmp_path, "tuning")
    labels = reader_labels([items])
    assert set(labels) == {"x-early", "x-late", "x-ok", "x-called", "not-in-corpus"}   # the map is not labels
    m = reader_measure(load_corpus([items], "tuning"), labels)
    assert (m["read"], m["loops"], m["caught"], m["oks"], m["hints"]) == (4, 2, 1, 2, ["x-called"])
    assert reader_measure(load_corpus([items], "tuning"), {}) is None


def test_the_reader_line_is_printed_beside_the_stack_and_sealed_sets_name_no_item(tmp_path, capsys):
    _round(tmp_path, "tuning")
    main(["--corpus", str(tmp_path / "tuning"), "--half", "tuning"])
    out = capsys.readouterr().out
    assert "| a second reader's labels, as a detector (4 items read; hindsight) | 1/2 = 50.0% | 1/2 = 50.0% |" in out

    sealed = tmp_path / "sealed"
    _round(sealed, "heldout")
    main(["--corpus", str(sealed / "heldout"), "--half", "heldout"])
    out = capsys.readouterr().out
    assert "| a second reader's labels, as a detector (4 items read; hindsight) | 1/2 = 50.0% | 1/2 = 50.0% |" in out
    assert "x-" not in out


def test_a_reader_file_that_is_not_json_names_itself(tmp_path, capsys):
    items = _round(tmp_path, "tuning")
    (tmp_path / "tuning" / "r1" / "second_reader_round1.json").write_text("{broken", encoding="utf-8")
    assert main(["--corpus", str(items), "--half", "tuning"]) == 2
    assert "second_reader_round1.json" in capsys.readouterr().err


def test_a_third_reader_gets_a_line_and_a_column_of_its_own(tmp_path, capsys):
    _round(tmp_path, "tuning")
    (tmp_path / "tuning" / "x2").mkdir()
    (tmp_path / "tuning" / "x2" / "y.json").write_text(_item("y", "loop", 2), encoding="utf-8")
    third = {"x-early": {"label": "loop", "trip_by": 3}, "x-late": {"label": "loop", "trip_by": 2},
             "x-ok": {"label": "ok"}, "x-called": {"label": "ok"}, "y": {"label": "loop", "trip_by": 1}}
    (tmp_path / "tuning" / "r1" / "third_reader_round1.json").write_text(json.dumps(third), encoding="utf-8")
    main(["--corpus", str(tmp_path / "tuning"), "--half", "tuning"])
    out = capsys.readouterr().out
    assert "| a third reader's labels, as a detector (5 items read; hindsight) | 3/3 = 100.0% | 0/2 = 0.0% |" in out
    assert "| x1/ | 0/3 = 0.0% | 1/2 = 50.0% | 2/2 = 100.0% |" in out       # a column per reader
    assert "| x2/ | 0/1 = 0.0% | - | 1/1 = 100.0% |" in out
    assert "third_reader_round1" not in out                                 # labels, not an item
