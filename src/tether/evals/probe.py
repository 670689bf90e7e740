"""Does a provider model see its tool results? One check per eval, before any trial.

Some servers drop ``role: tool`` messages from the prompt (llama-cpp-python's
``chatml-function-calling`` chat format renders a tool message as its header
only). A model behind such a server never sees a tool's answer, so every
injected failure of a suite is invisible to it, and scoring it would measure
the set-up, not the agent.

The probe sends the same short conversation twice (a user question, the
assistant's call of a ``read_note`` tool, the tool's result) with a long and
a short tool result, and compares the prompt tokens the server reports. A
server that renders the tool message counts the long result's tokens; one
that drops it counts the same for both. Token accounting, not the model's
answer: it does not depend on how capable the model is.

Only provider adapters are probed (models with :class:`ModelOptions`: the
``openai:``, ``openai-compat:`` and ``anthropic:`` specs). A probe that
cannot decide (the server is unreachable, reports no usage) says so and lets
the eval run: unreachable models end their trials in ``error`` as before.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ToolResultsUnseen
from ..messages import Message, ToolCallRequest, ToolSpec
from ..models import Model, ModelRequest

NOTE_TOOL = ToolSpec(name="read_note", description="Read the note the user left.",
                     parameters={"type": "object", "properties": {}})
# About 220 tokens (estimated) of distinct words and numbers; the short result is 1.
LONG_RESULT = ("The note says: the parcel code is 4711-QX. " + " ".join(
    f"line {i}: shelf {i * 7 % 31}, bin {i * 13 % 17}, checked by {name}."
    for i, name in enumerate(["Ana", "Bo", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun"] * 2)))
SHORT_RESULT = "{}"
PROBE_MAX_TOKENS = 8
# The long result must add at least this share of its estimated tokens.
MIN_SHARE = 0.25


@dataclass
class ProbeResult:
    """What the probe found: ``seen`` True / False, or None when it could not tell (``why``)."""

    model: str
    seen: bool | None
    why: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"model": self.model, "tool_results_seen": self.seen, "why": self.why, **self.numbers}


def is_provider(model: Any) -> bool:
    from ..models._http import ModelOptions

    return isinstance(getattr(model, "options", None), ModelOptions)


def _probe_copy(model: Any) -> Any:
    """The model with a small max_tokens and no forced tool (the probe offers its own tool)."""
    from ..models._http import AdapterStats

    probe = copy.copy(model)
    probe.stats = AdapterStats()          # the probe's requests are not the eval's
    options = model.options
    extra = {k: v for k, v in (options.extra_body or {}).items() if k != "tool_choice"}
    if type(model).__name__ == "OpenAIChatModel":
        extra["tool_choice"] = "none"     # answer in text: no grammar-guided call on llama.cpp
    probe.options = replace(options, max_tokens=PROBE_MAX_TOKENS, extra_body=extra or None, ask_user=False)
    return probe


def _request(result: str) -> ModelRequest:
    call = ToolCallRequest(id="call_probe_1", name=NOTE_TOOL.name, arguments={})
    return ModelRequest(messages=[
        Message(role="system", content="You answer questions about notes. Use read_note to read the note."),
        Message(role="user", content="What is the parcel code in my note?"),
        Message(role="assistant", content="", tool_calls=[call]),
        Message(role="tool", tool_call_id=call.id, name=NOTE_TOOL.name, content=result),
        Message(role="user", content="Answer with the parcel code only."),
    ], tools=[NOTE_TOOL], step=0)


async def probe_tool_results(model: Model) -> ProbeResult:
    """Ask ``model`` twice (a long and a short tool result) and compare prompt tokens."""
    from ..models.tokens import estimate_tokens

    name = getattr(model, "name", type(model).__name__)
    probe = _probe_copy(model)
    stats = getattr(probe, "stats", None)
    estimated_before = getattr(stats, "usage_estimated", 0)
    bare = copy.copy(probe)             # the same conversation, no tools offered (and so no tool_choice)
    bare.options = replace(probe.options, extra_body={k: v for k, v in (probe.options.extra_body or {}).items()
                                                      if k != "tool_choice"} or None)
    try:
        long = await probe.request(_request(LONG_RESULT))
        short = await probe.request(_request(SHORT_RESULT))
        no_tools = await bare.request(_request(LONG_RESULT).model_copy(update={"tools": []}))
    except Exception as exc:    # unreachable, refused: the trials will say so, each in error
        return ProbeResult(name, None, f"the probe request failed ({type(exc).__name__}: {str(exc)[:200]})")
    if getattr(stats, "usage_estimated", 0) != estimated_before:
        return ProbeResult(name, None, "the server reports no token usage, so the probe cannot tell")
    expected = estimate_tokens(LONG_RESULT) - estimate_tokens(SHORT_RESULT)
    added = long.usage.input_tokens - short.usage.input_tokens
    tools_added = long.usage.input_tokens - no_tools.usage.input_tokens
    numbers = {"prompt_tokens_long": long.usage.input_tokens, "prompt_tokens_short": short.usage.input_tokens,
               "added_tokens": added, "expected_tokens": expected,
               # Does the prompt show the tools offered? A tool spec is some 20 tokens at least.
               "prompt_tokens_without_tools": no_tools.usage.input_tokens, "tools_added_tokens": tools_added,
               "tools_seen": tools_added >= 5}
    if added >= max(5, int(expected * MIN_SHARE)):
        return ProbeResult(name, True, f"a tool result of about {expected} tokens added {added} prompt tokens", numbers)
    return ProbeResult(name, False, (
        f"the model never sees tool results: a tool result of about {expected} tokens added {added} prompt "
        "tokens, so the server drops role: tool messages from the prompt (llama-cpp-python's "
        "chatml-function-calling chat format does; serve the model with its own chat template instead, "
        "see docs/local-model.md)"), numbers)


async def check_tool_results(model: Model) -> ProbeResult | None:
    """Probe a provider model (None for other models); raise :class:`ToolResultsUnseen` when it
    does not see tool results."""
    if not is_provider(model):
        return None
    result = await probe_tool_results(model)
    if result.seen is False:
        raise ToolResultsUnseen(result.model, result.why, result.numbers)
    return result
