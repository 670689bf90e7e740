"""The evals list's two queries on both backends: a keyset page of evals (newest first,
the id breaking ties) and, per page, the runs of each eval by status and the results."""

from __future__ import annotations


def test_eval_pages_and_overview(store):
    for i in range(5):
        store.create_eval(f"e{i}", "c4", {"models": [f"m{i}"]})
    first = store.list_evals(2)
    assert [e["eval_id"] for e in first] == ["e4", "e3"] and first[0]["config"] == {"models": ["m4"]}
    assert [e["eval_id"] for e in store.list_evals(2, before="e3")] == ["e2", "e1"]
    assert [e["eval_id"] for e in store.list_evals(10, before="e1")] == ["e0"]
    assert store.list_evals(10, before="no-such-eval") == []
    for n, status in enumerate(("completed", "error", "error", "running")):
        store.create_run(f"r{n}", model="m", kind="eval", eval_id="e1")
        if status != "running":
            store.finish_run(f"r{n}", status, "", "")
    store.finish_eval("e1", {"format": "tether.results", "suite": "c4", "runs": [{"model": "m", "dimensions": {}}]})
    seen = store.eval_overview(["e1", "e2"])
    assert seen["e1"]["runs"] == 4 and seen["e1"]["errors"] == 2 and seen["e1"]["running"] == 1
    assert seen["e1"]["results"]["runs"][0]["model"] == "m"
    assert seen["e2"] == {"runs": 0, "errors": 0, "running": 0, "results": None}
    assert store.eval_overview(["e1"], results=[])["e1"]["results"] is None        # a caller that keeps them
    assert store.eval_overview([]) == {}
