"""A loopback OpenAI-compatible model API that keeps asking for the same failing
tool call: the LLM gateway's tests and benchmark run agents against it.

``python llm_upstream.py PORT [--delay SECONDS]``. Serves
``POST /v1/chat/completions`` and ``POST /v1/responses``, streamed (SSE) or
not. A request that offers tools is answered with a call of
``fetch_report({"report_id": "r-7"})``, every time; a request without tools
(the gateway's finish-up) with a short text. ``GET /v1/stats`` counts the
requests (``with_tools``: the agent's own). HTTP/1.1 keep-alive on plain
asyncio streams, so the upstream is not what a benchmark measures.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time

STATS = {"total": 0, "with_tools": 0, "without_tools": 0}
DELAY = 0.0


def chat(body: dict, n: int) -> tuple[dict, list[dict]]:
    model = body.get("model", "stubborn")
    base = {"id": f"chatcmpl-{n}", "created": 1700000000, "model": model}
    if body.get("tools"):
        call = {"id": f"call_{n}", "type": "function",
                "function": {"name": "fetch_report", "arguments": '{"report_id": "r-7"}'}}
        whole = {**base, "object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]},
             "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 50, "completion_tokens": 10,
                                                        "total_tokens": 60}}
        chunks = [
            {**base, "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": None, "tool_calls": [
                    {"index": 0, "id": call["id"], "type": "function",
                     "function": {"name": "fetch_report", "arguments": ""}}]}, "finish_reason": None}]},
            {**base, "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"report_id": '}}]},
                 "finish_reason": None}]},
            {**base, "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"r-7"}'}}]},
                 "finish_reason": None}]},
            {**base, "object": "chat.completion.chunk", "choices": [
                {"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
        return whole, chunks
    text = "I could not fetch report r-7: access was denied each time. Nothing else was done."
    whole = {**base, "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 60, "completion_tokens": 20, "total_tokens": 80}}
    chunks = [{**base, "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"role": "assistant", "content": text[:20]}, "finish_reason": None}]},
              {**base, "object": "chat.completion.chunk", "choices": [
                  {"index": 0, "delta": {"content": text[20:]}, "finish_reason": None}]},
              {**base, "object": "chat.completion.chunk", "choices": [
                  {"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    return whole, chunks


def responses(body: dict, n: int) -> tuple[dict, list[dict]]:
    if body.get("tools"):
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "fetch_report",
                "arguments": '{"report_id": "r-7"}', "status": "completed"}
    else:
        item = {"type": "message", "id": f"msg_{n}", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "I could not fetch report r-7.", "annotations": []}]}
    whole = {"id": f"resp_{n}", "object": "response", "created_at": 1700000000, "status": "completed",
             "model": body.get("model", "stubborn"), "output": [item], "parallel_tool_calls": True,
             "tool_choice": "auto", "tools": body.get("tools") or [], "error": None, "incomplete_details": None,
             "usage": {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60,
                       "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
    events = [{"type": "response.created", "response": {**whole, "status": "in_progress", "output": []}},
              {"type": "response.output_item.added", "output_index": 0, "item": item},
              {"type": "response.output_item.done", "output_index": 0, "item": item},
              {"type": "response.completed", "response": whole}]
    return whole, [{**e, "sequence_number": i} for i, e in enumerate(events)]


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if method == "GET" and path.endswith("/stats"):
                await send(writer, json.dumps(STATS).encode())
                continue
            if method != "POST":
                await send(writer, b'{"error": {"message": "not found"}}', status="404 Not Found")
                continue
            request = json.loads(body)
            STATS["total"] += 1
            STATS["with_tools" if request.get("tools") else "without_tools"] += 1
            if DELAY:
                await asyncio.sleep(DELAY)
            make = responses if path.endswith("/responses") else chat
            n = int.from_bytes(hashlib.blake2b(body, digest_size=4).digest(), "big")   # same request, same answer
            whole, chunks = make(request, n)
            if request.get("stream"):
                parts = []
                for c in chunks:
                    event = f"event: {c['type']}\n" if "type" in c else ""
                    parts.append((event + "data: " + json.dumps(c) + "\n\n").encode())
                if make is chat:
                    parts.append(b"data: [DONE]\n\n")
                await send_chunked(writer, parts)
            else:
                await send(writer, json.dumps(whole).encode())
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def send(writer: asyncio.StreamWriter, body: bytes, status: str = "200 OK") -> None:
    writer.write(f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
                 "x-upstream: loopback\r\n\r\n".encode() + body)
    await writer.drain()


async def send_chunked(writer: asyncio.StreamWriter, parts: list[bytes]) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    for p in parts:
        writer.write(f"{len(p):x}\r\n".encode() + p + b"\r\n")
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def main(port: int) -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    print(f"listening on {port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if "--delay" in sys.argv:
        DELAY = float(sys.argv[sys.argv.index("--delay") + 1])
    try:
        asyncio.run(main(int(sys.argv[1])))
    except KeyboardInterrupt:
        pass
    _ = time
