"""The tether pytest plugin: cassettes, scripted models, no real model requests.

Installed with the package, it loads by itself (entry point ``tether`` in
``pytest11``); with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set, add ``-p tether``;
from a source checkout, ``-p tether.testing.pytest_plugin``.

Fixtures
    ``tether_cassette``  a :class:`~tether.replay.CassetteSession` bound to
        ``cassettes/<test module>/<test name>.json`` next to the test file,
        honouring the record mode. Strict replay leftovers fail at teardown.
        Every run it makes, recorded or replayed, is a new run (kind
        ``cassette``) written to ``tether_store``; a failing test's report
        names the run (``tether runs show RUN``).
    ``tether_store``     the store test runs are written to (one per test
        session): ``$TETHER_STORE`` when set, else ``.tether/tether.db`` under
        pytest's rootdir, the store ``tether runs`` reads by default.
    ``scripted_model``   ``scripted_model(decisions, name=...)`` makes a
        :class:`~tether.models.ScriptedModel`; a decision left unused fails the
        test at teardown, naming the step (unless a cassette replaced the model).
    ``allow_model_requests``  real model requests allowed in this test.
    ``tether_record_mode``  the record mode in force.

Marker
    ``@pytest.mark.tether_cassette(name=None, mode=None, match="strict",
    key_args=None, canon=None, redaction=None)`` and
    ``@pytest.mark.tether_allow_model_requests``.

Option
    ``--tether-record-mode=none|once|new_episodes|all`` overrides markers; the
    default is ``none`` when ``CI`` is set, else ``once``.

Real model requests (provider adapters call
:func:`tether.models.check_model_requests_allowed`) are forbidden for the
whole session unless a test opts in.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, Generator, Iterable, Iterator

import pytest

from ..messages import Decision
from ..models import ModelResponse, ScriptedModel, set_model_requests_allowed
from ..replay.cassette import RecordMode, default_record_mode
from ..replay.session import CassetteSession
from ..store import SQLiteStore

_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
_SESSIONS = pytest.StashKey[list[CassetteSession]]()
_STORE_PATH = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tether", "tether record and replay")
    group.addoption("--tether-record-mode", action="store", default=None, choices=[m.value for m in RecordMode],
                    help="record mode for tether cassettes (default: none when CI is set, else once)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "tether_cassette(name=None, mode=None, match='strict', key_args=None, canon=None, redaction=None): "
                   "configure the tether_cassette fixture of this test")
    config.addinivalue_line("markers", "tether_allow_model_requests: allow real model requests in this test")
    set_model_requests_allowed(False)


def pytest_unconfigure(config: pytest.Config) -> None:
    set_model_requests_allowed(True)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    _hide_tether_frames(call)
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    if report.failed:
        runs = [f"  {s.run_id}  {s.path}" for s in item.stash.get(_SESSIONS, []) if s.run_id]
        if runs and report.when in ("call", "teardown"):
            where = item.stash.get(_STORE_PATH, "")
            report.sections.append(("tether runs", f"runs of this test, in {where} "
                                    f"(tether runs show RUN --store {where}):\n" + "\n".join(runs)))
    return report


def _hide_if_tether_error(excinfo: Any) -> bool:
    from ..errors import TetherError

    return excinfo is not None and isinstance(excinfo.value, TetherError)


def _hide_tether_frames(call: pytest.CallInfo[None]) -> None:
    """A tether error (a replay mismatch, a script left over, ...) reads as its message
    under the user's own frames: every tether module gets pytest's ``__tracebackhide__``
    as a callable that hides its frames for tether's own errors only (any other
    exception keeps them; ``pytest --fulltrace`` shows everything)."""
    if call.excinfo is None:
        return
    import sys

    for name, module in list(sys.modules.items()):
        if (name == "tether" or name.startswith("tether.")) and module is not None:
            module.__dict__.setdefault("__tracebackhide__", _hide_if_tether_error)


def _call_passed(node: pytest.Item | Any) -> bool:
    """Teardown checks run only when the test body passed (no noise on top of a failure)."""
    call = node.stash.get(_REPORTS, {}).get("call")
    return call is not None and call.passed


@pytest.fixture(autouse=True)
def _tether_model_requests(request: pytest.FixtureRequest) -> Iterator[None]:
    set_model_requests_allowed(request.node.get_closest_marker("tether_allow_model_requests") is not None)
    yield
    set_model_requests_allowed(False)


@pytest.fixture
def allow_model_requests() -> Iterator[None]:
    """Real model requests are allowed while this test runs."""
    set_model_requests_allowed(True)
    yield
    set_model_requests_allowed(False)


@pytest.fixture
def tether_record_mode(request: pytest.FixtureRequest) -> RecordMode:
    """Command line, then the ``tether_cassette`` marker, then CI -> none, else once."""
    cli = request.config.getoption("--tether-record-mode")
    marker = request.node.get_closest_marker("tether_cassette")
    mode = cli or (marker.kwargs.get("mode") if marker else None)
    return RecordMode(mode) if mode else default_record_mode()


def cassette_path(node: pytest.Item, name: str | None = None) -> Path:
    """``<dir of the test file>/cassettes/<module>/<Class.test[param]>.json``, or ``cassettes/<name>.json``."""
    base = Path(node.path).parent / "cassettes"
    if name is not None:
        from ..ids import check_id, inside

        stem = name[:-5] if name.endswith(".json") else name
        parts = stem.split("/")                 # "refund/happy": a subfolder of cassettes/ is fine
        for part in parts:
            check_id(part, "cassette name")
        return inside(base, *parts[:-1], f"{parts[-1]}.json", what="cassette")
    parts = node.nodeid.split("::")
    module = Path(parts[0]).stem
    test = ".".join(parts[1:]) or node.name
    return base / module / (re.sub(r"[^\w.\-\[\]]+", "_", test) + ".json")


def store_path(config: pytest.Config) -> Path:
    """``$TETHER_STORE`` when set, else ``<rootdir>/.tether/tether.db``."""
    env = os.environ.get("TETHER_STORE")
    return Path(env) if env else Path(config.rootpath) / ".tether" / "tether.db"


@pytest.fixture(scope="session")
def tether_store(pytestconfig: pytest.Config) -> Iterator[SQLiteStore]:
    """The store this test session's cassette runs are written to (see :func:`store_path`)."""
    store = SQLiteStore(store_path(pytestconfig))
    yield store
    store.close()


@pytest.fixture
def tether_cassette(request: pytest.FixtureRequest, tether_record_mode: RecordMode,
                    tether_store: SQLiteStore) -> Iterator[CassetteSession]:
    """A cassette for this test: ``await tether_cassette.run(model, tools, message=...)``."""
    marker = request.node.get_closest_marker("tether_cassette")
    kwargs = dict(marker.kwargs) if marker else {}
    name = kwargs.pop("name", None) or (marker.args[0] if marker and marker.args else None)
    kwargs.pop("mode", None)
    session = CassetteSession(cassette_path(request.node, name), mode=tether_record_mode, store=tether_store,
                              **kwargs)
    request.node.stash.setdefault(_SESSIONS, []).append(session)
    request.node.stash[_STORE_PATH] = str(tether_store.path)
    yield session
    if _call_passed(request.node) and session.match == "strict":
        session.assert_complete()


@pytest.fixture
def scripted_model(request: pytest.FixtureRequest) -> Iterator[Callable[..., ScriptedModel]]:
    """A factory of strict scripted models, each checked for leftovers at teardown."""
    made: list[ScriptedModel] = []

    def make(decisions: Iterable[Decision | ModelResponse], *, name: str = "scripted") -> ScriptedModel:
        model = ScriptedModel(decisions, name=name)
        made.append(model)
        return model

    yield make
    if not _call_passed(request.node):
        return
    replaced = {id(m) for s in request.node.stash.get(_SESSIONS, []) for m in s.replaced_models}
    for model in made:
        if id(model) not in replaced:
            model.assert_exhausted()
