from tether.schemas import generated, render, shipped


def test_shipped_schemas_are_current():
    for name, schema in generated().items():
        assert render(shipped(name)) == render(schema), f"{name} is stale: run `python -m tether.schemas`"
