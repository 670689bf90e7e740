"""`tether runs show`: the transcript of a run as its event models read it, its lines batched into one
Text per print (tether.cli._transcript._print): byte for byte what one print per line gives."""

import io
import itertools

import pytest
from rich.text import Text
from typer.testing import CliRunner

from tether._terminal import clean_console
from tether.cli import app
from tether.cli._transcript import _print

_PIECES = ["plain", "", "\n", "ends with a newline\n", "two\n\nblank", "  leading", "trailing   ", "tab\there",
           "x" * 200, "词" * 90, "a " * 60, "mixed 中文 and English " * 8, "\n\nstarts", "w\r\nindows",
           "\x1b[31mred", "[bold]not markup[/bold]", ":smile: no emoji", "y" * 79, "z" * 80, "q" * 81, " " * 100]


def _line(text: str) -> Text:
    out = Text(text[: len(text) // 2], style="dim")
    out.append(text[len(text) // 2:], style="bold red")
    return out


@pytest.mark.parametrize("width", [40, 80, 250])
@pytest.mark.parametrize("terminal", [False, True])
def test_one_print_of_the_joined_lines_is_one_print_per_line(width, terminal):
    pairs = list(itertools.product(_PIECES, repeat=2))
    batches = [[_line(a + b) for a, b in pairs[i:i + 5]] for i in range(0, len(pairs), 5)]
    options = {"width": width, **({"force_terminal": True, "color_system": "truecolor"} if terminal else {})}
    for lines in batches:
        each, joined = io.StringIO(), io.StringIO()
        one = clean_console(file=each, **options)
        for line in lines:
            one.print(line, highlight=False)
        _print(clean_console(file=joined, **options), list(lines))
        assert joined.getvalue() == each.getvalue(), [line.plain for line in lines]


@pytest.fixture(scope="module")
def steady_store(tmp_path_factory) -> str:
    db = str(tmp_path_factory.mktemp("transcript") / "tmp.db")
    res = CliRunner().invoke(app, ["eval", "c4", "--model", "policy:steady", "--store", db])
    assert res.exit_code == 0, res.output
    return db


@pytest.mark.parametrize("messages", ["full", "new", "none"])
def test_runs_show_prints_each_event_as_its_model_reads(steady_store, messages):
    """`tether runs show` of a C4 eval's runs ends with the transcript printed from the run's
    event models (tether.store.export.load_run): runs show reads plain records, the same text."""
    import json

    from tether.cli._transcript import render_transcript
    from tether.store import open_store
    from tether.store.export import load_run

    listed = CliRunner().invoke(app, ["runs", "list", "--format", "json", "--store", steady_store])
    run_ids = [row["run"] for row in json.loads(listed.output)["rows"]]
    assert len(run_ids) >= 10
    db = open_store(steady_store, read_only=True)
    for run_id in run_ids:
        shown = CliRunner().invoke(app, ["runs", "show", run_id, "--messages", messages, "--store", steady_store],
                                   env={"COLUMNS": "80"})
        by_model = io.StringIO()
        render_transcript(load_run(db, run_id), clean_console(file=by_model, width=80), messages=messages)
        assert shown.exit_code == 0
        assert "run_finished" in by_model.getvalue() and shown.output.endswith(by_model.getvalue()), run_id


def test_a_runs_fields_print_as_text_never_markup_nor_emoji(tmp_path):
    """A run's model, case and reason come from elsewhere (an import, another tether): brackets and
    emoji codes in them print as they are written."""
    import sqlite3

    db = tmp_path / "s.db"
    res = CliRunner().invoke(app, ["run", "C4-LD-01", "--run-id", "h", "--store", str(db)])
    assert res.exit_code == 0, res.output
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET model=?, reason=? WHERE run_id='h'", ("[bold]m[/bold] :smile:", ":rocket: [red]r"))
    res = CliRunner().invoke(app, ["runs", "show", "h", "--store", str(db)])
    assert res.exit_code == 0, res.output
    assert "[bold]m[/bold] :smile:" in res.output and ":rocket: [red]r" in res.output, res.output
    assert "😄" not in res.output and "🚀" not in res.output
