from tether.schemas import generated, render, shipped


def test_shipped_schemas_are_current():
    for name, schema in generated().items():
        assert render(shipped(name)) == render(schema), f"{name} is stale: run `python -m tether.schemas`"


def test_every_event_of_a_run_is_valid_against_the_trace_schema():
    """The shipped trace schema accepts every line runs write, and a version 1 line."""
    import asyncio
    import json

    import jsonschema

    from tether.evals import load_suite, run_trial
    from tether.guards.stacks import guard_stack
    from tether.models import resolve_model

    cases = {c.id: c for c in load_suite("c4")}
    lines = []
    for case in ("C4-DR-01", "C4-LD-01"):
        _, result = asyncio.run(run_trial(cases[case], resolve_model("policy:stubborn"), guards=guard_stack("on")(),
                                          guards_label="on"))
        lines += [json.loads(line) for line in result.trajectory.to_jsonl().splitlines()]
    validator = jsonschema.Draft202012Validator(shipped("trace.schema.json"))
    assert {"run_started", "user_message", "agent_message", "model_request", "model_decision", "tool_call",
            "tool_result", "guard_tripped", "run_finished"} <= {e["type"] for e in lines}
    for event in lines:
        validator.validate(event)
    validator.validate({"type": "model_request", "step": 1, "message_count": 3, "tools": ["a"], "request_hash": "h",
                        "seq": 2, "at_ms": 1.5})                                          # a version 1 line
    assert not validator.is_valid({"type": "model_request", "step": 1})                    # message_count missing
    assert not validator.is_valid({"type": "teleport", "seq": 0})


def test_the_event_reference_lists_every_event_and_field():
    """docs/events.md documents every event type and every field of each (a new field fails here)."""
    import re
    import typing
    from pathlib import Path

    from tether.events import Event

    doc = (Path(__file__).resolve().parents[1] / "docs" / "events.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### `(\w+)`[^\n]*\n(.*?)(?=^#)", doc, flags=re.S | re.M))
    union = typing.get_args(typing.get_args(Event)[0])
    for cls in union:
        kind = cls.model_fields["type"].default
        assert kind in sections, f"docs/events.md has no section for {kind}"
        for name in cls.model_fields:
            if name not in ("type", "seq", "at_ms"):
                assert f"| `{name}` |" in sections[kind], f"docs/events.md: {kind}.{name} is not documented"
    assert set(sections) == {cls.model_fields["type"].default for cls in union}
