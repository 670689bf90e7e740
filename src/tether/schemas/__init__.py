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
    }


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
