"""Record modes none / once / new_episodes / all, as documented in docs/replay.md."""

from __future__ import annotations

import json

import pytest

from tether import Decision, ScriptedModel
from tether.replay import (
    Cassette,
    CassetteNotFound,
    CassetteSession,
    ModelRequestMismatch,
    RecordMode,
    SemanticOutputMismatch,
    ToolArgumentsMismatch,
    default_record_mode,
)


MESSAGE = "请帮我退掉订单 A100"


def test_default_mode_is_none_on_ci_else_once():
    assert default_record_mode({"CI": "true"}) == RecordMode.NONE
    assert default_record_mode({"CI": "1"}) == RecordMode.NONE
    assert default_record_mode({"CI": "false"}) == RecordMode.ONCE
    assert default_record_mode({}) == RecordMode.ONCE


async def test_none_fails_on_a_missing_cassette_naming_the_file(cassette_dir, refund_world, refund_model):
    path = cassette_dir / "missing.json"
    session = CassetteSession(path, mode="none")
    with pytest.raises(CassetteNotFound) as exc:
        await session.run(refund_model(), refund_world.tools, message=MESSAGE)
    assert str(path) in str(exc.value) and "--tether-record-mode=once" in str(exc.value)
    assert refund_world.calls == [] and not path.exists()


async def test_once_records_then_replays(cassette_dir, refund_world, refund_model):
    path = cassette_dir / "once.json"
    first = CassetteSession(path, mode="once")
    assert first.will_record
    r1 = await first.run(refund_model(), refund_world.tools, message=MESSAGE)
    assert first.recorded and path.exists() and len(refund_world.calls) == 3

    second = CassetteSession(path, mode="once")
    assert not second.will_record
    model = refund_model()
    r2 = await second.run(model, refund_world.tools, message=MESSAGE)
    assert not second.recorded and len(refund_world.calls) == 3        # replayed: no tool ran
    assert model.used == 4 and second.replaced_models == []            # the script answered, checked step by step
    assert (r2.status, r2.reply) == (r1.status, r1.reply)
    assert r2.run_id != r1.run_id and r2.trajectory.started.kind == "cassette"

    # a model that is not a double is not asked: the cassette answers for it
    class Provider:
        name = "provider"

        async def request(self, request):
            raise AssertionError("a real model was asked during replay")

    provider = Provider()
    third = CassetteSession(path, mode="once")
    r3 = await third.run(provider, refund_world.tools, message=MESSAGE)
    assert r3.reply == r1.reply and third.replaced_models == [provider]

    # mode none replays an existing cassette just the same
    r4 = await CassetteSession(path, mode="none").run(refund_model(), refund_world.tools, message=MESSAGE)
    assert r4.reply == r1.reply


async def test_a_test_that_now_scripts_another_decision_fails_naming_the_step(cassette_dir, refund_world,
                                                                            refund_model, tmp_path):
    from tether.store import SQLiteStore

    path = cassette_dir / "changed.json"
    await CassetteSession(path, mode="once").run(refund_model(), refund_world.tools, message=MESSAGE)
    store = SQLiteStore(tmp_path / "runs.db")
    session = CassetteSession(path, mode="none", store=store)
    with pytest.raises(ToolArgumentsMismatch) as exc:
        await session.run(refund_model(amount=199), refund_world.tools, message=MESSAGE)
    assert exc.value.step == 3 and str(exc.value).startswith("ReplayMismatch.ToolArguments at step 3: create_refund")
    assert len(refund_world.calls) == 3                  # only the recording ran the tools
    [run] = store.list_runs(kind="cassette")
    assert (run["status"], run["error_kind"]) == ("error", "aborted")

    reworded = ScriptedModel([Decision.call("get_order", {"order_id": "A100"}),
                              Decision.call("check_refund", {"order_id": "A100"}),
                              Decision.call("create_refund", {"order_id": "A100", "amount": 19900}),
                              Decision.final("已为您提交退款申请。")], name="refund-agent")
    with pytest.raises(SemanticOutputMismatch) as semantic:
        await CassetteSession(path, mode="none").run(reworded, refund_world.tools, message=MESSAGE)
    assert semantic.value.step == 4


async def test_replay_refuses_an_input_that_is_not_the_recorded_one(cassette_dir, refund_world, refund_model):
    path = cassette_dir / "drift.json"
    await CassetteSession(path, mode="once").run(refund_model(), refund_world.tools, message=MESSAGE)
    with pytest.raises(ModelRequestMismatch, match="the test's input is not the one recorded"):
        await CassetteSession(path, mode="none").run(refund_model(), refund_world.tools, message="退掉订单 A200")


async def test_new_episodes_replays_what_matches_and_records_the_rest(cassette_dir, refund_world, refund_model):
    path = cassette_dir / "episodes.json"
    await CassetteSession(path, mode="new_episodes").run(refund_model(), refund_world.tools, message=MESSAGE)
    before = Cassette.load(path)
    assert len(before.recorded_requests()) == 4 and len(before.recorded_calls()) == 3
    calls = len(refund_world.calls)

    session = CassetteSession(path, mode="new_episodes")
    result = await session.run(refund_model(), refund_world.tools, message=MESSAGE + "，谢谢")

    after = Cassette.load(path)
    assert result.status == "completed" and session.recorded
    assert len(refund_world.calls) == calls          # the tool calls matched the recording: served from it
    assert after.input.message == MESSAGE + "，谢谢" and after.expected.status == "completed"
    assert after.run_id == result.run_id != before.run_id        # the cassette is the new run
    assert after.started.meta["replay_of"] == before.run_id
    assert [c.to_result() for c in after.recorded_calls()] == [c.to_result() for c in before.recorded_calls()]

    # nothing new: nothing asked live, the file is left alone
    text = path.read_text(encoding="utf-8")
    again = CassetteSession(path, mode="new_episodes")
    await again.run(refund_model(), refund_world.tools, message=MESSAGE + "，谢谢")
    assert not again.recorded and path.read_text(encoding="utf-8") == text


async def test_all_records_again_and_overwrites(cassette_dir, refund_world, refund_model):
    path = cassette_dir / "all.json"
    await CassetteSession(path, mode="once").run(refund_model(), refund_world.tools, message=MESSAGE)
    await CassetteSession(path, mode="all").run(refund_model(amount=19800), refund_world.tools, message=MESSAGE)
    doc = json.loads(path.read_text(encoding="utf-8"))
    refunds = [e for e in doc["events"] if e["type"] == "tool_call" and e["tool"] == "create_refund"]
    assert [r["arguments"]["amount"] for r in refunds] == [19800]          # only the new run
    assert len(refund_world.calls) == 6                                     # both runs were live


async def test_one_run_per_cassette(cassette_dir, refund_world, refund_model):
    session = CassetteSession(cassette_dir / "one.json", mode="once")
    await session.run(refund_model(), refund_world.tools, message=MESSAGE)
    with pytest.raises(Exception, match="a cassette holds one run"):
        await session.run(refund_model(), refund_world.tools, message=MESSAGE)


def test_a_file_that_is_not_a_cassette_fails_with_its_location(cassette_dir):
    bad = cassette_dir / "bad.json"
    bad.write_text('{"format": "tether.cassette", "version": 9}', encoding="utf-8")
    with pytest.raises(Exception, match=r"bad.json \[version\]: cassette version 9 is newer"):
        Cassette.load(bad)
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(Exception, match=r"bad.json:1:2: not JSON"):
        Cassette.load(bad)
