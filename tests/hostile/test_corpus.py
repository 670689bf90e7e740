"""The hostile-input corpus through every file-consuming command.

Each input must give: no traceback, a non-zero exit that is not an internal
error, a message naming the input (its file, option or id), nothing written
outside the working folder (a sentinel parent folder is compared before and
after), and, for the costly inputs (run in a subprocess), bounded memory
(``RLIMIT_AS``) and time.
"""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .corpus import build
from .harness import invoke, invoke_subprocess, problems, snapshot

ESCAPES = [Path("/tmp/pwned"), Path("/tmp/pwned.jsonl")]


def _check(cases, parent: Path, work: Path, run) -> tuple[list[str], Counter]:
    outside_before = {p: p.exists() for p in ESCAPES}
    before = snapshot(parent, work)
    failures: list[str] = []
    per_command: Counter = Counter()

    def one(h):
        if h.setup is not None:
            h.setup(work)
        outcome = run(h.argv, work)
        return h, outcome, problems(outcome, h.names)

    results = [one(h) for h in cases] if run is invoke else \
        list(ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))).map(one, cases))
    for h, outcome, found in results:
        per_command[h.name.split(":")[0]] += 1
        if found:
            tail = " | ".join(outcome.output.strip().splitlines()[-2:])[:300]
            failures.append(f"{h.name} (exit {outcome.code}): {'; '.join(found)} :: {tail}")
    after = snapshot(parent, work)
    if after != before:
        failures.append(f"written outside the working folder: {sorted(set(after) ^ set(before))[:10]}")
    for p, existed in outside_before.items():
        if p.exists() and not existed:
            failures.append(f"written outside the working folder: {p}")
    return failures, per_command


PER_COMMAND = 3     # the default run's share of each command's cheap inputs; `-m slow` runs them all


def _sample(cases):
    """Every command, and at most PER_COMMAND of its inputs, spread over its list (files, specials,
    stores, options): a fast representative of the corpus for the default run."""
    by_command: dict[str, list] = {}
    for h in cases:
        by_command.setdefault(h.name.split(":")[0], []).append(h)
    picked = []
    for group in by_command.values():
        step = max(1, len(group) // PER_COMMAND)
        picked += group[::step][:PER_COMMAND]
    return picked


def _hostile_corpus(hostile_fixture, sandbox, *, everything: bool) -> None:
    parent, work = sandbox
    cases = build(work, hostile_fixture)
    assert len(cases) >= 150
    if not everything:
        cases = _sample(cases)
    failures, per_command = _check(cases, parent, work, invoke)
    assert not failures, f"{len(failures)} of {len(cases)} hostile inputs mishandled:\n" + "\n".join(failures)
    assert len(per_command) >= 12, per_command
    assert not (work / "EVIL-RAN").exists(), "a record from elsewhere ran code"


def test_hostile_corpus_a_few_inputs_per_command(hostile_fixture, sandbox):
    _hostile_corpus(hostile_fixture, sandbox, everything=False)


@pytest.mark.slow
def test_hostile_corpus(hostile_fixture, sandbox):
    _hostile_corpus(hostile_fixture, sandbox, everything=True)


@pytest.mark.slow
def test_hostile_corpus_costly_inputs_in_bounded_processes(hostile_fixture, sandbox):
    """/dev/zero, 50-60 MB files, and every file kind through eval and run: a subprocess each,
    at most 1.5 GB of address space and 60 s."""
    parent, work = sandbox
    cases = [h for h in build(work, hostile_fixture, slow=True) if h.slow]
    failures, per_command = _check(cases, parent, work, invoke_subprocess)
    assert not failures, f"{len(failures)} of {len(cases)} costly inputs mishandled:\n" + "\n".join(failures)
