"""Executors: trials run in this process or as Ray tasks, with the same verdicts;
the driver stores the runs Ray workers send back."""

import asyncio
import sys

import pytest

from tether.errors import UsageError
from tether.evals import EvalConfig, load_suite, run_suite
from tether.evals.executors import RAY_HINT, make_executor
from tether.guards.stacks import guard_stack
from tether.store import SQLiteStore
from tether.store.export import load_run


def _verdicts(results):
    return {(r.model, r.guards, c.case_id, t.trial): (t.verdict, t.auto_verdict, t.status)
            for r in results.runs for c in r.cases for t in c.trials}


def test_ray_missing_gives_the_install_hint(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)
    cases = load_suite("c4")[:1]
    config = EvalConfig(store=tmp_path / "t.db", executor="ray")
    with pytest.raises(UsageError, match="pip install 'tether\\[ray\\]'"):
        asyncio.run(run_suite(cases, ["policy:steady"], config))
    assert "pip install ray" in RAY_HINT


def test_unknown_executor_and_address_without_ray():
    with pytest.raises(UsageError, match="local or ray"):
        make_executor("dask")
    with pytest.raises(UsageError, match="--ray-address needs --executor ray"):
        make_executor("local", ray_address="ray://x:10001")


@pytest.mark.slow
def test_ray_and_local_give_the_same_verdicts(tmp_path):
    ray = pytest.importorskip("ray")
    cases = [c for c in load_suite("c4") if c.id in ("C4-LD-01", "C4-DR-01", "C4-PA-01", "C4-AR-03")]
    models = ["policy:stubborn", "policy:steady"]
    stacks = {"off": guard_stack("off"), "on": guard_stack("on")}
    local = asyncio.run(run_suite(cases, models, EvalConfig(trials=2, store=tmp_path / "local.db",
                                                            guard_stacks=stacks)))
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        remote = asyncio.run(run_suite(cases, models, EvalConfig(trials=2, store=tmp_path / "ray.db",
                                                                 guard_stacks=stacks, executor="ray")))
    finally:
        ray.shutdown()
    assert _verdicts(remote) == _verdicts(local)
    assert len(_verdicts(remote)) == 2 * 2 * 4 * 2
    # the driver stored every run the workers sent, as a local run is stored
    store = SQLiteStore(tmp_path / "ray.db")
    for _, _, t in remote.trials():
        row = store.get_run(t.run_id)
        assert row["kind"] == "eval" and row["eval_id"] == remote.eval_id and row["digest"] == t.digest
        assert load_run(store, t.run_id).digest() == t.digest
    assert store.get_eval(remote.eval_id)["status"] == "finished"


@pytest.mark.slow
def test_a_ray_client_address_without_the_client_package_says_what_to_install(tmp_path, monkeypatch):
    """The README's `--ray-address ray://head:10001` needs ray[client]: a usage error naming
    the package, never "a bug in tether"."""
    pytest.importorskip("ray")
    try:
        import ray.util.client  # noqa: F401
        import grpc  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("ray[client] is installed: the address would be dialled")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    cases = [c for c in load_suite("c4") if c.id == "C4-PA-02"]
    config = EvalConfig(store=SQLiteStore(tmp_path / "t.db"), eval_id="ev-20261201-000001", executor="ray",
                        ray_address="ray://127.0.0.1:10001")
    with pytest.raises(UsageError, match=r"pip install 'ray\[client\]'"):
        asyncio.run(run_suite(cases, ["policy:steady"], config))
