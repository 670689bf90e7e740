"""The tether error family.

Three families are kept apart (see STYLE.md item 5)::

    TetherError
    ├── UsageError                 misuse by the developer: fix your code or file
    │   ├── CaseFileError          a case / results / trace / store file that does not load
    │   ├── UnknownModelSpec       a model spec string nobody understands
    │   ├── ModelRequestsForbidden a real model was asked while requests are off
    │   ├── ScriptExhausted        a scripted double was called once too often
    │   ├── ScriptLeftover         ... or not often enough (checked at teardown)
    │   ├── UnmappedRequest        a mapping model got a request it has no answer for
    │   ├── UnusedMappings         ... or ended with answers nobody asked for
    │   ├── CassetteNotFound       replay-only mode and no cassette on disk
    │   ├── RunBusy                another process is driving that run (it holds the run's lease)
    │   ├── RunMissing             a results file's run is not in the store, or not the run it pinned (evals/stored.py)
    │   ├── StoreError             a store that cannot be used as given: a folder, not SQLite, damaged, read-only (store/opening.py)
    │   │   ├── NoStore            a command that only reads was given a path with no store; it makes none (store/opening.py)
    │   │   └── DamagedRun         one run whose stored events cannot be read; the other runs go on (store/opening.py)
    │   ├── UnsafeId               an id outside the one id pattern (ids.py)
    │   └── OutsideRoot            a path built from data that would leave its folder (ids.py)
    ├── EvalGateFailed             an eval's results missed max_errors or fail_under; carries them (evals/gates.py)
    │   ├── FailUnder              an automatic pass rate below fail_under (tether eval exits 1)
    │   └── TooManyErrors          more errored trials than max_errors (tether eval exits 4)
    ├── DiskFull                   the disk is full (SQLITE_FULL, ENOSPC): exit 74; nothing is damaged
    ├── RunFailure                 the run could not go on (surfaced in the trace)
    │   ├── ModelFailure           the model seam raised or answered garbage
    │   │   ├── ProviderFailure    a provider could not be reached or kept failing (infrastructure)
    │   │   └── ToolResultsUnseen  a provider model does not see tool results (infrastructure; evals/probe.py)
    │   └── UpstreamFailure        a gateway's upstream (MCP server, model API) died, hung or misbehaved
    └── LoopSignal                 signals between the run loop, its gates and its callers
        ├── RunStop                a guard or a gate ended the run; the loop catches it and finishes
        └── RunAborted             the run must not go on; the loop records it and re-raises
            ├── LeaseLost          another process took over the run's lease (nothing more is written)
            ├── ResumeDiverged     a run resumed by replay did not repeat its record
            └── Mismatch           replay: the run departed from its recording (also an AssertionError; mismatch.py)
                ├── ModelRequestMismatch
                ├── ToolNameMismatch
                ├── ToolArgumentsMismatch
                ├── ToolCallCountMismatch
                ├── ToolResultMismatch
                ├── TerminalStateMismatch
                ├── SemanticOutputMismatch
                └── UserReplyMismatch

Every class above is defined in this module or in the module named in its
docstring, and a test compares this tree with the classes the package defines.
Internal control flow, caught where it is raised and never seen by a caller,
is not in the tree: ``TransportError`` (models/_http: one failed HTTP attempt,
retried or turned into a ProviderFailure), ``Emit`` and ``Finish``
(c4/policies: a calibration policy's next decision).
Errors carry structured fields and numbers, not just words.

Error kinds (``RunFinished.error_kind``): ``infrastructure`` (a model, judge or
simulator could not be reached or kept failing: never agent behaviour),
``harness`` (tether or a tool implementation raised), ``misuse`` (a UsageError),
``aborted`` (a RunAborted signal such as a replay mismatch).
"""

from __future__ import annotations

from dataclasses import dataclass


class TetherError(Exception):
    """Base class of every error tether raises on purpose."""


class UsageError(TetherError):
    """The developer used tether wrongly: the message says how to fix it."""


class DiskFull(TetherError):
    """The disk (or the store's size limit) is full: free space and rerun. Never a
    damaged store: no command advises moving a healthy store aside for it."""


@dataclass
class FileLocation:
    path: str
    line: int | None = None
    column: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.field:
            where += f" [{self.field}]"
        return where


class CaseFileError(UsageError):
    """A file that does not load. ``problems`` lists every problem found."""

    def __init__(self, problems: list[tuple[FileLocation, str]]):
        self.problems = problems
        lines = [f"{loc}: {msg}" for loc, msg in problems]
        super().__init__("\n".join(lines) if lines else "invalid file")


class UnknownModelSpec(UsageError):
    def __init__(self, spec: str, known: list[str]):
        self.spec = spec
        self.known = known
        super().__init__(
            f"unknown model spec {spec!r}; known prefixes: {', '.join(sorted(known))}; or your own model as "
            "module:factory or path/to/file.py:factory"
        )


class ModelRequestsForbidden(UsageError):
    def __init__(self, model: str):
        self.model = model
        super().__init__(
            f"model {model!r} would make a real request, but real model requests are "
            "forbidden here; use tether.models.allow_model_requests() to opt in"
        )


class ScriptExhausted(UsageError):
    """A scripted model was called after its last decision."""

    def __init__(self, model: str, step: int, scripted: int):
        self.model = model
        self.step = step
        self.scripted = scripted
        super().__init__(
            f"{model}: request at step {step} but only {scripted} decision(s) were "
            f"scripted (call {scripted + 1} of a script of {scripted})"
        )


class ScriptLeftover(UsageError):
    """A scripted model ended with decisions nobody asked for."""

    def __init__(self, model: str, used: int, scripted: int, next_step: int):
        self.model = model
        self.used = used
        self.scripted = scripted
        super().__init__(
            f"{model}: {scripted - used} scripted decision(s) left unused; "
            f"the run stopped after {used} of {scripted} (first unused: step {next_step})"
        )


class RunBusy(UsageError):
    """Another process holds the run's lease: one process drives a run at a time."""

    def __init__(self, run_id: str, pid: int, host: str, since: float):
        import datetime as _dt

        self.run_id, self.pid, self.host, self.since = run_id, pid, host, since
        when = _dt.datetime.fromtimestamp(since).strftime("%Y-%m-%d %H:%M:%S")
        super().__init__(f"run {run_id} is being driven by pid {pid} on {host} since {when}; wait for it to "
                         "finish, or for its lease to expire if that process died")


class RunFailure(TetherError):
    """The run could not continue. Recorded in the trace as status ``error``."""


class ModelFailure(RunFailure):
    """The model seam raised. ``infrastructure`` is true when the cause was the
    wire (connection refused, timeouts, 5xx, retries exhausted), not the model."""

    infrastructure: bool = False

    def __init__(self, model: str, step: int, detail: str, *, infrastructure: bool | None = None):
        self.model = model
        self.step = step
        self.detail = detail
        if infrastructure is not None:
            self.infrastructure = infrastructure
        super().__init__(f"model {model!r} failed at step {step}: {detail}")


class UpstreamFailure(RunFailure):
    """What a gateway (tether.gateway) puts in front of: an MCP server or a model
    API died, hung, or answered something that is not the protocol. ``code`` is
    the JSON-RPC error code the MCP gateway answers the client with."""

    def __init__(self, detail: str, *, code: int = -32002):
        self.detail = detail
        self.code = code
        super().__init__(detail)


class ToolResultsUnseen(ModelFailure):
    """An eval's probe found that a provider model never sees tool results: the
    server drops ``role: tool`` messages (llama-cpp-python's
    chatml-function-calling does). Infrastructure: the eval stops before any
    trial is scored. ``numbers`` holds the probe's token counts."""

    infrastructure = True

    def __init__(self, model: str, detail: str, numbers: dict | None = None):
        self.numbers = dict(numbers or {})
        super().__init__(model, 0, detail)


class LoopSignal(TetherError):
    """Signals between the run loop, its gates and whoever drives it."""


class RunStop(LoopSignal):
    """A guard or a gate ended the run. tether's loop catches it and finishes the
    run with ``status``; a framework adapter lets it propagate out of the
    framework's own loop and the harness finishes the run the same way."""

    def __init__(self, status, reply: str, reason: str, verdict=None, *, result=None, requeue: bool = False):
        self.status = status
        self.reply = reply
        self.reason = reason
        self.verdict = verdict      # the guard's Intervention, when a guard stopped the run
        self.result = result        # the tool result to record, when a gate stopped it at a tool call
        self.requeue = requeue      # the call is asked again when the run resumes (a pending approval)
        super().__init__(f"run stopped ({status}): {reason}")


class RunAborted(LoopSignal):
    """The run must not go on and the caller must know: the loop records a
    ``run_finished`` (status ``error``, kind ``aborted``) and re-raises."""


class LeaseLost(RunAborted):
    """This process no longer holds the run's lease: another one drives it now."""


class ResumeDiverged(RunAborted):
    """A run resumed by replay: the agent did not repeat its recorded requests and
    calls given the recorded answers, so the record cannot carry it to the crash point."""
