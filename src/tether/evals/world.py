"""The tools a case's agent sees, built by the harness.

A case names its tools under ``tools:``; each name comes from, in order:

1. ``mock_tools``: tools declared by schema in the case itself, answered only
   by the case's ``tool_mock`` / ``tool_intercept`` (anything unmatched gets a
   ``not_found`` error);
2. ``toolset: "package.module:factory"``: your own tools (the factory returns
   a :class:`~tether.tools.ToolSet`; with ``tools:`` empty, all of them);
3. a registered *world* (a tool catalog, see :mod:`tether.plugins`): the one
   named by ``world:``, else the one world that has every remaining name.

The case's intercepts and mocks are layered in front of all of them, so
faults reach any agent. Each trial gets a fresh toolset (worlds keep state).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import UsageError
from ..plugins import World, load_object, worlds
from ..tools import Tool, ToolResult, ToolSet
from ..tools.injection import CaseInjection
from .case import Case


def _mock_tool(spec: Any) -> Tool:
    def unanswered(**arguments: Any) -> ToolResult:
        return ToolResult.failure(f"no mocked result for {spec.name} with these arguments", "not_found", source="mock")

    return Tool(spec.name, spec.description, spec.parameters, unanswered, side_effect=spec.side_effect)


def user_toolset(ref: str) -> ToolSet:
    factory = load_object(ref, what="toolset")
    try:
        toolset = factory() if callable(factory) and not isinstance(factory, ToolSet) else factory
    except Exception as exc:
        raise UsageError(f"toolset {ref!r}: the factory raised {type(exc).__name__}: {exc}") from None
    if not isinstance(toolset, ToolSet):
        raise UsageError(f"toolset {ref!r} returned {type(toolset).__name__}, not a tether.tools.ToolSet")
    return toolset


def find_world(case: Case, names: list[str]) -> World | None:
    """The world the case's remaining tool names come from (None when there are none)."""
    return _find_world(case.world, names, f"case {case.id}")


def _find_world(world: str | None, names: list[str], label: str) -> World | None:
    if not names:
        return None
    known = worlds()
    if world is not None:
        if world not in known:
            raise UsageError(f"{label}: unknown world {world!r}; registered worlds: "
                             f"{', '.join(sorted(known)) or '(none)'}")
        return known[world]
    fits = [w for w in known.values() if set(names) <= set(w.names())]
    if len(fits) == 1:
        return fits[0]
    if not fits:
        return None
    raise UsageError(f"{label}: tools {', '.join(names)} are in several worlds "
                     f"({', '.join(w.name for w in fits)}); say which with world:")


def tool_availability(tools: list[str], mock_names: list[str], toolset: str | None, world: str | None,
                      label: str = "case") -> tuple[list[str], list[str]]:
    """(names of ``tools`` no source provides, every tool name the sources offer).

    Raises UsageError when the toolset cannot be loaded or the world is unknown."""
    names = [n for n in tools if n not in set(mock_names)]
    offered: list[str] = list(mock_names)
    if toolset:
        own = user_toolset(toolset).names()
        offered += own
        names = [n for n in names if n not in own]
    if not names:
        return [], offered
    if world is not None:
        found = _find_world(world, names, label)
        offered += found.names() if found else []
        return [n for n in names if found is None or n not in found.names()], offered
    known = worlds()
    for w in known.values():
        offered += w.names()
    found = _find_world(None, names, label)
    if found:
        return [], offered
    return [n for n in names if not any(n in w.names() for w in known.values())] or names, offered


def case_toolset(case: Case, *, seed: int = 0) -> ToolSet:
    """A fresh ToolSet for one trial of ``case``, with its intercepts and mocks in front."""
    mocks = {m.name: _mock_tool(m) for m in case.mock_tools}
    own = user_toolset(case.toolset) if case.toolset else None
    wanted = list(case.tools) or [*mocks, *(own.names() if own else [])]
    from_world = [n for n in wanted if n not in mocks and (own is None or n not in own)]
    world = find_world(case, from_world)
    built = world.build(from_world, datetime.fromisoformat(case.input.now), seed) if world else None
    tools: list[Tool] = []
    for name in wanted:
        if name in mocks:
            tools.append(mocks[name])
        elif own is not None and name in own:
            tools.append(own.tools[name])
        elif built is not None and name in built:
            tools.append(built.tools[name])
        else:
            raise UsageError(f"case {case.id}: no source has tool {name!r} (declare it under mock_tools, give a "
                             "toolset, or name a world that has it)")
    layers = [*(own.layers if own else []), CaseInjection(case.tool_config)]
    return ToolSet(tools, layers)
