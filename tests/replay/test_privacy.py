"""Redaction at write time: no key-like string in any cassette; pseudonyms keep ids linked."""

from __future__ import annotations

import json

import pytest

from tether import Decision, RunConfig, ScriptedModel, ToolSet, tool
from tether.errors import UsageError
from tether.replay import (
    REDACTED,
    Cassette,
    RedactionRules,
    Redactor,
    Replayer,
    record_run,
    scan_for_secrets,
)

# Fake credentials, shaped like the real ones.
OPENAI = "sk-proj-4fR9xQ2mLk8vT1bN7cZ3eW5yH0uJ6aDs"
ANTHROPIC = "sk-ant-api03-Qw3rTy8uIo0pAs2dFg4hJk6lZx9cVb1nM"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU"
SLACK = "xoxb-123456789012-abcdefghijklmnop"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJVMTIzIn0.c2lnbmF0dXJlLXZhbHVlLWhlcmU"
IDS = RedactionRules(ids={"user": r"U\d{3,}", "order": r"A\d{3,}"})


def leaky_tools() -> ToolSet:
    @tool(description="查询订单")
    def get_order(order_id: str) -> dict:
        return {
            "order_id": order_id, "user_id": "U123", "status": "paid", "total_amount": 19900,
            "contact": {"phone": "13812345678", "email": "zhang.san@example.com", "id_card": "110101199003071234"},
            "upstream": {"headers": {"Authorization": f"Bearer {JWT}", "Set-Cookie": "sid=31d4d96e407aad42; Path=/",
                                     "X-Api-Key": "k-7f3a9b2c1d"},
                         "url": f"https://pay.example.com/v1/orders?order=A100&token=tok_9f8e7d6c&key={AWS}",
                         "body": '{"password": "hunter2!", "note": "ok"}'},
            "debug": f"used {OPENAI} and {ANTHROPIC}",
        }

    @tool(description="提交退款", side_effect=True)
    def create_refund(order_id: str, amount: int, api_key: str = "") -> dict:
        return {"refund_id": "R900", "order_id": order_id, "amount": amount, "status": "submitted",
                "receipt_to": "zhang.san@example.com"}

    return ToolSet([get_order, create_refund])


def agent() -> ScriptedModel:
    return ScriptedModel([
        Decision.call("get_order", {"order_id": "A100"}),
        Decision.call("create_refund", {"order_id": "A100", "amount": 19900, "api_key": SLACK}),
        Decision.final("订单 A100（用户 U123）的退款已提交，退款单号 R900，回执已发到 zhang.san@example.com。"),
    ], name="refund-agent")


async def record_leaky(path) -> Cassette:
    result, cassette = await record_run(
        agent(), leaky_tools(), message=f"退掉订单 A100，我是 U123，电话 138-1234-5678。我的 token 是 {GITHUB}",
        config=RunConfig(system_prompt=f"内部调用请带上 X-Api-Key: {OPENAI}"))
    assert result.status == "completed"
    raw = cassette.to_json()
    assert len(scan_for_secrets(raw)) >= 8       # the unredacted recording is full of keys
    cassette.save(path, rules=IDS)
    return Cassette.load(path)


async def test_no_key_like_string_reaches_the_file(cassette_dir):
    path = cassette_dir / "leaky.json"
    cassette = await record_leaky(path)
    text = path.read_text(encoding="utf-8")
    assert scan_for_secrets(path) == []
    for secret in (OPENAI, ANTHROPIC, AWS, GITHUB, SLACK, JWT, "31d4d96e407aad42", "k-7f3a9b2c1d", "tok_9f8e7d6c",
                   "hunter2!"):
        assert secret not in text
    assert cassette.redaction is not None
    assert (cassette.redaction.name, cassette.redaction.version) == ("tether.default", 2)
    assert cassette.redaction.ids == {"user": r"U\d{3,}", "order": r"A\d{3,}"}
    assert cassette.redaction.secrets_removed >= 10


async def test_personal_data_is_pseudonymized_and_stays_linked(cassette_dir):
    path = cassette_dir / "linked.json"
    cassette = await record_leaky(path)
    text = path.read_text(encoding="utf-8")
    for real in ("A100", "U123", "13812345678", "138-1234-5678", "zhang.san@example.com", "110101199003071234"):
        assert real not in text

    call, result = cassette.recorded_calls()[0], cassette.recorded_calls()[0].result
    order = call.arguments["order_id"]
    assert order == "order-001" == result.data["order_id"]                 # the call and its result agree
    assert result.data["user_id"] == "user-001"
    assert result.data["contact"] == {"phone": "phone-001", "email": "email-001@example.invalid", "id_card": "cnid-001"}
    refund = cassette.recorded_calls()[1]
    assert refund.arguments == {"order_id": "order-001", "amount": 19900, "api_key": REDACTED}
    assert refund.result.data["receipt_to"] == "email-001@example.invalid"
    assert cassette.input.message.startswith("退掉订单 order-001，我是 user-001，电话 phone-001。")
    assert cassette.expected.reply == ("订单 order-001（用户 user-001）的退款已提交，退款单号 R900，"
                                       "回执已发到 email-001@example.invalid。")
    assert cassette.redaction is not None and cassette.redaction.pseudonyms == {
        "order": 1, "user": 1, "phone": 1, "email": 1, "cnid": 1}
    # the model was sent the tool results as JSON inside message strings: redacted there too
    sent = [m for r in cassette.recorded_requests() for m in r.messages if m.role == "tool"]
    assert sent and all("A100" not in m.content and "13812345678" not in m.content for m in sent)
    assert json.loads(sent[0].content)["data"]["user_id"] == "user-001"
    events = json.dumps([e.model_dump(mode="json") for e in cassette.events], ensure_ascii=False)
    assert "order-001" in events and "A100" not in events


async def test_a_pseudonymized_cassette_still_replays_strictly(cassette_dir):
    cassette = await record_leaky(cassette_dir / "replays.json")
    result = await Replayer(cassette).run()
    assert result.status == "completed" and "order-001" in result.reply
    assert [c.arguments["order_id"] for c in result.trajectory.tool_calls()] == ["order-001", "order-001"]


def test_the_same_value_gets_the_same_pseudonym_everywhere():
    r = Redactor(IDS)
    out = r.redact({"q": "U123 asked about A100 and A200", "rows": [{"user": "U123"}, {"order": "A200"}],
                    "again": "订单A100的用户U123"})
    assert out == {"q": "user-001 asked about order-001 and order-002", "rows": [{"user": "user-001"}, {"order": "order-002"}],
                   "again": "订单order-001的用户user-001"}
    assert r.redact(out) == out                        # idempotent: pseudonyms are never renamed


@pytest.mark.parametrize(("text", "kind"), [
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "header"),
    ("curl -H 'Authorization: Bearer abcdefgh12345678'", "bearer"),
    ("GET /v1?api_key=abc123def456", "query_value"),
    (f"key is {AWS}", "aws_key"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "private_key"),
])
def test_scan_finds_key_like_strings_and_redaction_removes_them(text, kind):
    assert kind in {f.kind for f in scan_for_secrets(text)}
    assert scan_for_secrets(Redactor().text(text)) == []


def test_ordinary_text_is_left_alone():
    text = "The key point: keep the token budget low. Basic understanding helps. 订单总价 19900 分。"
    assert Redactor().text(text) == text and scan_for_secrets(text) == []


async def test_save_refuses_to_write_a_leak(cassette_dir, monkeypatch):
    _, cassette = await record_run(ScriptedModel([Decision.final("ok")]), ToolSet(), message="hi")
    import tether.replay.cassette as cassette_module

    monkeypatch.setattr(cassette_module, "scan_for_secrets", lambda text: ["<fake finding>"])
    with pytest.raises(UsageError, match="refusing to write"):
        cassette.save(cassette_dir / "never.json")
    assert not (cassette_dir / "never.json").exists()


async def test_verify_re_runs_the_tools_in_the_pseudonymized_world(cassette_dir):
    cassette = await record_leaky(cassette_dir / "verify.json")
    result = await Replayer(cassette).run(tools=leaky_tools(), verify=True)    # live results redacted, then compared
    assert result.status == "completed"
    sent = result.trajectory.requests()[-1][1]
    assert "13812345678" not in str(sent) and "phone-001" in str(sent)        # the run went on with the recording
