"""JSON Schemas of tether's file formats, shipped with the package.

Regenerate after a schema change with ``python -m tether.schemas``; a test
fails when a shipped file is stale.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def generated() -> dict[str, dict[str, Any]]:
    from ..evals.case import case_json_schema
    from ..evals.results import Results

    return {
        "case.schema.json": case_json_schema(),
        "results.schema.json": Results.model_json_schema(),
        "trace.schema.json": trace_json_schema(),
    }


def trace_json_schema() -> dict[str, Any]:
    """One line of a trace (JSON Lines, format version 2): one event. docs/events.md is the reference."""
    from ..events import EVENT_ADAPTER, TRACE_VERSION

    schema = EVENT_ADAPTER.json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"tether trace event (one line of a trace, format version {TRACE_VERSION})",
            "description": "A trace is JSON Lines, one event per line, the first a run_started event carrying the "
                           "format version. Version 1 lines are valid version 2 lines (every field added since "
                           "has a default). Reference: docs/events.md.",
            **schema}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def shipped(name: str) -> dict[str, Any]:
    return json.loads((resources.files(__name__) / name).read_text(encoding="utf-8"))


def write_all() -> None:
    from pathlib import Path

    here = Path(__file__).parent
    for name, schema in generated().items():
        (here / name).write_text(render(schema), encoding="utf-8")
        print(f"wrote {here / name}")
