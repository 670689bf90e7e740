"""Null agents: reference models that do nothing useful, for the suite's own tests.

A stability suite must not pass an agent that does not do the work. These
three are the floor every case's automatic criteria are checked against
(``tests/c4/test_null_agents.py``, the table in ``cases/README.md``):

* ``policy:mute`` makes no tool call and answers with a polite apology.
* ``policy:echo`` makes no tool call and repeats the user's message.
* ``policy:inventor`` calls the offered tools one after the other with
  arguments it makes up from the parameter schemas (never the user's words),
  never asks the user anything, and then says the work is done.

Like the calibration policies they are stateless and deterministic (each
request is answered from its messages and tools alone) and never look at a
case id or a case text.
"""

from __future__ import annotations

import re
from typing import Any

from ...messages import Decision, Message, ToolSpec
from ...models._base import ModelRequest, ModelResponse
from ...models.doubles import _estimate_usage
from ...runtime.loop import split_notes

_CJK = re.compile(r"[\u3400-\u9fff]")
APOLOGY = {"zh": "抱歉，这个我帮不了你。", "en": "Sorry, I can't help with that."}
DONE = {"zh": "好的，已经按你的要求处理完了。", "en": "All right, it is taken care of."}
INVENTED_CALLS = 3        # the inventor stops after this many calls and says it is done


def _language(messages: list[Message]) -> str:
    text = " ".join(m.content for m in messages if m.role == "user")
    return "zh" if _CJK.search(text) else "en"


def _user_turns(messages: list[Message]) -> list[str]:
    """The user's own words, without tether's notes appended to a turn."""
    out = []
    for m in messages:
        if m.role == "user":
            body = split_notes(m.content)[0].strip()
            if body:
                out.append(body)
    return out


class _Null:
    kind = "null"

    def __init__(self, name: str | None = None):
        self.name = name or f"policy:{self.kind}"

    def decide(self, request: ModelRequest) -> Decision:
        raise NotImplementedError

    async def request(self, request: ModelRequest) -> ModelResponse:
        decision = self.decide(request)
        return ModelResponse(decision=decision, usage=_estimate_usage(request, decision))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class MutePolicy(_Null):
    """No tool call, a polite apology."""

    kind = "mute"

    def decide(self, request: ModelRequest) -> Decision:
        return Decision.final(APOLOGY[_language(request.messages)])


class EchoPolicy(_Null):
    """No tool call: repeats the user's latest message."""

    kind = "echo"

    def decide(self, request: ModelRequest) -> Decision:
        turns = _user_turns(request.messages)
        return Decision.final(turns[-1] if turns else "")


def invent(schema: Any, name: str = "value", depth: int = 0) -> Any:
    """A value of the schema's type made up without looking at the conversation."""
    if not isinstance(schema, dict) or depth > 4:
        return "示例"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = schema.get("required") if isinstance(schema.get("required"), list) else list(props)
        return {k: invent(props.get(k), k, depth + 1) for k in required if isinstance(k, str)}
    if kind == "array":
        return [invent(schema.get("items"), name, depth + 1)]
    if kind == "integer":
        return int(schema.get("minimum", 1) or 1)
    if kind == "number":
        return float(schema.get("minimum", 1) or 1)
    if kind == "boolean":
        return True
    if schema.get("format") == "date" or "date" in name.lower():
        return "2026-05-01"
    return f"示例{name}"


class InventorPolicy(_Null):
    """Calls the offered tools in turn with invented arguments, never asks, then says it is done."""

    kind = "inventor"

    def decide(self, request: ModelRequest) -> Decision:
        lang = _language(request.messages)
        tools = [t for t in request.tools if t.name != "ask_user"]
        made = sum(len(m.tool_calls) for m in request.messages if m.role == "assistant")
        if not tools or made >= INVENTED_CALLS:
            return Decision.final(DONE[lang])
        tool: ToolSpec = tools[made % len(tools)]
        return Decision.call(tool.name, invent(tool.parameters), id=f"call_{request.step}_{made}")


NULL_POLICIES: dict[str, type[_Null]] = {"mute": MutePolicy, "echo": EchoPolicy, "inventor": InventorPolicy}
