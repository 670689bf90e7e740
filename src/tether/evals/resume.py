"""Continue an interrupted evaluation (``tether eval --resume EVAL_ID``).

The store knows every trial's run: a run with a terminal status is a finished
trial and is kept (scored again from its stored events, which gives the
verdict it had); a trial with no run, or whose run was left ``running`` by a
killed process, runs again. A run left ``running`` is never continued nor
overwritten: it is marked ``error`` (``error_kind`` aborted, reason
"abandoned: ...") and the trial reruns under a new run id (``...-t3-r1``).
A run still driven by a live process (its lease is held) stops the resume.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import UsageError
from .case import Case
from .executors import TrialJob
from .results import TrialResult

Key = tuple[str, str, str, int]


@dataclass
class ResumePlan:
    eval_id: str
    kept: dict[Key, TrialResult] = field(default_factory=dict)
    to_run: list[TrialJob] = field(default_factory=list)
    abandoned: list[str] = field(default_factory=list)   # run ids marked abandoned
    journal: dict[str, dict] = field(default_factory=dict)

    def describe(self) -> str:
        text = (f"{len(self.kept)} finished trial{'s' if len(self.kept) != 1 else ''} kept, "
                f"{len(self.to_run)} to run")
        n = len(self.abandoned)
        if n == 1:
            text += (" (1 run left running by the interrupted process is marked abandoned; its trial reruns "
                     "under a new run id)")
        elif n:
            text += (f" ({n} runs left running by the interrupted process are marked abandoned; their trials "
                     "rerun under new run ids)")
        return text


_SAME = ("subjects", "guards", "trials", "cases")


def stored_eval(store: Any, eval_id: str) -> dict:
    """The stored eval, or a UsageError saying what to do."""
    row = store.get_eval(eval_id)
    if row is None:
        raise UsageError(f"no eval {eval_id!r} in {store.path} (tether eval prints the id when it starts); pass the "
                         "store it was written to (--store PATH)")
    if row["status"] == "finished":
        raise UsageError(f"eval {eval_id} already finished: nothing to resume (its runs are in {store.path}: "
                         "tether runs list)")
    return row


def resume_plan(store: Any, eval_id: str, planned: Sequence[TrialJob], cases: dict[str, Case],
                record: dict) -> ResumePlan:
    """What to keep and what to run to finish ``eval_id`` (whose trials are ``planned``)."""
    from ..runtime.session import new_holder, take_lease
    from ..store.export import load_run
    from .rescore import trial_result

    row = stored_eval(store, eval_id)
    config = row["config"] or {}
    for key in _SAME:
        if key in config and config[key] != record[key]:
            raise UsageError(f"eval {eval_id} was started with other {key} ({config[key]} vs {record[key]}); "
                             "a resume runs the same evaluation")
    progress = (row.get("results") or {}).get("progress") or {}
    runs: dict[Key, list[dict]] = {}
    for r in store.list_runs(limit=10_000_000, eval_id=eval_id, kind="eval"):
        label = (r.get("meta") or {}).get("subject") or r["model"]
        runs.setdefault((label, r["guards"], r["case_id"], r["trial"]), []).append(r)
    out = ResumePlan(eval_id, journal=dict(progress))
    for job in planned:
        attempts = sorted(runs.get(job.key, []), key=lambda r: r["created"])
        finished = [r for r in attempts if r["status"] != "running" and not _abandoned(r)]
        if finished:
            r = finished[-1]
            t = load_run(store, r["run_id"])
            sim = progress.get(r["run_id"]) or _user_state(store, r["run_id"])
            out.kept[job.key] = trial_result(cases[job.case_id], t, trial=job.trial,
                                             simulator_fault=sim.get("fault"), simulator_stop=sim.get("stop"))
            continue
        new_id = job.run_id if not attempts else f"{job.run_id}-r{len(attempts)}"
        for r in attempts:
            if r["status"] == "running":
                holder = new_holder()
                take_lease(store, r["run_id"], holder)     # RunBusy when a live process drives it
                store.finish_run(r["run_id"], "error", "", f"abandoned: the eval was interrupted before this "
                                 f"run finished; the trial reruns as {new_id}", error_kind="aborted")
                store.release_lease(r["run_id"], holder)
                out.abandoned.append(r["run_id"])
        out.to_run.append(TrialJob(job.label, job.stack, job.case_id, job.trial, new_id))
    return out


def _abandoned(run: dict) -> bool:
    return run["status"] == "error" and str(run.get("reason") or "").startswith("abandoned:")


def _user_state(store: Any, run_id: str) -> dict:
    """The simulated user's state at the run's last checkpoint (a run that finished
    after the journal was last written)."""
    cp = store.latest_checkpoint(run_id)
    user = (cp or {}).get("state", {}).get("user") if cp else None
    return user if isinstance(user, dict) else {}


def a_store_to_resume_in(where: Any, eval_id: str | None) -> None:
    """A resume names an eval in a store that is there: where there is none it says so and makes none."""
    from ..store import open_store as open_any
    from ..store.opening import NoStore

    try:
        open_any(where, read_only=True).close()
    except NoStore as none:
        raise UsageError(f"no eval {eval_id!r} in {none.path}: there is no store there (tether eval prints the "
                         "id when it starts); pass the store it was written to (--store PATH)") from None
