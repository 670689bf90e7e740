"""The six loop families issue 25 names, pinned on the blind tuning items (the
writers' own family labels, never an item id), through the reference stack
offline. Each family holds loops the guards must catch by the writer's
deadline (``trip_by``) and look-alikes they must leave alone.

The writers named their families independently, so one issue family maps to
the labels each writer used for it.
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from guard_quality import default_folders, load_corpus, measure  # noqa: E402

from tether.events import ToolResultEvent  # noqa: E402
from tether.guards._calls import is_transient  # noqa: E402
from tether.guards.stacks import guard_stack  # noqa: E402

# issue family -> (writers' labels, loop items that may be missed, hints allowed on ok items)
FAMILIES = {
    # an empty page past the end on a new page number, has_more false, a cursor that does not advance (also one
    # sent inside query parameters and answered back), an offset past the total, a bigger limit answered the same
    "paging past the end": ({"pagination-past-end", "pagination", "paging-past-end"}, 0, 0),
    # the same create again and again, a fresh id each time
    # (1 missed by one action: a file written again under a new folder each time, the build failing the same way)
    "repeated creates": ({"repeated-create", "duplicate-create"}, 1, 0),
    # the same results in another order
    "reordered results": ({"reordered-results", "result-reorder", "shuffled-results"}, 0, 0),
    # retries with backoff: never blocked or stopped within the budget; a hint at most. The hint comes at the 3rd
    # failure in a row when they are the very same failure with no sign of backoff (no wait tool, no growing
    # Retry-After or delay argument): round 4's writers call that a loop; writers A and B wrote 3 runs that do it
    # and then succeed or ask, and writer G one with quota words and growing waits (the 4 hints allowed). 2 missed:
    # a file too large, read again at once (by one action); a monthly quota retried with backoff, due at the 2nd
    "retry with backoff": ({"transient-retry", "retry-backoff"}, 2, 4),
    # validation errors fixed one by one: each new error is progress (4 missed: the same malformed call failing
    # twice in a row, due at the 2nd, where other writers retry a failure once; two circles of errors caught one
    # action late; an error count that never shrinks. 1 hint: findings shrinking run by run, the run is a "run")
    "errors that change": ({"validation-errors", "fix-iteration", "error-progress", "validation-fix",
                            "validation-fixes"}, 4, 1),
    # a message re-sent after an acknowledgement that says queued / accepted, and its look-alikes: polls of a
    # queued job (2 missed: polls of a job that never finishes, due at the 5th-6th, where legitimate polls run 5-8
    # alike)
    "re-sent after an acknowledgement": ({"resend-acked-message", "send-after-ack", "resend-vs-poll", "ack-resend",
                                          "ack-resend-vs-poll", "resend-after-ack"}, 2, 0),
}


@pytest.fixture(scope="module")
def tuning():
    items = load_corpus(default_folders(), "tuning")
    if not items:
        pytest.skip("no tuning items under tests/data/loop_corpus/tuning")
    return items


# Rounds 6 and 7 (tuning/i6, j6, k7, l7) in the pool: what they add to each family over the allowances above,
# (more misses, more hints, stops on ok items), as measured after the seventh rules pass (i25-rules7, 2026-12-02,
# tuning/r7/README.md), which took round 7's reordered listings, regenerated links, fresh trade numbers, a Link
# header's results="false", an empty page past totalPages inside an envelope, an offset the API does not support
# and a numbered-status export poll off these lists. What is left: paging past the end (a cursor that wraps to the
# first page, has_more 0 one page late), a create with labels duplicated, errors that grow or never converge,
# an export resubmitted (one action late) and a 202 job polled past its expiry; a validator's edits read as
# re-sends; a delivery receipt polled under a numeric status.
LEFT_OVER = {
    "paging past the end": (2, 0, 0),
    "repeated creates": (1, 0, 0),
    "errors that change": (2, 1, 0),
    "re-sent after an acknowledgement": (2, 1, 0),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_is_caught_and_its_look_alikes_left_alone(tuning, family):
    labels, may_miss, hints = FAMILIES[family]
    more_missed, more_hints, stops = LEFT_OVER.get(family, (0, 0, 0))
    items = [i for i in tuning if i.family in labels]
    m = measure(items, guard_stack("on"))
    assert m["loops"] >= 4 and m["oks"] >= 4, (family, m["loops"], m["oks"])     # the family is in the corpus
    assert m["loops"] - m["caught"] <= may_miss + more_missed, m["missed"]
    assert m["blocks"] == [] and len(m["stops"]) <= stops, (m["blocks"], m["stops"])
    assert len(m["hints"]) <= hints + more_hints, m["hints"]


def _transient_run_then_success(item) -> int:
    """The longest run of transient failures of one tool that ends in a success
    of that tool (0 if none)."""
    longest, runs = 0, {}
    from tether.events import ToolCallEvent

    calls = {e.call_id: e.tool for e in item.trajectory if isinstance(e, ToolCallEvent)}
    for e in item.trajectory:
        if not isinstance(e, ToolResultEvent):
            continue
        tool = calls.get(e.call_id, e.tool)
        if e.ok:
            longest = max(longest, runs.pop(tool, 0))
        elif is_transient(e):
            runs[tool] = runs.get(tool, 0) + 1
        else:
            runs.pop(tool, None)
    return longest


def test_a_retry_that_succeeds_within_the_budget_is_never_blocked_or_stopped(tuning):
    """By behaviour, whatever the family: every legitimate run in which a tool
    failed transiently up to 4 times in a row and then succeeded (tether's own
    HTTP client makes 4 attempts; botocore's legacy mode 5) draws no block and
    no stop."""
    retried = [i for i in tuning if i.label == "ok" and 1 <= _transient_run_then_success(i) <= 4]
    assert len(retried) >= 8, len(retried)
    m = measure(retried, guard_stack("on"))
    assert m["blocks"] == [] and m["stops"] == [], (m["blocks"], m["stops"])
