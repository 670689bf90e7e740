"""Record modes none / once / new_episodes / all, as documented in docs/replay.md."""

from __future__ import annotations

import json

import pytest

from tether.replay import (
    Cassette,
    CassetteNotFound,
    CassetteSession,
    ModelRequestMismatch,
    RecordMode,
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
    assert model.used == 0 and second.replaced_models == [model]       # nor the model
    assert (r2.status, r2.reply) == (r1.status, r1.reply)

    # mode none replays an existing cassette just the same
    r3 = await CassetteSession(path, mode="none").run(refund_model(), refund_world.tools, message=MESSAGE)
    assert r3.reply == r1.reply


async def test_replay_refuses_an_input_that_is_not_the_recorded_one(cassette_dir, refund_world, refund_model):
    path = cassette_dir / "drift.json"
    await CassetteSession(path, mode="once").run(refund_model(), refund_world.tools, message=MESSAGE)
    with pytest.raises(ModelRequestMismatch, match="the test's input is not the one recorded"):
        await CassetteSession(path, mode="none").run(refund_model(), refund_world.tools, message="退掉订单 A200")


async def test_new_episodes_replays_what_matches_and_appends_the_rest(cassette_dir, refund_world, refund_model):
    path = cassette_dir / "episodes.json"
    await CassetteSession(path, mode="new_episodes").run(refund_model(), refund_world.tools, message=MESSAGE)
    before = Cassette.load(path)
    assert {i.episode for i in before.interactions} == {1} and len(before.interactions) == 7
    calls = len(refund_world.calls)

    session = CassetteSession(path, mode="new_episodes")
    result = await session.run(refund_model(), refund_world.tools, message=MESSAGE + "，谢谢")

    after = Cassette.load(path)
    assert result.status == "completed" and session.recorded
    assert after.interactions[:7] == before.interactions                   # the old episode is kept as is
    new = after.interactions[7:]
    assert [i.kind for i in new] == ["model"] * 4 and {i.episode for i in new} == {2}
    assert len(refund_world.calls) == calls          # the tool calls matched the recording: served from it
    assert after.input.message == MESSAGE + "，谢谢" and after.expected.status == "completed"


async def test_all_records_again_and_overwrites(cassette_dir, refund_world, refund_model):
    path = cassette_dir / "all.json"
    await CassetteSession(path, mode="once").run(refund_model(), refund_world.tools, message=MESSAGE)
    await CassetteSession(path, mode="all").run(refund_model(amount=19800), refund_world.tools, message=MESSAGE)
    doc = json.loads(path.read_text(encoding="utf-8"))
    refunds = [i for i in doc["interactions"] if i.get("tool") == "create_refund"]
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
