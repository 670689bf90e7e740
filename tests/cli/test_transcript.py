"""`tether runs show` prints its lines batched into one Text per print (tether.cli._transcript._print):
byte for byte what one print per line gives, for the lines a run can hold."""

import io
import itertools

import pytest
from rich.text import Text

from tether._terminal import clean_console
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
