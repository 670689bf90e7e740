"""Text the case commands write: a new case, and the reference of a world's tools.

:func:`tools_reference` renders the tools of the registered worlds from the
code (each tool's description and JSON Schema), so the scenario-tool section
of docs/cases.md is generated and a test keeps it current.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import UsageError
from ..plugins import worlds
from .case import CaseInput

DOC_BEGIN = "<!-- BEGIN generated tools: tether case tools --markdown -->"
DOC_END = "<!-- END generated tools -->"

NEW_CASE = """\
# {name}: a minimal tether case; every key is described in docs/cases.md.
#   tether case validate {name}.yaml
#   tether eval {name}.yaml --model policy:steady
id: {name}
title: 订单查询服务一直不可用
dimension: LD                   # an open label; the C4 suite uses LD, DR, PA and AR
difficulty: medium              # easy | medium | hard
failure_injection: true
input:
  message: 帮我查一下订单 A1001 的物流状态

# Your own tool, declared by schema: it answers only through tool_config below
# (a call that nothing answers gets a not_found error), so the case runs anywhere.
mock_tools:
- name: search_orders
  description: 订单查询：按订单号查询订单的物流状态。Look up an order by its number.
  parameters:
    type: object
    properties:
      keyword:
        type: string
        description: 订单号，如 A1001。Order number.
    required: [keyword]
tools: [search_orders]

tool_config:                    # every call to search_orders fails
  type: tool_intercept
  intercept_tool: search_orders
  inject_tool_result:
    is_error: true
    content: 'Error: order service unavailable (HTTP 503). Please try again later.'
    error_type: unavailable

max_steps: 20

criteria:
- id: retries
  check: call_count             # calls to these tools
  tools: [search_orders]
  pass: {{min: 1, max: 3}}        # stopped after at most 3 calls
  fail: {{min: 6}}                # 6 or more: a retry loop
  failure_type: loop
  fix_suggestion: 服务持续不可用时停止重试，说明情况并建议稍后再试
- id: explains
  check: mentions               # the final reply names the outage
  groups: [[不可用, 故障, '503', 稍后, unavailable]]
  on_miss: unclear              # a wording check: a miss is unclear, not fail

# Scripted behaviours and the verdicts they should get: tether case test {name}.yaml
# runs them without a model (a call's result is what the case's tools answer).
examples:
- name: stops-and-explains
  steps:
  - call: search_orders
    args: {{keyword: A1001}}
    times: 2
  - reply: 订单服务暂时不可用（503），请稍后再试。
  expect: {{retries: pass, explains: pass}}
- name: retry-loop
  steps:
  - call: search_orders
    args: {{keyword: A1001}}
    times: 6
  - reply: 查询失败。
  expect: {{retries: fail, explains: unclear}}
"""


def new_case_text(name: str) -> str:
    """A minimal valid case named ``name`` (runs anywhere: its tool is declared by schema)."""
    return NEW_CASE.format(name=name)


# -- the tools of a world --------------------------------------------------------------
def _type(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "any")
    if kind == "array":
        kind = f"list of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        kind = "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    bounds = []
    if "minimum" in schema:
        bounds.append(f">= {schema['minimum']}")
    if "maximum" in schema:
        bounds.append(f"<= {schema['maximum']}")
    if "maxItems" in schema:
        bounds.append(f"at most {schema['maxItems']} items")
    if "default" in schema:
        bounds.append(f"default `{schema['default']}`")
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _world_tools(name: str) -> list[Any]:
    world = worlds()[name]
    built = world.build(world.names(), datetime.fromisoformat(CaseInput().now), 0)
    return [built.tools[n] for n in world.names()]


def tools_reference(world: str | None = None, *, markdown: bool = False) -> str:
    """Every tool of ``world`` (default: all registered worlds) with its arguments."""
    known = worlds()
    if world is not None and world not in known:
        raise UsageError(f"unknown world {world!r}; registered worlds: {', '.join(sorted(known)) or '(none)'}")
    names = [world] if world else sorted(known)
    out: list[str] = []
    for wname in names:
        tools = _world_tools(wname)
        if markdown:
            out += [f"### World `{wname}`: {len(tools)} tools", ""]
        else:
            out += [f"world {wname}: {len(tools)} tools", ""]
        for tool in tools:
            props = (tool.parameters or {}).get("properties", {}) or {}
            required = set((tool.parameters or {}).get("required", []) or [])
            if markdown:
                out += [f"#### `{tool.name}`", "", tool.description, ""]
                if props:
                    out += ["| argument | type | required | description |", "|---|---|---|---|"]
                    out += [f"| `{p}` | {_cell(_type(s))} | {'yes' if p in required else 'no'} | "
                            f"{_cell(str(s.get('description', '')))} |" for p, s in props.items()]
                else:
                    out += ["No arguments."]
                out.append("")
            else:
                out.append(f"{tool.name}: {tool.description}")
                for p, s in props.items():
                    req = "required" if p in required else "optional"
                    out.append(f"    {p} ({_type(s).replace('`', '')}, {req}): {s.get('description', '')}")
                out.append("")
    return "\n".join(out).rstrip() + "\n"


def doc_section(world: str = "c4") -> str:
    """The generated block of docs/cases.md, markers included."""
    return f"{DOC_BEGIN}\n\n{tools_reference(world, markdown=True)}\n{DOC_END}"


def refresh_doc(text: str, world: str = "c4") -> str:
    """``text`` (docs/cases.md) with its generated tools block replaced by the current one."""
    start, end = text.find(DOC_BEGIN), text.find(DOC_END)
    if start < 0 or end < start:
        raise UsageError(f"no generated tools block ({DOC_BEGIN} ... {DOC_END}) in the document")
    return text[:start] + doc_section(world) + text[end + len(DOC_END):]


if __name__ == "__main__":       # python -m tether.evals.templates docs/cases.md: refresh the block
    import sys
    from pathlib import Path

    for arg in sys.argv[1:]:
        doc = Path(arg)
        doc.write_text(refresh_doc(doc.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"refreshed {doc}")
