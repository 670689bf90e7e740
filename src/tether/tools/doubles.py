"""Tool doubles that ship with tether: users test *their* agents with them.

Seed 004 section 4.1 keeps four kinds apart; each double here hands a
:class:`~tether.tools.ToolSet` to ``run_agent`` through ``.toolset()``:

* :class:`Stub`: canned answers per tool, a single value or a strict
  :class:`Responses` sequence (one call too many is an error result and fails
  :meth:`Stub.assert_exhausted`; nothing cycles).
* :class:`Fake`: a small stateful implementation; methods marked with
  :func:`fake_tool` become tools and every call is recorded in ``.calls``.
  :class:`RefundFake` is the seed's order / refund system with idempotency keys.
* :class:`RecordingMock`: wraps any tool set, records every call the agent
  made and its answer, and checks the interaction (``assert_called``,
  ``assert_not_called``, ``calls_to``).
* Replay lives in :mod:`tether.replay`.

Calls are :class:`Call` tuples ``(tool, arguments)``, so ``fake.calls`` compares
equal to the seed's ``[("get_order", {"order_id": "A100"}), ...]``.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable, Iterable, Literal, Mapping, NamedTuple, Protocol, TypeVar

from ..errors import UsageError
from ..mismatch import ToolArgumentsMismatch, ToolCallCountMismatch
from ._tool import CallNext, Tool, ToolResult, ToolSet, tool
from .faults import BaseFault

ArgsMode = Literal["exact", "subset", "superset", "ignore"]


class Call(NamedTuple):
    """One call as a tool double saw it."""

    tool: str
    arguments: dict[str, Any]


def args_match(actual: dict[str, Any], expected: dict[str, Any], mode: ArgsMode) -> bool:
    """Argument match modes, as agentevals defines them (``actual`` vs ``expected``):

    * ``exact``: equal;
    * ``superset``: the call has *at least* the expected arguments, with equal values;
    * ``subset``: the call has *only* arguments from ``expected``, with equal values;
    * ``ignore``: anything matches.
    """
    if mode == "exact":
        return actual == expected
    if mode == "superset":
        return all(k in actual and actual[k] == v for k, v in expected.items())
    if mode == "subset":
        return all(k in expected and expected[k] == v for k, v in actual.items())
    if mode == "ignore":
        return True
    raise UsageError(f"unknown argument match mode {mode!r}; use exact, subset, superset or ignore")


class HasToolSet(Protocol):
    def toolset(self) -> ToolSet: ...


# -- Stub ---------------------------------------------------------------------------
class Responses:
    """Answers for successive calls to one tool, each used once.

    After the last one a call gets an error result (``error_type: stub_exhausted``)
    and :meth:`Stub.assert_exhausted` fails, unless ``repeat_last=True``."""

    def __init__(self, *items: Any, repeat_last: bool = False):
        if not items:
            raise UsageError("Responses() needs at least one response")
        self.items = list(items)
        self.repeat_last = repeat_last


class Stub:
    """Canned answers per tool.

    An answer is plain data (a success), a :class:`~tether.tools.ToolResult`, a
    fault (``Timeout()``, ``RateLimited(retry_after=2)``: faults that wrap a real
    call see an empty success), a callable taking the arguments as keywords,
    or :class:`Responses` for one answer per call::

        stub = Stub({
            "get_order": {"order_id": "A100", "status": "paid", "total_amount": 19900},
            "check_refund": Responses(Timeout(), {"eligible": True}),
        })

    Without ``tools`` each stubbed tool accepts any object as arguments; pass your
    real tools to keep their names, descriptions and schemas (every one of them
    then needs an answer).
    """

    def __init__(self, responses: Mapping[str, Any], *, tools: Iterable[Tool] = ()):
        self.responses: dict[str, Any] = dict(responses)
        self.calls: list[Call] = []
        self.overcalls: list[Call] = []
        self._used: dict[str, int] = {name: 0 for name in self.responses}
        self._specs = {t.name: t for t in tools}
        missing = sorted(set(self._specs) - set(self.responses))
        if missing:
            raise UsageError(f"Stub: no canned response for tool(s) {', '.join(missing)}")

    def toolset(self) -> ToolSet:
        out = []
        for name in self.responses:
            spec = self._specs.get(name)
            fn = self._answerer(name)
            if spec is None:
                out.append(Tool(name, f"stub for {name}", {"type": "object"}, fn))
            else:
                out.append(Tool(name, spec.description, spec.parameters, fn, side_effect=spec.side_effect))
        return ToolSet(out)

    def _answerer(self, name: str) -> Callable[..., Any]:
        async def answer(**arguments: Any) -> ToolResult:
            self.calls.append(Call(name, arguments))
            return await self._answer(name, arguments)

        return answer

    async def _answer(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        item = self.responses[name]
        self._used[name] += 1
        if isinstance(item, Responses):
            n = self._used[name]
            if n > len(item.items) and not item.repeat_last:
                self.overcalls.append(Call(name, arguments))
                return ToolResult.failure(
                    f"stub: call {n} to {name} but only {len(item.items)} response(s) were given",
                    "stub_exhausted", source="stub")
            item = item.items[min(n, len(item.items)) - 1]
        if isinstance(item, BaseFault):
            async def empty(_n: str, _a: dict[str, Any]) -> ToolResult:
                return ToolResult.success({}, source="stub")

            return await item.apply(name, arguments, empty, sleep=asyncio.sleep)
        if isinstance(item, ToolResult):
            return item
        if callable(item):
            item = item(**arguments)
            if inspect.isawaitable(item):
                item = await item
            if isinstance(item, ToolResult):
                return item
        return ToolResult.success(item, source="stub")

    def assert_exhausted(self) -> None:
        """Strict accounting: no call past a sequence's end, no sequence answer unused."""
        if self.overcalls:
            first = self.overcalls[0]
            given = len(self.responses[first.tool].items)
            raise ToolCallCountMismatch(None, given, given + sum(c.tool == first.tool for c in self.overcalls),
                                        detail=f"stub {first.tool}: more calls than responses")
        for name, item in self.responses.items():
            if isinstance(item, Responses) and self._used[name] < len(item.items):
                raise ToolCallCountMismatch(None, len(item.items), self._used[name],
                                            detail=f"stub {name}: {len(item.items) - self._used[name]} response(s) never used")


# -- Fake -------------------------------------------------------------------------------
F = TypeVar("F", bound=Callable[..., Any])


def fake_tool(description: str = "", *, name: str | None = None, side_effect: bool = False,
              status_query: str | None = None) -> Callable[[F], F]:
    """Mark a :class:`Fake` method as a tool; its schema comes from the signature.

    ``status_query`` names a method ``(key, arguments) -> ToolResult | None``
    the run loop's side-effect ledger asks when an earlier identical call's
    outcome is unknown (its response was lost)."""

    def mark(fn: F) -> F:
        fn.__tether_fake_tool__ = {"name": name or fn.__name__, "description": description,  # type: ignore[attr-defined]
                                   "side_effect": side_effect, "status_query": status_query}
        return fn

    return mark


class Fake:
    """A small stateful implementation of an external system.

    Subclass it, keep your state on ``self``, mark the tool methods with
    :func:`fake_tool` and call ``super().__init__()``. Each call that reaches a
    tool is appended to ``self.calls`` before the method runs (a call a fault
    stopped never reached the system, so it is not there; a
    :class:`RecordingMock` sees those)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []

    def toolset(self) -> ToolSet:
        seen: set[str] = set()
        tools: list[Tool] = []
        for cls in reversed(type(self).__mro__):
            for attr, member in vars(cls).items():
                meta = getattr(member, "__tether_fake_tool__", None)
                if meta is None or attr in seen:
                    continue
                seen.add(attr)
                bound = getattr(self, attr)
                query = getattr(self, meta["status_query"]) if meta["status_query"] else None
                t = tool(meta["name"], description=meta["description"] or None, side_effect=meta["side_effect"],
                         status_query=query)(bound)
                t.fn = self._recorded(meta["name"], bound)
                tools.append(t)
        return ToolSet(tools)

    def _recorded(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(**arguments: Any) -> Any:
            self.calls.append(Call(name, dict(arguments)))
            return fn(**arguments)

        return call


class RefundFake(Fake):
    """The seed's order and refund system (sections 4 and 10.2).

    * ``get_order(order_id)``: ``{"found": False}`` for an unknown order, else the order.
    * ``check_refund(order_id)``: ``{"order_id", "eligible", "reason"}``; an order
      already refunded is not eligible (``reason: already_refunded``).
    * ``create_refund(order_id, amount, idempotency_key=None)`` (side-effecting): creates a refund
      (``R900``, ``R901``, ...). The same key returns the *same* refund and never
      creates a second; the same key with other arguments is an
      ``idempotency_conflict`` error. Without a key every call creates a refund,
      as a non-idempotent API does.

    State: ``orders``, ``refunds`` (every refund created), ``by_key``, ``calls``.
    :meth:`find_refund` is ``create_refund``'s status query for the run loop's
    side-effect ledger.
    """

    def __init__(self, orders: Mapping[str, Mapping[str, Any]] | None = None, *,
                 ineligible: Mapping[str, str] | None = None, first_refund_id: int = 900):
        super().__init__()
        default = {"A100": {"order_id": "A100", "status": "paid", "total_amount": 19900, "currency": "CNY"}}
        self.orders: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (orders or default).items()}
        self.ineligible: dict[str, str] = dict(ineligible or {})
        self.refunds: list[dict[str, Any]] = []
        self.by_key: dict[str, dict[str, Any]] = {}
        self._next_id = first_refund_id

    @fake_tool("查询订单 / look up an order")
    def get_order(self, order_id: str) -> dict[str, Any]:
        order = self.orders.get(order_id)
        return {"found": False} if order is None else {"found": True, **order}

    @fake_tool("检查订单能否退款 / check whether an order can be refunded")
    def check_refund(self, order_id: str) -> dict[str, Any]:
        reason: str | None = None
        if order_id not in self.orders:
            reason = "order_not_found"
        elif any(r["order_id"] == order_id for r in self.refunds):
            reason = "already_refunded"
        elif order_id in self.ineligible:
            reason = self.ineligible[order_id]
        return {"order_id": order_id, "eligible": reason is None, "reason": reason}

    @fake_tool("创建退款（金额单位：分）/ create a refund (amount in cents)", side_effect=True,
               status_query="find_refund")
    def create_refund(self, order_id: str, amount: int, idempotency_key: str | None = None) -> Any:
        if idempotency_key is not None and idempotency_key in self.by_key:
            earlier = self.by_key[idempotency_key]
            if (earlier["order_id"], earlier["amount"]) != (order_id, amount):
                return ToolResult.failure(
                    f"idempotency key {idempotency_key!r} was used for {earlier['refund_id']} with other arguments",
                    "idempotency_conflict")
            return dict(earlier)
        if order_id not in self.orders:
            return ToolResult.failure(f"order {order_id} not found", "not_found")
        if amount <= 0:
            return ToolResult.failure(f"amount must be positive, got {amount}", "invalid_amount")
        refund = {"refund_id": f"R{self._next_id}", "order_id": order_id, "amount": amount,
                  "status": "submitted", "idempotency_key": idempotency_key}
        self._next_id += 1
        self.refunds.append(refund)
        if idempotency_key is not None:
            self.by_key[idempotency_key] = refund
        return dict(refund)

    def find_refund(self, key: str, arguments: dict[str, Any]) -> ToolResult | None:
        """Did a ``create_refund`` with exactly these arguments commit? (The status
        query the run loop asks after a lost response; ``key`` is the loop's own
        key, unused here: the fake matches on the arguments.)"""
        for r in self.refunds:
            if (r["order_id"], r["amount"], r["idempotency_key"]) == (
                    arguments.get("order_id"), arguments.get("amount"), arguments.get("idempotency_key")):
                return ToolResult.success(dict(r))
        return None


# -- RecordingMock -----------------------------------------------------------------------
class RecordingMock:
    """Records every call the agent makes to a tool set, and what it got back.

    ``RecordingMock(fake)``, ``RecordingMock(stub)``, ``RecordingMock(toolset)`` or
    ``RecordingMock({"tool": answer, ...})`` (a :class:`Stub`). The mock is the
    outermost layer of its :meth:`toolset`, so it also sees calls a fault
    answered. Calls rejected before the layers (unknown tool, arguments that
    fail the schema) never reach it: the trajectory has those."""

    def __init__(self, target: ToolSet | HasToolSet | Mapping[str, Any]):
        if isinstance(target, Mapping):
            target = Stub(target)
        self._target = target if isinstance(target, ToolSet) else target.toolset()
        self.calls: list[Call] = []
        self.results: list[ToolResult] = []

    def toolset(self) -> ToolSet:
        return ToolSet(self._target.tools.values(), [self, *self._target.layers])

    async def __call__(self, name: str, arguments: dict[str, Any], call_next: CallNext) -> ToolResult:
        self.calls.append(Call(name, dict(arguments)))
        result = await call_next(name, arguments)
        self.results.append(result)
        return result

    def calls_to(self, tool: str) -> list[dict[str, Any]]:
        """The arguments of each call to ``tool``, in order."""
        return [c.arguments for c in self.calls if c.tool == tool]

    def assert_called(self, tool: str, *, times: int | None = None, with_args: dict[str, Any] | None = None,
                      mode: ArgsMode = "exact") -> None:
        """``tool`` was called (``times`` times, if given). With ``with_args``
        only calls whose arguments match under ``mode`` count (see
        :func:`args_match`: ``superset`` is "at least these arguments")."""
        made = self.calls_to(tool)
        matching = made if with_args is None else [a for a in made if args_match(a, with_args, mode)]
        what = f"{tool}" + ("" if with_args is None else f" with matching arguments ({mode})")
        if with_args is not None and made and not matching:
            raise ToolArgumentsMismatch(None, with_args, made[-1], rule=mode,
                                        detail=f"{tool} was called {len(made)} time(s), never with these arguments "
                                               f"(last call shown)")
        if times is not None and len(matching) != times:
            raise ToolCallCountMismatch(None, times, len(matching), detail=f"calls to {what}")
        if times is None and not matching:
            raise ToolCallCountMismatch(None, "at least 1", 0, detail=f"{tool} was never called")

    def assert_not_called(self, tool: str) -> None:
        made = self.calls_to(tool)
        if made:
            raise ToolCallCountMismatch(None, 0, len(made), detail=f"{tool} must not be called; first call {made[0]}")


__all__ = ["ArgsMode", "Call", "Fake", "RecordingMock", "RefundFake", "Responses", "Stub", "args_match", "fake_tool"]
