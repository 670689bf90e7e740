"""pydantic-ai's TetherGuard beyond the example: streamed runs, and tools declared side-effecting."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import DeltaToolCall, FunctionModel  # noqa: E402

from tether.adapters.pydantic_ai import TetherGuard  # noqa: E402
from tether.store import SQLiteStore  # noqa: E402


def _stubborn_stream(messages, info):
    """Streams the same failing call again and again; with no tools offered (the finish-up) it answers."""
    async def gen():
        if not info.function_tools:
            yield "The orders database is down."
            return
        yield {0: DeltaToolCall(name="order_status", json_args='{"order_id": "A100"}',
                                tool_call_id=f"c{len(messages)}")}
    return gen()


def order_status(order_id: str) -> str:
    """The status of an order."""
    raise RuntimeError(f"order_status failed for {order_id}: the orders database rejected the query")


def _answer(messages, info):
    """The finish-up request (tether asks the agent's model directly, without tools)."""
    from pydantic_ai.messages import ModelResponse, TextPart

    assert not info.function_tools
    return ModelResponse(parts=[TextPart("The orders database is down.")])


async def test_a_streamed_run_is_guarded_and_recorded(tmp_path):
    model = FunctionModel(_answer, stream_function=_stubborn_stream, model_name="streamer")
    agent = Agent(model, instructions="Support agent.", tools=[order_status],
                  capabilities=[TetherGuard(store=tmp_path / "s.db")])
    async with agent.run_stream("Where is A100?") as result:
        output = await result.get_output()
    assert output == "The orders database is down."
    [run] = SQLiteStore(tmp_path / "s.db").list_runs()
    assert run["status"] == "loop_aborted" and run["model"] == "streamer"
    events = SQLiteStore(tmp_path / "s.db").events(run["run_id"])
    assert [e["ok"] for e in events if e["type"] == "tool_result"][:3] == [False, False, False]


def test_a_tool_declared_side_effecting_goes_through_the_ledger(tmp_path):
    done = []

    def create_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        done.append((order_id, amount))
        return f"refunded {amount} on {order_id}"

    def script(messages, info):
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

        if any(isinstance(p, ToolReturnPart) for m in messages for p in getattr(m, "parts", [])):
            return ModelResponse(parts=[TextPart("Refunded.")])
        return ModelResponse(parts=[ToolCallPart("create_refund", {"order_id": "A100", "amount": 100}, "r1")])

    agent = Agent(FunctionModel(script, model_name="refunder"), tools=[create_refund],
                  capabilities=[TetherGuard(store=tmp_path / "l.db", side_effects=["create_refund"])])
    assert agent.run_sync("Refund A100").output == "Refunded."
    assert done == [("A100", 100)]
    store = SQLiteStore(tmp_path / "l.db")
    [run] = store.list_runs()
    events = store.events(run["run_id"])
    effects = [e["status"] for e in events if e["type"] == "side_effect"]
    assert effects[:1] == ["intent"] and len(effects) >= 2         # intent before, outcome after
    started = next(e for e in events if e["type"] == "run_started")
    assert {s["name"]: s.get("side_effect") for s in started["tool_specs"]}["create_refund"] is True
