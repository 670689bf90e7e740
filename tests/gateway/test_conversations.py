"""The LLM gateway's conversations, in process: only what is new in a request is
read, and the request hash kept up to date equals the one computed from scratch."""

from __future__ import annotations

import asyncio
import json

from tether.gateway.conversations import Conversations, RequestHasher
from tether.gateway.openai_format import CHAT, RESPONSES, history, messages_from
from tether.guards.stacks import gateway_stack
from tether.messages import Message, ToolCallRequest, ToolSpec
from tether.models import ModelRequest
from tether.store import SQLiteStore

TOOLS = [ToolSpec(name="fetch_report", description="Fetch a report.", parameters={"type": "object"})]


def test_the_kept_hash_equals_the_hash_from_scratch():
    messages = [Message(role="system", content="Tu résumes des rapports."),
                Message(role="user", content="请总结报告 r-7"),
                Message(role="assistant", tool_calls=[ToolCallRequest(id="c1", name="fetch_report",
                                                                      arguments={"id": "r-7", "n": 1.5e16})]),
                Message(role="tool", tool_call_id="c1", content='{"ok": true}', name="fetch_report")]
    hint = Message(role="system", content="[tether] the same call failed twice")
    tools_json = json.dumps([t.model_dump(mode="json") for t in TOOLS], ensure_ascii=False, sort_keys=True,
                            separators=(",", ":"))
    hasher = RequestHasher()
    for n in range(len(messages) + 1):
        hasher.reset(messages[:n])
        assert hasher.hexdigest([], tools_json) == ModelRequest(messages=messages[:n], tools=TOOLS).canonical_hash()
        assert hasher.hexdigest([hint], "[]") == ModelRequest(messages=[*messages[:n], hint]).canonical_hash()
    grown = RequestHasher()
    for m in messages:
        grown.extend([m])
    assert grown.hexdigest([], "[]") == ModelRequest(messages=messages).canonical_hash()


def chat(n: int) -> list[dict]:
    """A chat history with ``n`` tool rounds."""
    items = [{"role": "system", "content": "You fetch reports."}, {"role": "user", "content": "Fetch r-7."}]
    for i in range(n):
        items.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": "fetch_report",
                                                                  "arguments": json.dumps({"page": i})}}]})
        items.append({"role": "tool", "tool_call_id": f"call_{i}", "content": json.dumps({"page": i, "text": "..."})})
    return items


def test_each_request_reads_only_what_is_new_and_a_rewritten_history_from_the_start(tmp_path, monkeypatch):
    import tether.gateway.conversations as conversations_module

    read: list[int] = []

    def counting(kind, items):
        read.append(len(items))
        return messages_from(kind, items)

    monkeypatch.setattr(conversations_module, "messages_from", counting)

    async def scenario() -> tuple[list[str], str]:
        convs = Conversations(guards=gateway_stack("on"), label="on", store=SQLiteStore(tmp_path / "runs.db"),
                              upstream="http://127.0.0.1:9/v1")
        hashes = []
        for n in range(4):
            items = chat(n)
            conv = await convs.get("conv-1", CHAT, items, "m")
            decided = await conv.before(CHAT, items, TOOLS, "m")
            assert decided.action == "forward"
            conv.record_request(TOOLS, "m", {}, decided.hints)
            hashes.append(conv.session.trajectory.events[-1].request_hash)
            await convs.commit(conv)
        shorter = chat(1)                      # the client compacted its history
        decided = await conv.before(CHAT, shorter, TOOLS, "m")
        conv.record_request(TOOLS, "m", {}, decided.hints)
        last = conv.session.trajectory.events[-1].request_hash
        convs.close("test over")
        return hashes, last

    hashes, last = asyncio.run(scenario())
    assert read[:4] == [2, 2, 2, 2]            # 2 items new per request, never the whole history again
    assert read[4] == 4                        # a shorter history is read from its start
    for n, h in enumerate(hashes):
        expected = ModelRequest(messages=messages_from(CHAT, chat(n)), tools=TOOLS).canonical_hash()
        assert h == expected
    assert last == ModelRequest(messages=messages_from(CHAT, chat(1)), tools=TOOLS).canonical_hash()
    store = SQLiteStore(tmp_path / "runs.db")
    run = store.get_run("conv-1")
    assert run["status"] == "error" and run["error_kind"] == "aborted"
    assert [e["type"] for e in store.events("conv-1")].count("tool_result") == 3


def test_the_responses_history_is_its_instructions_then_its_input():
    body = {"instructions": "Be brief.", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fetch r-7."}]},
        {"type": "function_call", "call_id": "c1", "name": "fetch_report", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "fetch_report", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"}]}
    items = history(RESPONSES, body)
    assert len(items) == 5
    messages = messages_from(RESPONSES, items)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool"]
    assert [c.id for c in messages[2].tool_calls] == ["c1", "c2"]
    assert history(RESPONSES, {"input": "hi"}) == [{"role": "user", "content": "hi"}]
