"""The MCP gateway's reader of a server's stdout: lines cut as they arrive, each
joined once from its chunks, a partial last line and an endless one reported."""

from __future__ import annotations

import asyncio

from tether.gateway.mcp_upstream import _EOF, _TOO_LONG, RAW, Spliced, _Lines, with_id


class Transport:
    def __init__(self) -> None:
        self.paused = 0

    def pause_reading(self) -> None:
        self.paused += 1

    def resume_reading(self) -> None:
        self.paused -= 1


def drain(lines: _Lines) -> list:
    async def run() -> list:
        out = []
        while True:
            item = await lines.next()
            out.append(item)
            if item is _EOF or item is _TOO_LONG:
                return out
    return asyncio.run(run())


def test_lines_are_cut_wherever_the_chunks_end():
    lines = _Lines(limit=1000)
    lines.connection_made(Transport())
    for chunk in (b'{"a":1}\n{"b"', b':2}\n', b'{"c":', b"3", b'}\n{"d":4}\n{"e":5}\n', b"\n", b'{"tail"'):
        lines.data_received(chunk)
    lines.connection_lost(None)
    assert drain(lines) == [b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}\n', b'{"d":4}\n', b'{"e":5}\n', b"\n", _EOF]
    assert lines.partial == b'{"tail"'


def test_a_line_over_the_limit_is_reported_and_nothing_after_it_is_kept():
    lines = _Lines(limit=10)
    lines.connection_made(Transport())
    lines.data_received(b'{"ok":1}\n' + b"x" * 8)
    lines.data_received(b"y" * 8)
    lines.data_received(b"z\n{}\n")
    lines.connection_lost(None)
    assert drain(lines)[:2] == [b'{"ok":1}\n', _TOO_LONG]


def test_reading_pauses_while_lines_wait_and_resumes_when_they_are_taken():
    lines = _Lines(limit=1000)
    transport = Transport()
    lines.connection_made(transport)
    lines.data_received(b"{}\n" * 100)
    assert transport.paused == 1
    lines.connection_lost(None)
    assert len(drain(lines)) == 101
    assert transport.paused == 0


def test_a_big_answer_goes_back_as_its_own_bytes_with_the_clients_id():
    raw = b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"' + b"x" * 1000 + b'"}]}}\n'
    pieces = with_id({"id": 7, RAW: raw}, "client-1")
    assert isinstance(pieces, Spliced)
    joined = b"".join(pieces)
    assert joined == raw.rstrip(b"\n").replace(b'"id":7', b'"id":"client-1"', 1)
    assert pieces.size == len(joined)
    assert isinstance(pieces[2], memoryview)          # the result itself is not copied
