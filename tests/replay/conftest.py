"""Shared pieces for the replay tests: the seed's refund flow, and a cassette
directory that is scanned for key-like strings when the session ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tether import Decision, ScriptedModel, ToolSet, tool
from tether.replay import scan_for_secrets

_WRITTEN: list[Path] = []


@pytest.fixture(scope="session")
def _cassette_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("cassettes")
    yield root
    # Every cassette any replay test wrote: none may hold a key-like string.
    files = sorted(root.rglob("*.json")) + [p for p in _WRITTEN if p.exists()]
    leaks = [f for p in files for f in scan_for_secrets(p)]
    if leaks:
        pytest.fail("cassettes written by the tests contain key-like strings:\n" + "\n".join(map(str, leaks)))


@pytest.fixture
def cassette_dir(_cassette_root: Path, request: pytest.FixtureRequest) -> Path:
    """A per-test directory for cassettes, scanned for secrets at session end."""
    d = _cassette_root / request.node.name.replace("[", "_").replace("]", "_")
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture
def remember_cassettes() -> Callable[[Path], None]:
    """Register cassettes written outside ``cassette_dir`` for the session-end scan."""
    return lambda p: _WRITTEN.extend(sorted(Path(p).rglob("*.json")) if Path(p).is_dir() else [Path(p)])


# -- the seed's refund flow (section 9) -----------------------------------------
class RefundWorld:
    """get_order / check_refund / create_refund over one paid order."""

    def __init__(self, *, user_id: str = "U123", extra: dict[str, Any] | None = None):
        self.refunds: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        world = self

        @tool(description="查询订单")
        def get_order(order_id: str) -> dict:
            world.calls.append(("get_order", {"order_id": order_id}))
            return {"order_id": order_id, "user_id": user_id, "status": "paid", "total_amount": 19900, **(extra or {})}

        @tool(description="检查订单能否退款")
        def check_refund(order_id: str) -> dict:
            world.calls.append(("check_refund", {"order_id": order_id}))
            return {"order_id": order_id, "refundable": True}

        @tool(description="提交退款（金额单位：分）", side_effect=True)
        def create_refund(order_id: str, amount: int) -> dict:
            world.calls.append(("create_refund", {"order_id": order_id, "amount": amount}))
            refund = {"refund_id": "R900", "order_id": order_id, "amount": amount, "status": "submitted"}
            world.refunds.append(refund)
            return refund

        self.tools = ToolSet([get_order, check_refund, create_refund])


def refund_decisions(order_id: str = "A100", amount: int = 19900) -> list[Decision]:
    return [
        Decision.call("get_order", {"order_id": order_id}),
        Decision.call("check_refund", {"order_id": order_id}),
        Decision.call("create_refund", {"order_id": order_id, "amount": amount}),
        Decision.final("退款已提交，退款单号为 R900。"),
    ]


@pytest.fixture
def refund_world() -> RefundWorld:
    return RefundWorld()


@pytest.fixture
def refund_model() -> Callable[..., ScriptedModel]:
    def make(amount: int = 19900, order_id: str = "A100") -> ScriptedModel:
        return ScriptedModel(refund_decisions(order_id, amount), name="refund-agent")

    return make
