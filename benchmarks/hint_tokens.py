"""What a guard hint and the finish-up request cost in prompt tokens, by how they are delivered.

Sends one C4 step (C4-LD-01: the system prompt, the user's message, a
search_flights call and its error result, the case's tools offered) to an
OpenAI-compatible server, with ``max_tokens=1``, in five layouts:

* ``base``: the step as is;
* ``hint as system``: a loop-guard hint as an extra system message at the end
  (how tether delivered hints before);
* ``hint appended``: the same hint appended to the last tool result (how tether
  delivers it now, as the framework adapters do);
* ``finish-up as system`` / ``finish-up appended``: the guard's finish-up
  request, tools not offered, the same two ways.

and prints the server's prompt tokens for each. On a server that renders the
tool list into every system message (llama-cpp-python's
``chatml-function-calling`` when a tool is forced), an extra system message
costs the whole list again; appended, a hint costs its own words.

    python benchmarks/hint_tokens.py http://127.0.0.1:8080/v1 smollm2 [--force]

``--force`` sends ``tool_choice`` naming search_flights (chatml-function-calling
renders the tools only then).
"""

from __future__ import annotations

import argparse
import asyncio

from tether import i18n
from tether.evals import load_suite
from tether.evals.runner import REFERENCE_SYSTEM_PROMPT, case_world
from tether.messages import Message, ToolCallRequest, canonical_json
from tether.models import ModelRequest, allow_model_requests
from tether.models.openai_compat import ModelOptions, OpenAIChatModel
from tether.runtime.loop import append_note

HINT = ("loop guard: search_flights was called with the same arguments 2 times and failed each time; "
        "do not repeat it: change the arguments, use another tool, or tell the user what is missing")


def step_messages() -> tuple[list[Message], list]:
    case = {c.id: c for c in load_suite("c4")}["C4-LD-01"]
    tools, _ = case_world(case)
    call = ToolCallRequest(id="call_1", name="search_flights",
                           arguments={"departure_city": "北京", "arrival_city": "上海", "date": "下周五"})
    result = {"ok": False, "error": "Invalid date format. Expected YYYY-MM-DD", "error_type": "tool_error"}
    return [Message(role="system", content=REFERENCE_SYSTEM_PROMPT), Message(role="user", content=case.input.message),
            Message(role="assistant", content="", tool_calls=[call]),
            Message(role="tool", tool_call_id="call_1", name="search_flights", content=canonical_json(result))], \
        tools.specs()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("base_url")
    ap.add_argument("model")
    ap.add_argument("--force", action="store_true", help="send tool_choice naming search_flights")
    args = ap.parse_args()
    extra = {"tool_choice": {"type": "function", "function": {"name": "search_flights"}}} if args.force else None
    model = OpenAIChatModel(args.model, base_url=args.base_url, api_key_env="OPENAI_COMPAT_API_KEY",
                            base_url_env=None, options=ModelOptions(timeout=600, max_tokens=1, temperature=0,
                                                                    extra_body=extra, ask_user=False))
    no_tools = OpenAIChatModel(args.model, base_url=args.base_url, api_key_env="OPENAI_COMPAT_API_KEY",
                               base_url_env=None, options=ModelOptions(timeout=600, max_tokens=1, temperature=0,
                                                                       ask_user=False))
    messages, tools = step_messages()
    finish = i18n.text("zh", "finish_up", guard="loop", message=HINT)
    layouts = [
        ("base", model, messages, tools),
        ("hint as system", model, [*messages, Message(role="system", content=HINT)], tools),
        ("hint appended", model, append_note(messages, HINT), tools),
        ("finish-up as system", no_tools, [*messages, Message(role="system", content=finish)], []),
        ("finish-up appended", no_tools, append_note(messages, finish), []),
    ]
    print(f"server {args.base_url} · model {args.model} · tool_choice {'forced' if args.force else 'not sent'}")
    base = None
    with allow_model_requests():
        for label, m, msgs, offered in layouts:
            response = await m.request(ModelRequest(messages=msgs, tools=offered, step=1))
            tokens = response.usage.input_tokens
            base = tokens if base is None else base
            print(f"  {label:22} {tokens:6d} prompt tokens ({tokens - base:+d})")


if __name__ == "__main__":
    asyncio.run(main())
