"""Per-model connection limits and on-the-wire timeouts, over real loopback HTTP."""

from __future__ import annotations

import asyncio
import threading
import time

from tether.messages import Message
from tether.models import ModelRequest, allow_model_requests
from tether.models._http import ModelOptions, RetryOptions, default_connections
from tether.models.openai_compat import OpenAIChatModel
from tether.testing.fake_openai import FakeOpenAIServer


class Slow:
    """A responder that takes ``seconds`` per request and tracks how many run at once."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.now = self.peak = 0
        self.lock = threading.Lock()

    def __call__(self, request):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.seconds)
        with self.lock:
            self.now -= 1
        return "ok"


def _req() -> ModelRequest:
    return ModelRequest(messages=[Message(role="user", content="hi")])


def test_a_server_on_this_machine_gets_one_connection_by_default():
    assert default_connections("http://127.0.0.1:8080/v1") == 1
    assert default_connections("http://localhost:11434/v1") == 1
    assert default_connections("https://api.example.com/v1") == 16
    assert default_connections(None) == 16


async def test_queued_requests_do_not_time_out_waiting_for_a_slot(monkeypatch):
    monkeypatch.delenv("OPENAI_COMPAT_API_KEY", raising=False)
    slow = Slow(1.0)
    with FakeOpenAIServer(responder=slow) as server:
        # 4 requests, one slot, 1 s each: the last waits 3 s for its slot, more than the
        # 2.5 s timeout, and must still succeed (the timeout counts time on the wire;
        # the margins are wide so a loaded machine does not make the test flaky)
        model = OpenAIChatModel("m", base_url=server.base_url,
                                options=ModelOptions(timeout=2.5, retry=RetryOptions(max_retries=0)))
        assert model.limit.n == 1
        with allow_model_requests():
            out = await asyncio.gather(*(model.request(_req()) for _ in range(4)))
    assert [r.decision.text for r in out] == ["ok"] * 4
    assert slow.peak == 1
    assert model.stats.retries == 0


async def test_max_connections_allows_that_many_at_once(monkeypatch):
    monkeypatch.delenv("OPENAI_COMPAT_API_KEY", raising=False)
    slow = Slow(0.2)
    with FakeOpenAIServer(responder=slow) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, options=ModelOptions(max_connections=2))
        with allow_model_requests():
            await asyncio.gather(*(model.request(_req()) for _ in range(6)))
    assert slow.peak == 2
