"""OpenTelemetry: tether runs as GenAI spans, and GenAI spans as tether runs.

Export (``tether run/eval --otel``, ``TETHER_OTEL=1``, ``tether runs
export-otel RUN``) follows the OpenTelemetry GenAI semantic conventions: a run
is an ``invoke_agent`` span; each model request a ``chat`` span (child of it)
with ``gen_ai.request.model`` and ``gen_ai.usage.input_tokens`` /
``output_tokens``; each tool call an ``execute_tool`` span with
``gen_ai.tool.name`` and ``gen_ai.tool.call.id``; guard trips and approvals are
span events (``tether.guard_tripped``, ``tether.approval``) on the span they
happened in. Message contents, tool arguments and results (and guard messages,
which quote arguments) are recorded only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is true, as the
conventions ask. Spans go over OTLP/HTTP protobuf to
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``
(the exporter reads them).

Import (``tether runs import --otel FILE``): OTLP JSON (a file exporter's or
``MessageToJson`` of an export request; one document or JSON Lines) written by
any GenAI instrumentation: each trace becomes a run of kind ``import``, its
``chat`` spans the model requests and decisions (from ``gen_ai.input.messages``
/ ``gen_ai.output.messages``), its ``execute_tool`` spans, or else the tool
calls the model made and the tool results the next request carried, the tool
calls. Needs ``pip install 'tether[otel]'``; imported lazily.
"""

from __future__ import annotations

import atexit
import base64
import json
import re
import os
import time
from typing import Any, Callable, Iterable

from ..errors import CaseFileError, FileLocation, UsageError
from ..events import (
    ApprovalEvent,
    GuardTripped,
    ModelDecisionEvent,
    ModelRequestEvent,
    RunFinished,
    RunResumed,
    RunStarted,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
    UserMessage,
)
from ..messages import DecisionKind, Message, ToolCallRequest, Usage

INSTALL_HINT = "OpenTelemetry export needs the otel extra: pip install 'tether[otel]'"
CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def capture_content() -> bool:
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("true", "1", "yes", "span_only", "span_and_event")


def _require() -> Any:
    try:
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return sdk_trace


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _parts(m: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if m.role == "tool":
        parts.append({"type": "tool_call_response", "id": m.tool_call_id, "response": m.content})
    elif m.content:
        parts.append({"type": "text", "content": m.content})
    for c in m.tool_calls:
        parts.append({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments})
    return {"role": m.role, "parts": parts}


def _model_and_provider(model: str, provider: Any = None) -> tuple[str, str]:
    """(the requested model, the provider): a framework agent's request records both
    (``params.provider``); tether's own spec strings are ``provider:model``."""
    if isinstance(provider, str) and provider:
        return model, provider
    return model, model.split(":", 1)[0]


class SpanWriter:
    """Turns one run's events into spans, as they come (live) or replayed (export).
    ``clock(event)`` gives each event's time in ns since the epoch."""

    def __init__(self, tracer: Any, clock: Callable[[Any], int], *, content: bool | None = None):
        self.tracer = tracer
        self.clock = clock
        self.content = capture_content() if content is None else content
        self.agent: Any = None
        self.ctx: Any = None
        self.chat: dict[str, Any] = {}           # role -> open chat span
        self.tools: dict[str, Any] = {}          # call id -> open tool span
        self.sent: dict[str, list[Message]] = {}
        self.model = ""

    def _start_agent(self, run_id: str, model: str, attrs: dict[str, Any], at: int) -> None:
        from opentelemetry import trace

        self.model = model
        self.agent = self.tracer.start_span(f"invoke_agent {model}", kind=trace.SpanKind.INTERNAL, start_time=at,
                                            attributes={"gen_ai.operation.name": "invoke_agent",
                                                        "gen_ai.agent.name": model, "gen_ai.request.model": model,
                                                        "gen_ai.conversation.id": run_id, "tether.run_id": run_id,
                                                        **attrs})
        self.ctx = trace.set_span_in_context(self.agent)

    def on(self, e: Any, *, run_id: str = "", model: str = "") -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        at = self.clock(e)
        if isinstance(e, RunStarted):
            attrs = {"tether.kind": e.kind, "tether.guards": e.guards, "tether.trial": e.trial}
            if e.case_id:
                attrs["tether.case_id"] = e.case_id
            if e.eval_id:
                attrs["tether.eval_id"] = e.eval_id
            self._start_agent(e.run_id, e.model, attrs, at)
            return
        if self.agent is None:                  # a resumed run: its spans start here
            self._start_agent(run_id, model or "agent", {"tether.resumed": True}, at)
        if isinstance(e, ModelRequestEvent):
            full = self.sent.get(e.role, [])[:e.keep] + list(e.messages)
            self.sent[e.role] = full
            model, provider = _model_and_provider(e.model or self.model, (e.params or {}).get("provider"))
            attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                                     "gen_ai.provider.name": provider,
                                     "tether.role": e.role, "tether.step": e.step}
            if self.content:
                attrs["gen_ai.input.messages"] = _json([_parts(m) for m in full])
            self.chat[e.role] = self.tracer.start_span(f"chat {e.model or self.model}", context=self.ctx,
                                                       kind=trace.SpanKind.CLIENT, start_time=at, attributes=attrs)
        elif isinstance(e, ModelDecisionEvent):
            span = self.chat.pop(e.role, None)
            if span is None:
                return
            span.set_attribute("gen_ai.usage.input_tokens", e.usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", e.usage.output_tokens)
            span.set_attribute("gen_ai.response.finish_reasons",
                               ["tool_calls" if e.kind == DecisionKind.TOOL_CALLS else "stop"])
            if e.usage.cost:
                span.set_attribute("tether.cost", e.usage.cost)
            if self.content:
                msg = Message(role="assistant", content=e.text, tool_calls=e.tool_calls)
                span.set_attribute("gen_ai.output.messages", _json([_parts(msg) | {
                    "finish_reason": "tool_calls" if e.tool_calls else "stop"}]))
            span.end(end_time=at)
        elif isinstance(e, ToolCallEvent):
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": e.tool,
                     "gen_ai.tool.call.id": e.call_id, "gen_ai.tool.type": "function", "tether.step": e.step}
            if self.content:
                attrs["gen_ai.tool.call.arguments"] = _json(e.arguments)
            self.tools[e.call_id] = self.tracer.start_span(f"execute_tool {e.tool}", context=self.ctx,
                                                           kind=trace.SpanKind.INTERNAL, start_time=at,
                                                           attributes=attrs)
        elif isinstance(e, ToolResultEvent):
            span = self.tools.pop(e.call_id, None)
            if span is None:
                return
            span.set_attribute("tether.tool.source", e.source)
            if self.content:
                span.set_attribute("gen_ai.tool.call.result", _json(e.data) if e.ok else (e.error or ""))
            if not e.ok:
                span.set_attribute("error.type", e.error_type or "tool_error")
                span.set_status(Status(StatusCode.ERROR))
            span.end(end_time=at)
        elif isinstance(e, GuardTripped):
            attrs = {"tether.guard": e.guard, "tether.guard.rule": e.rule, "tether.guard.verdict": e.verdict,
                     "tether.step": e.step}
            attrs.update({f"tether.guard.{k}": v for k, v in e.numbers.items() if isinstance(v, (int, float))})
            if self.content:
                attrs["tether.guard.message"] = e.message
            self._current().add_event("tether.guard_tripped", attributes=attrs, timestamp=at)
        elif isinstance(e, ApprovalEvent):
            self._current().add_event("tether.approval", timestamp=at, attributes={
                "tether.approval.action": e.action, "tether.approval.id": e.approval_id,
                "gen_ai.tool.name": e.tool})
        elif isinstance(e, RunResumed):
            self.agent.add_event("tether.resumed", timestamp=at, attributes={"tether.checkpoint": e.checkpoint})
        elif isinstance(e, RunFinished):
            for span in list(self.tools.values()) + list(self.chat.values()):
                span.end(end_time=at)
            self.tools.clear()
            self.chat.clear()
            self.agent.set_attribute("tether.status", str(e.status))
            self.agent.set_attribute("gen_ai.usage.input_tokens", e.usage.input_tokens)
            self.agent.set_attribute("gen_ai.usage.output_tokens", e.usage.output_tokens)
            if e.status == "error":
                self.agent.set_attribute("error.type", e.error_kind or "error")
                self.agent.set_status(Status(StatusCode.ERROR, e.error or ""))
            self.agent.end(end_time=at)
            self.agent = None

    def _current(self) -> Any:
        if self.tools:
            return list(self.tools.values())[-1]
        if self.chat:
            return list(self.chat.values())[-1]
        return self.agent


# -- export --------------------------------------------------------------------------
def _provider(exporter: Any = None, *, batch: bool = True) -> Any:
    sdk_trace = _require()
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    if exporter is None:
        exporter = _otlp_exporter()
    provider = sdk_trace.TracerProvider(resource=Resource.create({"service.name": os.environ.get(
        "OTEL_SERVICE_NAME", "tether")}))
    provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    return provider


def _otlp_exporter() -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return OTLPSpanExporter()


def live_requested(flag: bool = False) -> bool:
    return flag or os.environ.get("TETHER_OTEL", "").strip().lower() in ("1", "true", "yes")


_LIVE: dict[str, Any] = {}


def enable_live(flag: bool = False, *, exporter: Any = None) -> bool:
    """Export every run of this process live (``--otel`` or ``TETHER_OTEL=1``);
    spans are flushed when the process exits. Returns whether it is on."""
    if not live_requested(flag):
        return False
    if _LIVE:
        return True
    from ..runtime import session as session_mod

    provider = _provider(exporter)
    tracer = provider.get_tracer("tether")
    writers: dict[str, SpanWriter] = {}

    def listener(session: Any, event: Any) -> None:
        try:
            w = writers.get(session.run_id)
            if w is None:
                w = writers[session.run_id] = SpanWriter(tracer, lambda e: time.time_ns())
            w.on(event, run_id=session.run_id, model=session.model_name)
            if isinstance(event, RunFinished):
                writers.pop(session.run_id, None)
        except Exception:            # telemetry never breaks a run
            pass

    session_mod.EVENT_LISTENERS.append(listener)
    session_mod.RECORDED_LISTENERS.append(export_live)
    _LIVE.update(provider=provider, listener=listener)
    atexit.register(provider.shutdown)
    return True


def disable_live() -> None:
    """Stop live export and flush (tests; atexit does it for the CLI)."""
    if not _LIVE:
        return
    from ..runtime import session as session_mod

    if _LIVE["listener"] in session_mod.EVENT_LISTENERS:
        session_mod.EVENT_LISTENERS.remove(_LIVE["listener"])
    if export_live in session_mod.RECORDED_LISTENERS:
        session_mod.RECORDED_LISTENERS.remove(export_live)
    _LIVE["provider"].shutdown()
    _LIVE.clear()


def export_live(t: Trajectory) -> bool:
    """With live export on (``--otel``), export a run recorded elsewhere (a Ray
    worker's trial, once the driver stored it) through the live provider."""
    if not _LIVE:
        return False
    try:
        base = time.time_ns() - int((t.events[-1].at_ms if t.events else 0) * 1e6)
        writer = SpanWriter(_LIVE["provider"].get_tracer("tether"), lambda e: base + int(e.at_ms * 1e6))
        started = t.started
        for e in t:
            writer.on(e, run_id=started.run_id if started else "", model=started.model if started else "")
    except Exception:            # telemetry never breaks an eval
        return False
    return True


def export_trajectory(t: Trajectory, *, exporter: Any = None, start_ns: int | None = None,
                      content: bool | None = None) -> int:
    """Export a recorded run's spans (timed from its events' ``at_ms``); returns the span count."""
    provider = _provider(exporter, batch=False)
    counted = _Counter()
    provider.add_span_processor(counted)
    base = start_ns if start_ns is not None else time.time_ns() - int((t.events[-1].at_ms if t.events else 0) * 1e6)
    writer = SpanWriter(provider.get_tracer("tether"), lambda e: base + int(e.at_ms * 1e6), content=content)
    started = t.started
    for e in t:
        writer.on(e, run_id=started.run_id if started else "", model=started.model if started else "")
    if writer.agent is not None:               # an unfinished run: close what is open
        end = base + int((t.events[-1].at_ms if t.events else 0) * 1e6)
        for span in list(writer.tools.values()) + list(writer.chat.values()) + [writer.agent]:
            span.end(end_time=end)
    provider.shutdown()
    return counted.n


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        return None

    def on_end(self, span: Any) -> None:
        self.n += 1

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def _on_ending(self, span: Any) -> None:   # newer SDKs call this
        return None


def otlp_json(spans: Iterable[Any]) -> str:
    """Finished SDK spans as an OTLP JSON export request (ids hex, as the OTLP/JSON spec says)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from google.protobuf.json_format import MessageToDict

    doc = MessageToDict(encode_spans(list(spans)))
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if sp.get(key):
                        sp[key] = base64.b64decode(sp[key]).hex()
    return json.dumps(doc, ensure_ascii=False)


# -- import --------------------------------------------------------------------------
def _value(v: dict[str, Any]) -> Any:
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int(v["intValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: _value(kv.get("value", {})) for kv in v["kvlistValue"].get("values", [])}
    return None


def _id(raw: str | None) -> str:
    if not raw:
        return ""
    if all(c in "0123456789abcdefABCDEF" for c in raw) and len(raw) in (16, 32):
        return raw.lower()
    try:
        return base64.b64decode(raw).hex()
    except Exception:
        return raw


def read_spans(text: str, *, path: str = "<otlp>") -> list[dict[str, Any]]:
    """Spans of an OTLP JSON document (or JSON Lines of them) as plain dicts."""
    docs: list[Any] = []
    from ..inputs import loads_json

    stripped = text.strip()
    try:
        docs = [loads_json(stripped, path)] if stripped else []
    except CaseFileError:
        for lineno, line in enumerate(text.split("\n"), 1):
            if line.strip():
                docs.append(loads_json(line, path, line=lineno))
    spans = []
    for doc in docs:
        if not isinstance(doc, dict) or "resourceSpans" not in doc:
            raise CaseFileError([(FileLocation(path), "not OTLP JSON: no resourceSpans")])
        for rs in doc["resourceSpans"]:
            resource = {kv["key"]: _value(kv.get("value", {})) for kv in (rs.get("resource") or {}).get("attributes", [])}
            for ss in rs.get("scopeSpans", []) or rs.get("instrumentationLibrarySpans", []):
                for sp in ss.get("spans", []):
                    spans.append({
                        "trace_id": _id(sp.get("traceId")), "span_id": _id(sp.get("spanId")),
                        "parent": _id(sp.get("parentSpanId")), "name": sp.get("name", ""),
                        "start": int(sp.get("startTimeUnixNano", 0)), "end": int(sp.get("endTimeUnixNano", 0)),
                        "attributes": {kv["key"]: _value(kv.get("value", {})) for kv in sp.get("attributes", [])},
                        "events": [{"name": ev.get("name", ""), "time": int(ev.get("timeUnixNano", 0)),
                                    "attributes": {kv["key"]: _value(kv.get("value", {}))
                                                   for kv in ev.get("attributes", [])}}
                                   for ev in sp.get("events", [])],
                        "error": (sp.get("status") or {}).get("code") in ("STATUS_CODE_ERROR", 2),
                        "resource": resource,
                    })
    if not spans:
        raise CaseFileError([(FileLocation(path), "no spans in this file")])
    return spans


def _op(span: dict[str, Any]) -> str:
    op = span["attributes"].get("gen_ai.operation.name")
    if op:
        return str(op)
    return span["name"].split(" ", 1)[0]


def _messages(raw: Any) -> list[Message]:
    """GenAI semconv messages (role + parts) as tether messages."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return []
    out: list[Message] = []
    for m in raw or []:
        role = m.get("role", "user")
        role = role if role in ("system", "user", "assistant", "tool") else "user"
        parts = m.get("parts")
        if parts is None:                       # older shape: {"role", "content"}
            out.append(Message(role=role, content=str(m.get("content") or "")))
            continue
        texts, calls, responses = [], [], []
        for p in parts:
            kind = p.get("type")
            if kind == "text":
                texts.append(str(p.get("content", "")))
            elif kind == "tool_call":
                args = p.get("arguments")
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except json.JSONDecodeError:
                        args = {"_raw": args}
                calls.append(ToolCallRequest(id=str(p.get("id") or f"call_{len(calls)}"), name=str(p.get("name", "")),
                                             arguments=args if isinstance(args, dict) else {"value": args}))
            elif kind == "tool_call_response":
                responses.append(p)
        if responses:
            for p in responses:
                resp = p.get("response")
                out.append(Message(role="tool", tool_call_id=str(p.get("id") or ""),
                                   content=resp if isinstance(resp, str) else json.dumps(resp, ensure_ascii=False)))
        else:
            out.append(Message(role=role, content="\n".join(texts), tool_calls=calls))
    return out


def _result_of(content: str) -> tuple[bool, Any, str | None]:
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        data = content
    low = content.lower() if isinstance(content, str) else ""
    failed = low.startswith("error") or (isinstance(data, dict) and (data.get("ok") is False or "error" in data))
    return (not failed, None if failed else data, content if failed else None)


_OI_INDEX = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_OI_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)$")


def _openinference_messages(attrs: dict[str, Any], which: str) -> list[dict[str, Any]]:
    """OpenInference's flattened ``llm.{input,output}_messages.N.message.*`` as GenAI semconv messages."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = _OI_INDEX.match(key)
        if m is None or m.group(1) != which:
            continue
        msg = found.setdefault(int(m.group(2)), {"calls": {}})
        rest = m.group(3)
        call = _OI_CALL.match(rest)
        if call is not None:
            msg["calls"].setdefault(int(call.group(1)), {})[call.group(2)] = value
        elif rest in ("role", "content", "tool_call_id", "name"):
            msg[rest] = value
    out = []
    for _, msg in sorted(found.items()):
        role = str(msg.get("role") or "user")
        if role == "tool":
            out.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": str(msg.get("tool_call_id") or ""),
                                                   "response": str(msg.get("content") or "")}]})
            continue
        parts: list[dict[str, Any]] = [{"type": "text", "content": str(msg["content"])}] if msg.get("content") else []
        for _, c in sorted(msg["calls"].items()):
            parts.append({"type": "tool_call", "id": c.get("id"), "name": c.get("function.name", ""),
                          "arguments": c.get("function.arguments") or "{}"})
        out.append({"role": role, "parts": parts})
    return out


def _from_openinference(spans: list[dict[str, Any]]) -> None:
    """OpenInference spans (Phoenix / Arize instrumentations): LLM spans read as
    GenAI chat spans (messages, model, provider, usage); tool results come from
    the next LLM span's input messages, as with chat-only GenAI traces."""
    for sp in spans:
        a = sp["attributes"]
        if str(a.get("openinference.span.kind", "")).upper() != "LLM" or a.get("gen_ai.operation.name"):
            continue
        outputs = _openinference_messages(a, "output")
        a.update({"gen_ai.operation.name": "chat",
                  "gen_ai.request.model": str(a.get("llm.model_name") or "unknown"),
                  "gen_ai.provider.name": str(a.get("llm.provider") or a.get("llm.system") or ""),
                  "gen_ai.input.messages": json.dumps(_openinference_messages(a, "input"), ensure_ascii=False),
                  "gen_ai.output.messages": json.dumps(outputs, ensure_ascii=False),
                  "gen_ai.usage.input_tokens": int(a.get("llm.token_count.prompt") or 0),
                  "gen_ai.usage.output_tokens": int(a.get("llm.token_count.completion") or 0),
                  "tether.instrumentation": "openinference"})
        if a.get("llm.finish_reason"):
            a["gen_ai.response.finish_reasons"] = [str(a["llm.finish_reason"])]


def trajectories_from_spans(spans: list[dict[str, Any]]) -> list[Trajectory]:
    """One run per trace that has GenAI chat spans (OpenInference LLM spans count as chat spans)."""
    _from_openinference(spans)
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for sp in spans:
        by_trace.setdefault(sp["trace_id"], []).append(sp)
    out = []
    for trace_id, group in by_trace.items():
        group.sort(key=lambda s: (s["start"], s["end"]))
        chats = [s for s in group if _op(s) in ("chat", "text_completion", "generate_content")]
        if not chats:
            continue
        out.append(_trajectory(trace_id, group, chats))
    return out


def _trajectory(trace_id: str, group: list[dict[str, Any]], chats: list[dict[str, Any]]) -> Trajectory:
    t0 = group[0]["start"]

    def ms(ns: int) -> float:
        return round((ns - t0) / 1e6, 3)

    agent = next((s for s in group if _op(s) == "invoke_agent"), None)
    model = str((agent or chats[0])["attributes"].get("gen_ai.request.model")
                or (agent or {}).get("attributes", {}).get("gen_ai.agent.name") or chats[0]["name"].split(" ", 1)[-1])
    tool_spans = [s for s in group if _op(s) == "execute_tool"]
    resource = group[0]["resource"]
    run_id = str((agent or {}).get("attributes", {}).get("tether.run_id") or f"otel-{trace_id[:16]}")
    t = Trajectory()
    t.append(RunStarted(run_id=run_id, model=model, kind="import", at_ms=0.0,
                        case_id=(agent or {}).get("attributes", {}).get("tether.case_id"),
                        meta={"source": "otlp", "trace_id": trace_id,
                              "service": resource.get("service.name", ""),
                              "instrumentation": "openinference" if chats[0]["attributes"].get("tether.instrumentation")
                              else "execute_tool spans" if tool_spans else "chat spans"}))
    sent: list[Message] = []
    usage = Usage()
    pending: dict[str, ToolCallEvent] = {}
    results_done: set[str] = set()
    last_text, last_kind, step = "", None, 0
    first_user = True
    timeline = sorted(chats + tool_spans, key=lambda s: s["start"])
    for sp in timeline:
        a = sp["attributes"]
        if _op(sp) == "execute_tool":
            cid = str(a.get("gen_ai.tool.call.id") or f"call_{sp['span_id'][:8]}")
            call = pending.pop(cid, None)
            if call is None:
                args = a.get("gen_ai.tool.call.arguments")
                try:
                    args = json.loads(args) if isinstance(args, str) else (args or {})
                except json.JSONDecodeError:
                    args = {"_raw": args}
                call = t.append(ToolCallEvent(step=step, call_id=cid, tool=str(a.get("gen_ai.tool.name", "")),
                                              arguments=args if isinstance(args, dict) else {}, at_ms=ms(sp["start"])))
            result = a.get("gen_ai.tool.call.result")
            ok = not sp["error"]
            data: Any = None
            if isinstance(result, str):
                try:
                    data = json.loads(result)
                except json.JSONDecodeError:
                    data = result
            t.append(ToolResultEvent(step=step, call_id=cid, tool=call.tool, ok=ok, data=data if ok else None,
                                     error=None if ok else (str(result or a.get("error.type") or "error")),
                                     source="import", duration_ms=round((sp["end"] - sp["start"]) / 1e6, 3),
                                     at_ms=ms(sp["end"])))
            results_done.add(cid)
            continue
        # a chat span: first the tool results it carries for calls still open
        inputs = _messages(a.get("gen_ai.input.messages"))
        for m in inputs:
            if m.role == "tool" and m.tool_call_id in pending and m.tool_call_id not in results_done:
                call = pending.pop(m.tool_call_id)
                ok, data, error = _result_of(m.content)
                t.append(ToolResultEvent(step=call.step, call_id=call.call_id, tool=call.tool, ok=ok, data=data,
                                         error=error, source="import", at_ms=ms(sp["start"])))
            if m.role == "user" and first_user:
                t.append(UserMessage(content=m.content, at_ms=ms(sp["start"])))
        first_user = False
        step += 1
        keep = 0
        for x, y in zip(sent, inputs):
            if x != y:
                break
            keep += 1
        t.append(ModelRequestEvent(step=step, message_count=len(inputs), model=str(a.get("gen_ai.request.model", model)),
                                   keep=keep, messages=inputs[keep:], at_ms=ms(sp["start"])))
        sent = inputs
        outputs = _messages(a.get("gen_ai.output.messages"))
        out = outputs[0] if outputs else Message(role="assistant")
        u = Usage(input_tokens=int(a.get("gen_ai.usage.input_tokens") or 0),
                  output_tokens=int(a.get("gen_ai.usage.output_tokens") or 0))
        usage = usage + u
        reasons = a.get("gen_ai.response.finish_reasons") or []
        kind = DecisionKind.TOOL_CALLS if out.tool_calls or "tool_calls" in reasons else DecisionKind.FINAL
        t.append(ModelDecisionEvent(step=step, kind=kind, tool_calls=out.tool_calls, text=out.content, usage=u,
                                    latency_ms=round((sp["end"] - sp["start"]) / 1e6, 3), at_ms=ms(sp["end"])))
        last_text, last_kind = out.content, kind
        for c in out.tool_calls:
            ev = t.append(ToolCallEvent(step=step, call_id=c.id, tool=c.name, arguments=c.arguments, at_ms=ms(sp["end"])))
            pending[c.id] = ev
    end = max(s["end"] for s in group)
    finished = last_kind == DecisionKind.FINAL
    t.append(RunFinished(status="completed" if finished else "unknown", reply=last_text if finished else "",
                         steps=step, usage=usage, at_ms=ms(end),
                         reason="final answer" if finished else "the imported trace ends without a final answer"))
    return t


def import_otlp(store: Any, text: str, *, path: str = "<otlp>") -> list[tuple[str, bool]]:
    """Store each trace of an OTLP JSON file as a run (kind ``import``): [(run id, new)].
    A file shaped otherwise than OTLP JSON (a list where an object belongs, a time that
    is not a number, an attribute without a key) is a CaseFileError naming it."""
    from pydantic import ValidationError

    from ..store.export import import_run

    try:
        runs = trajectories_from_spans(read_spans(text, path=path))
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError, ValidationError) as exc:
        if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
            why = "a number too long to read"
        else:
            why = f"{type(exc).__name__}: {str(exc)[:160]}"
        raise CaseFileError([(FileLocation(path), f"not OTLP JSON spans as tether reads them ({why}); "
                                                  "expected {\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [...]}]}]}")]) \
            from None
    if not runs:
        raise CaseFileError([(FileLocation(path), "no GenAI chat spans (gen_ai.operation.name = chat) and no "
                                                  "OpenInference LLM spans in this file")])
    return [import_run(store, t.to_jsonl(), path=path) for t in runs]


def export_stored_run(store: Any, run_id: str, file: Any = None) -> str:
    """``tether runs export-otel``: send a stored run's spans, or write them as OTLP JSON."""
    from ..store.export import load_run

    t = load_run(store, run_id)
    row = store.get_run(run_id) or {}
    start_ns = int(float(row.get("created") or time.time()) * 1e9)
    if file is not None:
        _require()
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        memory = InMemorySpanExporter()
        n = export_trajectory(t, exporter=memory, start_ns=start_ns)
        from ..inputs import write_text
        write_text(file, otlp_json(memory.get_finished_spans()), "--file")
        return f"wrote {n} span(s) of run {run_id} to {file} (OTLP JSON)"
    # spans gathered first, then sent in one export whose result is checked: the SDK's span
    # processors drop a failed export with a log line, and "exported" would be a lie
    import logging

    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    where = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
             or "http://localhost:4318 (the OTLP default)")
    memory = InMemorySpanExporter()
    n = export_trajectory(t, exporter=memory, start_ns=start_ns)
    exporter = _otlp_exporter()
    quiet = logging.getLogger(type(exporter).__module__)
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)     # its retry lines; the outcome is reported below (setLevel: the cache)
    try:
        result = exporter.export(memory.get_finished_spans())
    except Exception as exc:     # a malformed endpoint URL
        raise UsageError(f"OTLP endpoint {where}: cannot send to it ({type(exc).__name__}: {str(exc)[:200]})") \
            from None
    finally:
        quiet.setLevel(level)
        exporter.shutdown()
    if result != SpanExportResult.SUCCESS:
        raise UsageError(f"OTLP endpoint {where}: the {n} span(s) of run {run_id} were not accepted (no collector "
                         "answering there?); set OTEL_EXPORTER_OTLP_ENDPOINT, or write them with --file")
    return f"exported {n} span(s) of run {run_id} to {where}"
