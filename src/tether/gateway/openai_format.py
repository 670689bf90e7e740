"""Reading and writing the two OpenAI-compatible wire formats the LLM gateway
serves: Chat Completions and Responses. Only what the guards and the record
need is read; nothing here touches bytes the gateway passes through.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from ..messages import Decision, DecisionKind, Message, ToolCallRequest, ToolSpec, Usage

CHAT, RESPONSES = "chat", "responses"


def _text(content: Any) -> str:
    """A message's content as text (a list of parts: its text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict):
                t = part.get("text")
                if isinstance(t, str):
                    out.append(t)
                elif part.get("type"):
                    out.append(f"[{part.get('type')}]")
            elif isinstance(part, str):
                out.append(part)
        return "\n".join(out)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str) or not raw.strip():
        return {}, None
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {}, raw[:2000]
    return (parsed, None) if isinstance(parsed, dict) else ({}, raw[:2000])


_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool",
          "function": "tool"}


def history(kind: str, body: dict[str, Any]) -> list[Any]:
    """The conversation a request carries, as sent: Chat's messages; for Responses,
    the instructions (as a system item) and the input items."""
    if kind == CHAT:
        items = body.get("messages")
        return items if isinstance(items, list) else []
    out: list[Any] = []
    if isinstance(body.get("instructions"), str):
        out.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        out.append({"role": "user", "content": items})
    elif isinstance(items, list):
        out.extend(items)
    return out


def messages_from(kind: str, items: list[Any]) -> list[Message]:
    """Items of a history (:func:`history`, or a slice of it: only what is new) as tether messages."""
    out: list[Message] = []
    if kind == CHAT:
        for m in items:
            if not isinstance(m, dict):
                continue
            role = _ROLES.get(str(m.get("role")), "user")
            calls = []
            for i, c in enumerate(m.get("tool_calls") or []):
                if isinstance(c, dict) and isinstance(c.get("function"), dict):
                    args, raw = _arguments(c["function"].get("arguments"))
                    calls.append(ToolCallRequest(id=str(c.get("id") or f"call_{len(out)}_{i}"),
                                                 name=str(c["function"].get("name") or ""), arguments=args,
                                                 raw_arguments=raw))
            out.append(Message(role=role, content=_text(m.get("content")), tool_calls=calls,  # type: ignore[arg-type]
                               tool_call_id=str(m["tool_call_id"]) if m.get("tool_call_id") else None,
                               name=m.get("name") if isinstance(m.get("name"), str) else None))
        return out
    for item in items:
        if not isinstance(item, dict):
            continue
        kind_ = item.get("type")
        if kind_ == "function_call":
            args, raw = _arguments(item.get("arguments"))
            call = ToolCallRequest(id=str(item.get("call_id") or item.get("id") or f"call_{len(out)}"),
                                   name=str(item.get("name") or ""), arguments=args, raw_arguments=raw)
            if out and out[-1].role == "assistant" and out[-1].tool_calls and not out[-1].content:
                out[-1] = out[-1].model_copy(update={"tool_calls": [*out[-1].tool_calls, call]})
            else:
                out.append(Message(role="assistant", tool_calls=[call]))
        elif kind_ == "function_call_output":
            output = item.get("output")
            out.append(Message(role="tool", tool_call_id=str(item.get("call_id") or ""),
                               content=output if isinstance(output, str) else _text(output)))
        elif "role" in item:
            out.append(Message(role=_ROLES.get(str(item["role"]), "user"), content=_text(item.get("content"))))  # type: ignore[arg-type]
    return out


def opening(kind: str, items: list[Any]) -> list[str]:
    """``role:text`` of a history's system messages up to its first user message, and of that one
    (read from the items as sent: this runs for every request)."""
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if kind == CHAT:
            role = _ROLES.get(str(item.get("role")), "user")
        elif item.get("type") in ("function_call", "function_call_output") or "role" not in item:
            continue
        else:
            role = _ROLES.get(str(item["role"]), "user")
        if role in ("system", "user"):
            out.append(f"{role}:{_text(item.get('content'))}")
        if role == "user":
            break
    return out


def messages_of(kind: str, body: dict[str, Any]) -> list[Message]:
    """The whole conversation a request carries, as tether messages."""
    return messages_from(kind, history(kind, body))


def tools_of(kind: str, body: dict[str, Any]) -> list[ToolSpec]:
    specs = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        f = t.get("function") if kind == CHAT and isinstance(t.get("function"), dict) else t
        name = f.get("name")
        if isinstance(name, str) and name:
            params = f.get("parameters") if isinstance(f.get("parameters"), dict) else {"type": "object"}
            specs.append(ToolSpec(name=name, description=str(f.get("description") or ""), parameters=params))
    return specs


def _usage(kind: str, usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    keys = ("prompt_tokens", "completion_tokens") if kind == CHAT else ("input_tokens", "output_tokens")
    try:
        return Usage(input_tokens=int(usage.get(keys[0]) or 0), output_tokens=int(usage.get(keys[1]) or 0))
    except (TypeError, ValueError):
        return Usage()


def decision_of(kind: str, response: Any) -> tuple[Decision, Usage]:
    """What the model decided, from a whole (non-streamed) response body."""
    if not isinstance(response, dict):
        return Decision(kind=DecisionKind.FINAL, text=""), Usage()
    calls: list[ToolCallRequest] = []
    text = ""
    if kind == CHAT:
        choices = response.get("choices") or [{}]
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        message = message if isinstance(message, dict) else {}
        text = _text(message.get("content"))
        for i, c in enumerate(message.get("tool_calls") or []):
            if isinstance(c, dict) and isinstance(c.get("function"), dict):
                args, raw = _arguments(c["function"].get("arguments"))
                calls.append(ToolCallRequest(id=str(c.get("id") or f"call_{i}"), name=str(c["function"].get("name")),
                                             arguments=args, raw_arguments=raw))
    else:
        parts = []
        for item in response.get("output") or []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                args, raw = _arguments(item.get("arguments"))
                calls.append(ToolCallRequest(id=str(item.get("call_id") or item.get("id")), name=str(item.get("name")),
                                             arguments=args, raw_arguments=raw))
            elif item.get("type") == "message":
                parts.append(_text(item.get("content")))
        text = "\n".join(p for p in parts if p)
    kind_ = DecisionKind.TOOL_CALLS if calls else DecisionKind.FINAL
    return Decision(kind=kind_, tool_calls=calls, text=text), _usage(kind, response.get("usage"))


class StreamReader:
    """Rebuilds a streamed response (SSE) from its chunks, as they pass."""

    def __init__(self, kind: str):
        self.kind = kind
        self.buffer = b""
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Any = None
        self.final: Any = None        # Responses: the response.completed event's response
        self.ended = False            # the stream's last event has passed ([DONE], response.completed)

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        while b"\n\n" in self.buffer:
            event, self.buffer = self.buffer.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    self._data(line[5:].strip())

    def _data(self, data: bytes) -> None:
        if data == b"[DONE]":
            self.ended = True
            return
        if not data:
            return
        try:
            obj = json.loads(data)
        except ValueError:
            return
        if not isinstance(obj, dict):
            return
        if self.kind == RESPONSES:
            if obj.get("type") in ("response.completed", "response.incomplete", "response.failed"):
                self.final = obj.get("response")
                self.ended = True
            return
        if obj.get("usage"):
            self.usage = obj["usage"]
        for choice in obj.get("choices") or []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            if isinstance(delta.get("content"), str):
                self.text.append(delta["content"])
            for c in delta.get("tool_calls") or []:
                if not isinstance(c, dict):
                    continue
                slot = self.calls.setdefault(int(c.get("index") or 0), {"id": None, "name": "", "arguments": ""})
                slot["id"] = c.get("id") or slot["id"]
                f = c.get("function") or {}
                slot["name"] += f.get("name") or ""
                slot["arguments"] += f.get("arguments") or ""

    def decision(self) -> tuple[Decision, Usage]:
        if self.kind == RESPONSES:
            return decision_of(RESPONSES, self.final or {})
        calls = []
        for i in sorted(self.calls):
            c = self.calls[i]
            args, raw = _arguments(c["arguments"])
            calls.append(ToolCallRequest(id=str(c["id"] or f"call_{i}"), name=c["name"], arguments=args,
                                         raw_arguments=raw))
        kind_ = DecisionKind.TOOL_CALLS if calls else DecisionKind.FINAL
        return Decision(kind=kind_, tool_calls=calls, text="".join(self.text)), _usage(CHAT, self.usage)


# -- answers the gateway writes itself ----------------------------------------------------------
def with_hint(kind: str, body: dict[str, Any], hint: str) -> dict[str, Any]:
    """The request with the guards' hint as one more system message at the end."""
    if kind == CHAT:
        return {**body, "messages": [*body.get("messages", []), {"role": "system", "content": hint}]}
    items = body.get("input")
    items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items or [])
    return {**body, "input": [*items, {"role": "system", "content": hint}]}


def finish_up_request(kind: str, body: dict[str, Any], instruction: str) -> dict[str, Any]:
    """The request for the finish-up answer: the same conversation, no tools, not streamed."""
    out = with_hint(kind, body, instruction)
    for key in ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call", "stream",
                "stream_options"):
        out.pop(key, None)
    return out


def final_response(kind: str, model: str, text: str) -> dict[str, Any]:
    now = int(time.time())
    if kind == CHAT:
        return {"id": f"chatcmpl-tether-{uuid.uuid4().hex[:16]}", "object": "chat.completion", "created": now,
                "model": model, "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                             "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}
    return {"id": f"resp_tether_{uuid.uuid4().hex[:16]}", "object": "response", "created_at": now,
            "status": "completed", "model": model, "error": None, "incomplete_details": None,
            "output": [_output_message(text)], "parallel_tool_calls": False, "tool_choice": "none", "tools": [],
            "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}


def _output_message(text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_tether_{uuid.uuid4().hex[:12]}", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n\n"


def final_stream(kind: str, model: str, text: str) -> Iterator[bytes]:
    """The same answer as server-sent events, in the format the client asked for."""
    whole = final_response(kind, model, text)
    if kind == CHAT:
        base = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"], "model": model}
        yield _sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                         "finish_reason": None}]})
        yield _sse({**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})
        yield _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        yield b"data: [DONE]\n\n"
        return
    item = whole["output"][0]
    part = item["content"][0]
    pending = {**whole, "status": "in_progress", "output": []}
    events = [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress",
                                                                          "content": []}},
        {"type": "response.content_part.added", "item_id": item["id"], "output_index": 0, "content_index": 0,
         "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0, "content_index": 0,
         "delta": text, "logprobs": []},
        {"type": "response.output_text.done", "item_id": item["id"], "output_index": 0, "content_index": 0,
         "text": text, "logprobs": []},
        {"type": "response.content_part.done", "item_id": item["id"], "output_index": 0, "content_index": 0,
         "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": whole},
    ]
    for n, event in enumerate(events):
        yield b"event: " + event["type"].encode() + b"\n" + _sse({**event, "sequence_number": n})
