"""Issue 19 finding 12: loading a cassette never raises a raw exception."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.errors import CaseFileError, UsageError
from tether.replay.cassette import Cassette

BAD = {
    "list": "[1, 2]",
    "format-only": '{"format": "tether.cassette", "version": 2}',
    "events-str": '{"format": "tether.cassette", "version": 2, "events": "x"}',
    "version-str": '{"format": "tether.cassette", "version": "2"}',
    "deep": '{"format": "tether.cassette", "x": ' + "[" * 5000 + "]" * 5000 + "}",
    "bigint": '{"format": "tether.cassette", "version": ' + "9" * 5000 + "}",
    "nan": '{"format": "tether.cassette", "version": NaN}',
    "not-utf8": b"\xff\xfe{}",
}


@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_cassette_is_a_clear_error(tmp_path, kind):
    path = tmp_path / f"{kind}.json"
    data = BAD[kind]
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    with pytest.raises((CaseFileError, UsageError)) as exc:
        Cassette.load(path)
    assert str(path) in str(exc.value) or any(str(path) in str(loc) for loc, _ in getattr(exc.value, "problems", []))


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "DIR"])
def test_a_device_or_folder_is_refused_by_name(tmp_path, special):
    target = tmp_path if special == "DIR" else Path(special)
    if not target.exists():
        pytest.skip(f"no {special}")
    with pytest.raises(UsageError) as exc:
        Cassette.load(target)
    assert str(target) in str(exc.value)
