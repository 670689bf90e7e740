"""Human approval gates for risky tools (seed 002 section 9).

The gate's rules (:class:`ApprovalRules`) say which calls need approval: by
tool name, glob, and argument predicates (``batch_update`` with ``count > 100``). An approver decides:
approve, reject, modify the arguments, escalate, or terminate. Approvers sit
behind one small seam (``async decide(request) -> ApprovalDecision``):

* :class:`CallbackApprover`: a function decides (programmatic).
* :class:`FixedApprover`: always approves, or always rejects, what the rules send it.
* :class:`CLIApprover`: an interactive prompt showing what will be done, what
  it affects and why approval is needed.
* :class:`DeferredApprover`: persists the request and pauses the run
  (``needs_human``); ``tether approve RUN_ID`` decides and the run continues.

A timeout is a rejection (default deny), for every approver: synchronous
ones (a blocking callback, the terminal prompt) run in a thread the gate can
abandon, and a decision that arrives after the deadline does not count. A
deferred approval expires (default 24 h) and then denies. A decision is bound
to a digest of the exact arguments and applies to the one call it was given
for: an approval or a rejection is used once, and another call, a retry, or a
resumed run after the call ran all need a new decision. An approval must say
who decided; one without a decider is refused. Deciding a pending approval
is a compare-and-set: of two people deciding at once, one wins and the other
is told it lost.
"""

from __future__ import annotations

import asyncio
import time
import fnmatch
import inspect
import hashlib
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal, Protocol

from ..messages import canonical_json

ApprovalAction = Literal["approve", "reject", "modify", "escalate", "terminate", "pending"]

def arguments_digest(tool: str, arguments: dict[str, Any]) -> str:
    return hashlib.sha256(f"{tool}\x1f{canonical_json(arguments)}".encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApprovalRule:
    """Calls to tools matching ``tools`` (names or globs) need approval, when
    ``when(arguments)`` is true (always, without a predicate)."""

    tools: tuple[str, ...]
    reason: str
    when: Callable[[dict[str, Any]], bool] | None = None
    affects: Callable[[dict[str, Any]], str] | None = None

    def matches(self, tool: str, arguments: dict[str, Any]) -> bool:
        if not any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.tools):
            return False
        return self.when(arguments) if self.when is not None else True


@dataclass(frozen=True)
class ApprovalRules:
    """The rules of one gate: the first that matches a call says why it needs approval."""

    rules: tuple[ApprovalRule, ...] = ()

    def match(self, tool: str, arguments: dict[str, Any]) -> ApprovalRule | None:
        return next((r for r in self.rules if r.matches(tool, arguments)), None)

    @classmethod
    def seed_high_risk(cls) -> "ApprovalRules":
        return cls((
            ApprovalRule(("delete_*", "delete_data"), "删除数据不可逆"),
            ApprovalRule(("send_email", "send_*"), "会向外部发送消息"),
            ApprovalRule(("payment", "pay_*", "create_refund"), "涉及资金"),
            ApprovalRule(("batch_update",), "批量更新超过 100 条", when=lambda a: (a.get("count") or 0) > 100,
                         affects=lambda a: f"{a.get('count')} 条记录"),
        ))


@dataclass(frozen=True)
class ApprovalRequest:
    id: str
    run_id: str
    tool: str
    arguments: dict[str, Any]
    digest: str
    reason: str                 # why approval is needed
    affects: str = ""           # what it affects
    step: int = 0


@dataclass(frozen=True)
class ApprovalDecision:
    action: ApprovalAction
    arguments: dict[str, Any] | None = None   # for modify
    by: str = ""
    note: str = ""


class Approver(Protocol):
    async def decide(self, request: ApprovalRequest) -> ApprovalDecision: ...


@dataclass
class CallbackApprover:
    fn: Callable[[ApprovalRequest], "ApprovalDecision | Awaitable[ApprovalDecision]"]
    name: str = "callback"

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(request)
        out = await in_daemon_thread(self.fn, request)     # a blocking callback cannot hold the run past its timeout
        if inspect.isawaitable(out):
            out = await out
        return out


async def in_daemon_thread(fn: Callable[..., Any], *args: Any, cancel: Any = None) -> Any:
    """Run a blocking ``fn`` in a daemon thread: when the caller stops waiting
    (a timeout), ``cancel`` (a threading.Event, if given) is set so ``fn`` can
    stop, and the thread never keeps the process alive."""
    import threading

    loop = asyncio.get_running_loop()
    future: asyncio.Future = loop.create_future()

    def deliver(setter: Callable[[], Any]) -> None:
        try:
            loop.call_soon_threadsafe(setter)
        except RuntimeError:          # the loop is closed: nobody waits any more
            pass

    def work() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:  # delivered to the waiting task
            error = exc
            deliver(lambda: future.done() or future.set_exception(error))
        else:
            deliver(lambda: future.done() or future.set_result(result))

    threading.Thread(target=work, daemon=True, name="tether-approver").start()
    try:
        return await future
    except asyncio.CancelledError:
        if cancel is not None:
            cancel.set()
        raise


class _Abandoned(Exception):
    """The approval prompt's caller stopped waiting (a timeout)."""


def read_line(cancel: Any, poll_s: float = 0.1) -> str | None:
    """One line from the terminal, read from the file descriptor (unbuffered) while
    watching ``cancel``: a prompt whose approval timed out stops reading, and no
    thread is left inside the buffered ``sys.stdin`` (which made the interpreter
    abort at exit: "Fatal Python error", exit 134). None where stdin has no
    descriptor to poll (the caller falls back to ``input``)."""
    import os
    import select
    import sys

    try:
        fd = sys.stdin.fileno()
        select.select([fd], [], [], 0)
    except (AttributeError, ValueError, OSError, TypeError):
        return None
    data = b""
    while b"\n" not in data:
        if cancel.is_set():
            raise _Abandoned()
        ready, _, _ = select.select([fd], [], [], poll_s)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:                 # end of input: no answer
            break
        data += chunk
    return data.split(b"\n", 1)[0].decode("utf-8", "replace")


@dataclass
class FixedApprover:
    """Always the same answer: ``approve`` everything the gate sends, or ``reject`` it.
    (Its decisions are recorded as ``by="policy"``, as they always were.)"""

    action: Literal["approve", "reject"] = "reject"

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(self.action, by="policy", note=f"fixed approver ({self.action})")


@dataclass
class DeferredApprover:
    """Leaves the decision to someone else later: the run pauses as needs_human."""

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision("pending", by="deferred", note="waiting for `tether approve`")


@dataclass
class CLIApprover:
    """Asks on the terminal: approve / reject / edit (the arguments as JSON)."""

    console: Any = None
    ask: Callable[[str], str] | None = None   # injectable for tests

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        import threading

        cancel = threading.Event()
        return await in_daemon_thread(self._prompt, request, cancel, cancel=cancel)

    def _prompt(self, request: ApprovalRequest, cancel: Any = None) -> ApprovalDecision:
        import json

        from rich.panel import Panel
        from rich.text import Text

        from .._terminal import clean_console

        console = self.console or clean_console(stderr=True)
        body = Text.assemble(("要做什么", "bold"), f": {request.tool}({json.dumps(request.arguments, ensure_ascii=False)})\n",
                             ("影响什么", "bold"), f": {request.affects or '见参数'}\n",
                             ("为什么需要你确认", "bold"), f": {request.reason}")
        console.print(Panel(body, title=Text(f"approval needed · run {request.run_id} · step {request.step}")))
        def terminal(prompt: str) -> str:
            console.print(Text(prompt), end="")        # "[a]" is text, not Rich markup
            line = read_line(cancel) if cancel is not None else None
            return line if line is not None else console.input()

        ask = self.ask or terminal
        try:
            answer = ask("[a]pprove / [r]eject / [e]dit > ").strip().lower()
        except _Abandoned:
            return ApprovalDecision("reject", by="cli", note="the prompt was abandoned (timed out)")
        if answer in ("a", "approve", "y", "yes"):
            return ApprovalDecision("approve", by="cli")
        if answer in ("e", "edit"):
            try:
                raw = ask("new arguments (JSON) > ")
            except _Abandoned:
                return ApprovalDecision("reject", by="cli", note="the prompt was abandoned (timed out)")
            try:
                return ApprovalDecision("modify", arguments=json.loads(raw), by="cli")
            except json.JSONDecodeError as exc:
                return ApprovalDecision("reject", by="cli", note=f"unreadable arguments: {exc}")
        return ApprovalDecision("reject", by="cli")


# The approvers named on the command line (``--approver``) and in a run's recorded CLI recipe.
APPROVERS = ("deferred", "cli", "deny", "allow")


def approver_named(name: str) -> Approver:
    """The approver ``--approver NAME`` stands for (one of :data:`APPROVERS`)."""
    makers: dict[str, Callable[[], Approver]] = {
        "deferred": DeferredApprover, "cli": CLIApprover,
        "deny": lambda: FixedApprover("reject"), "allow": lambda: FixedApprover("approve")}
    return makers[name]()


@dataclass(frozen=True)
class ApprovalGate:
    rules: ApprovalRules
    approver: Approver = field(default_factory=FixedApprover)
    timeout_s: float = 300.0                 # a synchronous decision later than this is a rejection
    deferred_expiry_s: float = 24 * 3600.0   # a deferred (tether approve) decision later than this is a rejection

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        """The approver's decision; a timeout is a rejection, and so is a decision
        that comes back after the deadline or without saying who decided."""
        started = time.monotonic()
        try:
            decision = await asyncio.wait_for(self.approver.decide(request), self.timeout_s)
        except asyncio.TimeoutError:
            return _timed_out(self.timeout_s)
        if decision.action != "pending" and time.monotonic() - started > self.timeout_s:
            return _timed_out(self.timeout_s)
        if decision.action in ("approve", "modify") and not decision.by:
            return ApprovalDecision("reject", by="gate", note="the approval did not say who decided: refused")
        return decision


def _timed_out(timeout_s: float) -> ApprovalDecision:
    return ApprovalDecision("reject", by="timeout", note=f"no decision within {timeout_s:g} s: default deny")
