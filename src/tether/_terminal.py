"""Data never drives the terminal (issue 19): one cleaning helper for every printer.

A tool result, a reply, a model name or a file name can hold escape sequences
(OSC 52 writes the clipboard, CSI clears the screen, OSC 0 sets the window
title, OSC 8 makes links). :func:`clean_text` removes them: whole ESC
sequences (CSI, OSC, DCS/SOS/PM/APC strings, two-character escapes), their
8-bit C1 forms, then every remaining C0 control but newline and tab, DEL and
C1 control. :class:`CleanConsole` is a Rich console that applies it to every
text segment it writes; its own styling (added after) still works.
:func:`json_text` makes JSON output (``runs export``, ``--json``) safe to
print: the C1 controls and DEL inside strings become ``\\u`` escapes (JSON
escapes C0 already), which read back as the same string.
"""

from __future__ import annotations

import re
from typing import Iterable

_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"                  # CSI ... final
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"   # OSC / DCS / SOS / PM / APC ... ST or BEL
    r"|\x1b[ -/]*[0-~]?"                         # two-character escapes (and a lone ESC)
    r"|\x9b[0-?]*[ -/]*[@-~]?"                   # 8-bit CSI
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # 8-bit OSC / DCS / SOS / PM / APC
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u2028\u2029]")


def clean_text(text: str) -> str:
    """``text`` without escape sequences and control characters (newline and tab kept)."""
    if not _CONTROLS.search(text):
        return text
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 call``, ``2 calls`` (``many``: the plural when it is not ``word + "s"``)."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def json_text(text: str) -> str:
    """JSON text with DEL, C1 controls and line separators written as ``\\u`` escapes."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def _console_class():
    from rich.console import Console
    from rich.segment import Segment

    class CleanConsole(Console):
        """A Rich console whose text segments pass through :func:`clean_text`."""

        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            return super()._render_buffer(
                segment if segment.control else Segment(clean_text(segment.text), segment.style, segment.control)
                for segment in buffer)

    return CleanConsole


def clean_console(**kwargs):
    """A :class:`CleanConsole` (Rich markup and emoji codes off: data in brackets, or like ``:smile:``, is text)."""
    kwargs.setdefault("markup", False)
    kwargs.setdefault("emoji", False)
    return _console_class()(**kwargs)
