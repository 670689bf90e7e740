"""Where an evaluation's trials run: in this process, or as Ray tasks.

Both executors take the same planned trials (:class:`TrialJob`: subject x
guard stack x case x trial, each with its run id) and report each finished
trial's :class:`~tether.evals.results.TrialResult`; the verdicts are the same
whichever runs them (a trial's outcome depends on its case, subject, guards
and seed only).

* :class:`LocalExecutor` (default): ``concurrency`` trials at once on this
  process's event loop. A trial runs without the store; once it finished, a
  writer thread stores the whole run (three transactions: the run, its events,
  its end), off the event loop. An eval trial is not continued after a crash
  but rerun (``tether eval --resume``), so it needs no per-step checkpoints
  nor a lease; a run finished but not yet written when the process is killed
  is rerun too.
* :class:`RayExecutor` (``tether[ray]``): trials run as Ray tasks, a chunk of
  up to ``concurrency`` trials per task, each chunk concurrently inside its
  worker. Workers have no store: each returns its runs' events, and the driver
  (the ``tether eval`` process) checks them against the digest the worker
  computed and writes them to the store, the same rows a local run writes. The store stays
  the single record; a remote cluster never needs the driver's SQLite file.
  (An eval trial keeps its side-effect ledger in memory while it runs, with
  either executor: the trial is rerun, never resumed.)
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from ..errors import UsageError
from .case import Case
from .results import TrialResult

OnDone = Callable[["TrialJob", TrialResult, Any], None]


@dataclass(frozen=True)
class TrialJob:
    """One trial to run: which subject, guard stack, case and trial, under which run id."""

    label: str
    stack: str
    case_id: str
    trial: int
    run_id: str

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.label, self.stack, self.case_id, self.trial)


@dataclass
class Subject:
    """What is evaluated: tether's loop around ``model`` (a spec or a Model), or
    the agent ``agent`` (module:factory, file.py:factory or an entry point)."""

    label: str
    model: Any = None
    agent: str | None = None
    model_limits: dict[str, Any] = field(default_factory=dict)
    _make: Callable[[], Any] | None = field(default=None, repr=False, compare=False)
    _model: Any = field(default=None, repr=False, compare=False)

    def factory(self) -> Callable[[], Any]:
        """A function making a fresh agent per trial (the model is resolved once)."""
        if self._make is None:
            if self.agent is not None:
                from .runner import resolve_agent

                self._make = resolve_agent(self.agent)
            else:
                from ..models import resolve_model
                from ..models.registry import with_limits
                from ..runtime.loop import LoopAgent

                model = with_limits(resolve_model(self.model), **self.model_limits)
                self._model = model
                self._make = lambda: LoopAgent(model)
        return self._make

    def resolved_model(self) -> Any:
        """The model tether's loop drives (None for an agent subject)."""
        self.factory()
        return self._model

    def portable(self) -> "Subject":
        """The subject without its resolved factory (to send to another process)."""
        return replace(self, _make=None, _model=None)


@dataclass
class EvalPlan:
    """Everything a trial needs besides its job: the cases, subjects and config."""

    cases: dict[str, Case]
    subjects: dict[str, Subject]
    config: Any                 # EvalConfig
    eval_id: str


class Executor(Protocol):
    name: str

    async def run(self, plan: EvalPlan, jobs: Sequence[TrialJob], store: Any, on_done: OnDone) -> None: ...


async def _one_trial(plan: EvalPlan, job: TrialJob, make: Callable[[], Any]):
    """Run one trial without a store (its run is stored whole once it finished)."""
    from ..runtime import RunConfig
    from .runner import run_trial

    config = plan.config
    run_cfg = RunConfig(kind="eval", eval_id=plan.eval_id)
    return await run_trial(plan.cases[job.case_id], trial=job.trial, config=config,
                           guards=config.guard_stacks[job.stack](), guards_label=job.stack, model_label=job.label,
                           run_config=run_cfg, run_id=job.run_id, agent=make())


def run_rows(trajectory: Any, digest: str) -> tuple[dict, list[tuple[int, dict]], dict | None]:
    """A finished run as the store's rows: (the run, its events, its end)."""
    started, finished = trajectory.started, trajectory.finished
    run = dict(run_id=started.run_id, model=started.model, case_id=started.case_id, meta=started.meta,
               kind=started.kind, eval_id=started.eval_id, trial=started.trial, guards=started.guards)
    events = [(e.seq, e.model_dump(mode="json")) for e in trajectory.events]
    end = None if finished is None else dict(status=str(finished.status), reply=finished.reply,
                                             reason=finished.reason, digest=digest, error_kind=finished.error_kind)
    return run, events, end


def store_run(store: Any, trajectory: Any, digest: str) -> None:
    """Write a finished run to the store in three transactions (the same rows a run
    driven with the store writes; no lease, no checkpoints: it is over)."""
    write_rows(store, *run_rows(trajectory, digest))


def write_rows(store: Any, run: dict, events: list[tuple[int, dict]], end: dict | None) -> None:
    run_id = run.pop("run_id")
    store.create_run(run_id, **run)
    store.append_events(run_id, events)
    if end is not None:
        store.finish_run(run_id, end.pop("status"), end.pop("reply"), end.pop("reason"), **end)


class RunWriter:
    """Stores finished runs from a thread of its own, off the event loop (SQLite
    releases the GIL while it writes). ``close()`` waits for every queued run and
    raises the first write error."""

    def __init__(self, store: Any, export_dir: Path | None = None):
        import queue
        import threading

        self.store, self.export_dir = store, export_dir
        self.queue: "queue.Queue[Any]" = queue.Queue()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="tether-run-writer", daemon=True)
        self.thread.start()

    def put(self, trajectory: Any, digest: str) -> None:
        if self.error is not None:
            raise self.error
        # the rows are made here (Python work, under the GIL); the thread only writes
        self.queue.put((run_rows(trajectory, digest), trajectory if self.export_dir is not None else None))

    def _work(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            if self.error is not None:
                continue
            rows, trajectory = item
            try:
                write_rows(self.store, *rows)
                if trajectory is not None:
                    trajectory.save(Path(self.export_dir) / f"{trajectory.started.run_id}.jsonl")
            except BaseException as exc:      # reported by close() / the next put()
                self.error = exc

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


class LocalExecutor:
    """``concurrency`` trials at once in this process; a writer thread stores each
    run when it finished."""

    name = "local"

    async def run(self, plan: EvalPlan, jobs: Sequence[TrialJob], store: Any, on_done: OnDone) -> None:
        sem = asyncio.Semaphore(max(1, plan.config.concurrency))
        makers = {label: s.factory() for label, s in plan.subjects.items()}
        writer = RunWriter(store, plan.config.export_dir)

        async def one(job: TrialJob) -> None:
            async with sem:
                tr, result = await _one_trial(plan, job, makers[job.label])
            writer.put(result.trajectory, tr.digest or "")
            on_done(job, tr, result.trajectory)

        try:
            await asyncio.gather(*(one(j) for j in jobs))
        finally:
            await asyncio.to_thread(writer.close)


# -- Ray ------------------------------------------------------------------------------
RAY_HINT = "the Ray executor needs Ray: pip install 'tether[ray]' (or pip install ray)"


def _import_ray():
    try:
        import ray
    except ImportError:
        raise UsageError(RAY_HINT) from None
    return ray


def run_chunk(plan: EvalPlan, jobs: Sequence[TrialJob], store_url: str | None = None) -> list[tuple[TrialJob, dict, str]]:
    """A Ray task's body: run ``jobs`` concurrently and return, per trial, (job, the
    TrialResult as JSON, the run's events as JSONL). Given a shared store's URL
    (PostgreSQL), the worker writes each run there itself, as it finishes."""

    async def main() -> list[tuple[TrialJob, dict, str]]:
        sem = asyncio.Semaphore(max(1, plan.config.concurrency))
        makers = {label: s.factory() for label, s in plan.subjects.items()}
        writer = None
        if store_url is not None:
            from ..store import open_store

            writer = RunWriter(open_store(store_url))

        async def one(job: TrialJob):
            async with sem:
                tr, result = await _one_trial(plan, job, makers[job.label])
            if writer is not None:
                writer.put(result.trajectory, tr.digest or "")
            return job, tr.model_dump(mode="json"), result.trajectory.to_jsonl()

        try:
            return list(await asyncio.gather(*(one(j) for j in jobs)))
        finally:
            if writer is not None:
                writer.close()

    return asyncio.run(main())


class RayExecutor:
    """Trials as Ray tasks (chunks of up to ``concurrency`` trials). The driver stores the
    runs, or, with a shared store (PostgreSQL), each worker writes its runs there directly."""

    name = "ray"

    def __init__(self, address: str | None = None, *, chunk: int | None = None):
        self.address = address
        self.chunk = chunk

    def _init(self):
        import os

        ray = _import_ray()
        if not ray.is_initialized():
            address = self.address or os.environ.get("RAY_ADDRESS") or None
            where = (f"{address} ({'--ray-address' if self.address else 'RAY_ADDRESS'})" if address
                     else "a new local Ray instance")
            try:
                ray.init(address=self.address, logging_level="ERROR", log_to_driver=False,
                         include_dashboard=False)
            except ValueError as exc:
                if "ray[client]" in str(exc):
                    raise UsageError(f"{where} is a Ray Client address (ray://), which needs Ray's client "
                                     "package: pip install 'ray[client]'") from None
                raise UsageError(f"Ray could not start with {where}: {exc}") from None
            except (ConnectionError, SystemExit, TimeoutError) as exc:
                why = str(exc) if not isinstance(exc, SystemExit) else f"Ray gave up (exit {exc.code})"
                raise UsageError(f"cannot reach the Ray cluster at {where}: {why}; check the address, or leave "
                                 "--ray-address and RAY_ADDRESS unset to start a local instance") from None
        return ray

    async def run(self, plan: EvalPlan, jobs: Sequence[TrialJob], store: Any, on_done: OnDone) -> None:
        from ..events import Trajectory
        from ..runtime.session import RECORDED_LISTENERS

        if not jobs:
            return
        ray = self._init()
        portable = EvalPlan(cases=plan.cases, config=replace(plan.config, store=None, on_resume=None, executor="local"),
                        subjects={k: s.portable() for k, s in plan.subjects.items()}, eval_id=plan.eval_id)
        size = self.chunk or max(1, plan.config.concurrency)
        try:
            plan_ref = ray.put(portable)
        except TypeError as exc:       # something of the eval cannot be sent to another process
            first = str(exc).splitlines()[0][:200]
            raise UsageError(f"the Ray executor cannot send this evaluation to its workers ({first}): give models "
                             "and agents as spec strings, and guards and simulators that can be pickled") from None
        task = ray.remote(run_chunk)
        shared = getattr(store, "url", None) if getattr(store, "backend", "sqlite") == "postgresql" else None
        pending = [task.remote(plan_ref, list(jobs[i:i + size]), shared) for i in range(0, len(jobs), size)]
        while pending:
            ready, pending = await asyncio.to_thread(ray.wait, pending, num_returns=1)
            for job, tr_json, jsonl in ray.get(ready[0]):
                tr = TrialResult.model_validate(tr_json)
                trajectory = Trajectory.from_jsonl(jsonl, path=f"<ray trial {job.run_id}>")
                if trajectory.digest() != tr.digest:
                    raise RuntimeError(f"run {job.run_id}: the events the worker sent do not match its digest")
                if shared is None:
                    store_run(store, trajectory, tr.digest or "")
                elif (store.get_run(job.run_id) or {}).get("digest") != tr.digest:
                    raise RuntimeError(f"run {job.run_id}: the worker did not store it in {store.where}")
                for listener in RECORDED_LISTENERS:     # --otel: the worker's run, from the driver, once stored
                    listener(trajectory)
                if plan.config.export_dir is not None:
                    trajectory.save(Path(plan.config.export_dir) / f"{job.run_id}.jsonl")
                on_done(job, tr, trajectory)


def make_executor(executor: str | Executor | None, *, ray_address: str | None = None) -> Executor:
    if executor is None or executor == "local":
        if ray_address:
            raise UsageError("--ray-address needs --executor ray")
        return LocalExecutor()
    if executor == "ray":
        return RayExecutor(ray_address)
    if isinstance(executor, str):
        raise UsageError(f"unknown executor {executor!r}: local or ray")
    return executor
