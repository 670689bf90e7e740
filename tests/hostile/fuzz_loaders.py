"""atheris (coverage-guided, libFuzzer) over the loaders of files from elsewhere.

Run by tests/hostile/test_fuzz.py under ``-m slow``, or by hand::

    python tests/hostile/fuzz_loaders.py -runs=20000 -max_len=4096

The first byte picks the loader; the rest is the file. A loader may refuse its
input only with tether's own errors (CaseFileError, UsageError: one clear line,
exit 2); any other exception is a crash atheris reports with the input that
made it (saved as crash-*).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["tether"]):
    from tether.errors import TetherError
    from tether.evals import case_yaml
    from tether.evals.results import Results
    from tether.replay.cassette import Cassette
    from tether.report.otel import import_otlp
    from tether.store import SQLiteStore
    from tether.store.export import import_run, read_trace

FOLDER = Path(tempfile.mkdtemp(prefix="tether-fuzz-"))
STORE = SQLiteStore(FOLDER / "fuzz.db")


def _case(text: str) -> None:
    from tether.evals.loader import load_case

    path = FOLDER / "c.yaml"
    path.write_text(text, encoding="utf-8")
    load_case(path)


def _review(text: str) -> None:
    from tether.evals.review import read_review

    path = FOLDER / "r.yaml"
    path.write_text(text, encoding="utf-8")
    read_review(path)


LOADERS = [
    lambda t: case_yaml.parse(t, "<case>"),
    _case,
    _review,
    lambda t: read_trace(t, path="<trace>"),
    lambda t: import_run(STORE, t, path="<export>"),
    lambda t: Results.parse(t, path="<results>"),
    lambda t: Cassette.from_json(t, path="<cassette>"),
    lambda t: import_otlp(STORE, t, path="<otlp>"),
]


def one(data: bytes) -> None:
    if not data:
        return
    loader = LOADERS[data[0] % len(LOADERS)]
    text = data[1:].decode("utf-8", "replace")
    try:
        loader(text)
    except TetherError:
        pass                      # a refusal tether explains: what hostile input should get


def main() -> None:
    atheris.Setup(sys.argv, one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
