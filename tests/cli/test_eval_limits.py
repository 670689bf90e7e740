"""Per-model limits on the CLI: --max-connections caps the requests in flight to a
provider model, --timeout bounds one attempt on the wire; models that take neither say so."""

import json
import threading
import time

from typer.testing import CliRunner

from tether.cli import app
from tether.messages import Decision
from tether.models import allow_model_requests
from tether.store import SQLiteStore
from tether.testing.fake_openai import FakeOpenAIServer

runner = CliRunner()


class Slow:
    """Answers after ``delay`` seconds and counts the requests in flight at once."""

    def __init__(self, delay: float):
        self.delay, self.now, self.most = delay, 0, 0
        self.lock = threading.Lock()

    def __call__(self, req):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.delay)
        with self.lock:
            self.now -= 1
        return Decision.final("查不到，抱歉。")


def test_max_connections_caps_requests_in_flight(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    slow = Slow(0.05)
    with FakeOpenAIServer(responder=slow) as server, allow_model_requests():
        res = runner.invoke(app, ["eval", "c4", "--model", server.spec(), "--case", "C4-LD-*", "--case", "C4-PA-0[12]",
                                  "--concurrency", "6", "--max-connections", "2", "--timeout", "30",
                                  "--store", str(tmp_path / "t.db"), "-q"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert 1 <= slow.most <= 2
    (ev,) = SQLiteStore(tmp_path / "t.db").list_evals()
    assert (ev["config"]["options"]["max_connections"], ev["config"]["options"]["timeout"]) == (2, 30.0)


def test_timeout_counts_on_the_wire(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer(responder=Slow(1.0)) as server, allow_model_requests():
        res = runner.invoke(app, ["eval", "c4", "--model", server.spec(), "--case", "C4-LD-01", "--timeout", "0.2",
                                  "--store", str(tmp_path / "t.db"), "--json", str(tmp_path / "r.json"), "-q"])
    assert res.exit_code == 4, res.output
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    (trial,) = doc["runs"][0]["cases"][0]["trials"]
    assert trial["error_kind"] == "infrastructure" and "timed out after 0.2s" in trial["error"]


def test_models_without_limits_say_so(tmp_path):
    res = runner.invoke(app, ["eval", "c4", "--model", "policy:steady", "--max-connections", "2",
                              "--store", str(tmp_path / "t.db")])
    assert res.exit_code == 2 and "takes no --max-connections / --timeout" in res.output
