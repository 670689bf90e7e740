"""A stored run printed whole: every event in order, every request's full
message list rebuilt from the deltas, usage and cost per role.

Used by ``tether runs show``. It reads events by their fields alone: the plain
records of :func:`tether.store.records.run_records` (what ``runs show`` reads:
no pydantic model is built) or the event models of a Trajectory print the same.
Content is printed as is (never read as rich markup): prompts and tool results
may contain brackets.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Iterable, Literal

from rich.console import Console
from rich.text import Text

from .._vocab import Outcome, canonical_json, trip_name

MessagesMode = Literal["full", "new", "none"]

ROLE_LABEL = {"agent": "agent", "judge": "JUDGE", "user": "SIMULATED USER", "drift": "DRIFT CHECK",
              "review": "PLAN REVIEW"}
_ROLE_STYLE = {"agent": "bold blue", "judge": "bold magenta", "user": "bold cyan", "drift": "bold magenta",
               "review": "bold magenta"}
_VERDICT_STYLE = {"hint": "yellow", "block": "magenta", "stop": "bold red", "escalate": "bold red"}


def _usage(u: Any) -> str:
    out = f"{u.input_tokens} in / {u.output_tokens} out tokens"
    return out + (f", ${u.cost:.6f}" if u.cost else "")


def _message(m: Any, index: int) -> Text:
    head = f"    {index:>3} {m.role}"
    if m.name or m.tool_call_id:
        head += f" ({m.name or ''}{' ' + m.tool_call_id if m.tool_call_id else ''})"
    text = Text(head, style="dim")
    text.append(": ")
    text.append(m.content)
    for call in m.tool_calls:
        text.append(f"\n          -> {call.name}({canonical_json(call.arguments)}) [{call.id}]", style="dim")
    return text


def render_transcript(events: Iterable[Any], console: Console, *, messages: MessagesMode = "full") -> None:
    """Print every event of ``events`` (records or event models, in order); requests with
    their messages (``full``: the whole list sent, ``new``: only what was added since
    the previous request of the same role, ``none``: a one-line summary)."""
    t = list(events)
    full = _request_messages(t)
    numbers: dict[str, int] = {}
    lines: list[Text] = []

    def p(text: Text) -> None:
        lines.append(text)
        if len(lines) >= _BATCH:
            _print(console, lines)

    for e in t:
        kind = e.type
        if kind == "run_started":
            p(Text.assemble(("run_started", "bold"), f" trace v{e.version} · kind {e.kind} · model {e.model}"
                            f" · case {e.case_id or '-'} · trial {e.trial} · guards {e.guards}"
                            + (f" · eval {e.eval_id}" if e.eval_id else "")))
            for spec in e.tool_specs:
                p(Text(f"  tool {spec.name}{' (side effect)' if spec.side_effect else ''}: {spec.description}\n"
                       f"       parameters {canonical_json(spec.parameters)}", style="dim"))
            if not e.tool_specs and e.tools:
                p(Text(f"  tools {', '.join(e.tools)}", style="dim"))
        elif kind == "user_message":
            p(Text.assemble(("user", "bold cyan"), f" ({e.source}): ", e.content))
        elif kind == "agent_message":
            p(Text.assemble(("agent", "bold"), f" ({e.kind}, {e.source}): ", e.content))
        elif kind == "model_request":
            numbers[e.role] = numbers.get(e.role, 0) + 1
            msgs = full.get(id(e), [])
            params = f" · params {canonical_json(e.params)}" if e.params else ""
            tools = f" · tools {', '.join(e.tools)}" if e.tools else " · no tools"
            p(Text.assemble((f"[{e.step}] request {numbers[e.role]} · {ROLE_LABEL.get(e.role, e.role)}",
                             _ROLE_STYLE.get(e.role, "bold")),
                            f" · model {e.model or '?'} · {e.message_count} message(s){tools}{params}"))
            if not msgs and e.message_count:
                p(Text("    (messages not recorded: a version 1 trace)", style="dim"))
            elif messages == "full":
                for i, m in enumerate(msgs, start=1):
                    p(_message(m, i))
            elif messages == "new":
                if e.keep:
                    p(Text(f"    ... {e.keep} message(s) as in the previous {e.role} request", style="dim"))
                for i, m in enumerate(e.messages, start=e.keep + 1):
                    p(_message(m, i))
        elif kind == "model_decision":
            head = Text.assemble((f"    decision ({ROLE_LABEL.get(e.role, e.role)}) {e.kind}",
                                  _ROLE_STYLE.get(e.role, "bold")),
                                 f" · {_usage(e.usage)} · {e.latency_ms:.0f} ms"
                                 + (f" (+{e.queued_ms:.0f} ms queued)" if e.queued_ms >= 1 else "")
                                 + (f" · {len(e.attempts)} attempts: "
                                    + ", ".join(f"{a.get('outcome')} {float(a.get('wire_ms') or 0):.0f} ms"
                                                for a in e.attempts) if len(e.attempts) > 1 else ""),
                                 (" · truncated (finish_reason "
                                  f"{e.finish_reason}): the reply was cut by the token limit" if e.truncated else "",
                                  "bold red"))
            p(head)
            if e.text:
                p(Text("      " + e.text))
            for call in e.tool_calls:
                p(Text(f"      -> {call.name}({canonical_json(call.arguments)}) [{call.id}]"))
        elif kind == "tool_call":
            p(Text.assemble((f"  [{e.step}] tool ", "dim"), (e.tool, "bold"),
                            f"({canonical_json(e.arguments)}) [{e.call_id}]"))
        elif kind == "tool_result":
            body = canonical_json(e.data) if e.ok else f"{e.error_type or 'error'}: {e.error}"
            p(Text.assemble("      -> ", ("ok " if e.ok else "error ", "green" if e.ok else "red"),
                            (f"[{Outcome(e.outcome).label}, {e.duration_ms:.0f} ms] ", "dim"), body))
        elif kind == "guard_tripped":
            numbers_text = ", ".join(f"{k}={v}" for k, v in e.numbers.items())
            p(Text.assemble("  ", (f"guard {trip_name(e.guard, e.rule)} {e.verdict}", _VERDICT_STYLE[e.verdict]),
                            f": {e.message}" + (f" ({numbers_text})" if numbers_text else "")))
        elif kind == "side_effect":
            p(Text.assemble("  ", (f"side effect {e.status}", "bold"),
                            f" {e.tool} [{e.call_id}] key {e.key}" + (f": {e.detail}" if e.detail else "")))
        elif kind == "approval":
            who = f" by {e.by}" if e.by else ""
            p(Text.assemble("  ", (f"approval {e.action}", "bold yellow"),
                            f" {e.tool} [{e.call_id}] {e.approval_id}{who}" + (f": {e.reason}" if e.reason else "")))
        elif kind == "run_resumed":
            p(Text(f"resumed from checkpoint {e.checkpoint} (step {e.step}, {e.phase}); "
                   f"{e.dropped_events} event(s) after it dropped", style="bold"))
        elif kind == "run_finished":
            p(Text.assemble(("run_finished", "bold"), f" {e.status} after {e.steps} step(s)"
                            + (f" · reason: {e.reason}" if e.reason else "")
                            + (f" · error ({e.error_kind or '?'}): {e.error}" if e.error else "")))
            cut = [d for d in t if d.type == "model_decision" and d.truncated and d.role == "agent"]
            last_cut = bool(cut) and cut[-1].text == e.reply and bool(e.reply)
            p(Text.assemble(("reply", "bold"), (" (truncated: cut by the token limit)", "bold red") if last_cut else "",
                            ": ", e.reply))
            if cut:
                p(Text(f"truncated: {len(cut)} of the agent's replies were cut by the output token limit "
                       "(finish_reason length)", style="bold red"))
    summary = _usage_summary(t)
    if summary is not None:
        p(summary)
    _print(console, lines)


_BATCH = 256


def _print(console: Console, lines: list[Text]) -> None:
    """Print ``lines`` (Text, never markup, never highlighted) as one Text joined by
    newlines, and empty the list. Rich wraps each line of a Text on its own, so this
    prints exactly what one print per line prints (tests/cli/test_transcript.py),
    in half the time; a long run still comes out batch by batch."""
    if lines:
        console.print(Text("\n").join(lines), highlight=False)
        lines.clear()


def _request_messages(t: list) -> dict[int, list]:
    """Each request's full message list: the previous request's (same role) first
    ``keep`` messages, then its own (Trajectory.requests, over records)."""
    full: dict[int, list] = {}
    previous: dict[str, list] = {}
    for e in t:
        if e.type == "model_request":
            full[id(e)] = previous[e.role] = previous.get(e.role, [])[:e.keep] + list(e.messages)
    return full


def _usage_summary(t: list) -> Text | None:
    """Usage, cost and model latency per request role (the agent's own kept apart)."""
    rows: dict[str, list] = {}
    for d in t:
        if d.type != "model_decision":
            continue
        row = rows.setdefault(d.role, [0, 0, 0, 0.0, 0.0])      # requests, in, out, cost, latency
        row[0] += 1
        row[1] += d.usage.input_tokens
        row[2] += d.usage.output_tokens
        row[3] += d.usage.cost
        row[4] += d.latency_ms
    if not rows:
        return None
    parts = [f"{ROLE_LABEL.get(role, role)}: {n} request(s), "
             f"{_usage(SimpleNamespace(input_tokens=i, output_tokens=o, cost=c))}, {lat / 1000:.2f} s"
             for role, (n, i, o, c, lat) in rows.items()]
    return Text("usage · " + " · ".join(parts))


def calls_by_key(t: Iterable[Any]) -> dict[str, dict[str, int]]:
    """For each ledger key, how the run's calls on it ended, by outcome label
    (``executed``, ``answered from the ledger``, ...): what ``runs show`` prints beside
    the ledger. A call's result is the first later result with its call id (a call
    re-attempted after a pause reuses its id: Trajectory.calls_with_results)."""
    t = list(t)
    results: dict[str, Any] = {}
    waiting: dict[str, int] = {}          # calls of an id without their result yet
    for e in t:
        if e.type == "tool_call":
            waiting[e.call_id] = waiting.get(e.call_id, 0) + 1
        elif e.type == "tool_result" and waiting.get(e.call_id):
            waiting[e.call_id] -= 1
            results[e.call_id] = e        # of two calls with one id, the later's result counts
    out: dict[str, dict[str, int]] = {}
    seen: set[tuple[str, str]] = set()
    for e in t:
        if e.type != "side_effect":
            continue
        result = results.get(e.call_id)
        if result is None or (e.key, e.call_id) in seen:
            continue
        seen.add((e.key, e.call_id))
        label = Outcome(result.outcome).label
        out.setdefault(e.key, {})
        out[e.key][label] = out[e.key].get(label, 0) + 1
    return out
