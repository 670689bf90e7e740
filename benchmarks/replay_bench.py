"""Load and replay a 10,000-event cassette: tether vs vcrpy, side by side in one run.

    pip install -e '.[bench]'            # adds vcrpy and httpx
    python benchmarks/replay_bench.py    # sizes 1,000 and 5,000 tool calls; about 8 minutes, mostly vcrpy
    python benchmarks/replay_bench.py 500   # a quick look

The recorded run: a model step deciding 5,000 tool calls, then a final answer
(about 10,000 events). tether loads its JSON cassette (the run's own trace
format v2 events, validated, plus its environment) and replays the run as a
new run, strictly (both model requests checked against the recording, every tool
call's name and arguments compared in order, call counts enforced). vcrpy
loads a YAML cassette of the *same* interactions as HTTP (the two
chat-completion POSTs with the conversation as body, 5,000 tool POSTs) and
replays them through httpx, matching method, URI and body. Both numbers
include loading the cassette from disk.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tether.messages import Decision, ToolCallRequest
from tether.models import FunctionModel
from tether.replay import Cassette
from tether.replay.record import record_run
from tether.replay.replayer import replay_run
from tether.runtime import RunConfig
from tether.tools import ToolSet, tool

STEPS, CALLS_PER_STEP, REPEATS = 1, 5000, 3


@tool(description="商品搜索")
def search(keyword: str, page: int):
    return {"keyword": keyword, "page": page, "items": [f"{keyword} 第 {page} 页 商品 {i}" for i in range(3)]}


def decide(req):
    if req.step > STEPS:
        return Decision.final("完成")
    calls = [ToolCallRequest(id=f"c{req.step}_{i}", name="search", arguments={"keyword": f"关键词{req.step}", "page": i})
             for i in range(CALLS_PER_STEP)]
    return Decision(kind="tool_calls", tool_calls=calls)


def record(path: Path) -> tuple[Cassette, list]:
    result, cassette = asyncio.run(record_run(FunctionModel(decide, name="bench"), ToolSet([search]), message="开始",
                                              config=RunConfig(max_steps=STEPS + 1)))
    cassette.save(path)
    return cassette, result.trajectory.events


def tether_once(path: Path) -> float:
    start = time.perf_counter()
    cassette = Cassette.load(path)
    result = asyncio.run(replay_run(cassette, config=RunConfig(max_steps=STEPS + 1)))
    elapsed = time.perf_counter() - start
    assert result.status == "completed", result.status
    return elapsed


def write_vcr_cassette(path: Path, cassette: Cassette) -> int:
    """The same interactions as HTTP, in vcrpy's own cassette format."""
    import yaml

    interactions = []
    messages: list[dict] = [{"role": "user", "content": "开始"}]
    tool_iter = iter(cassette.recorded_calls())
    for step in range(1, STEPS + 2):
        body = json.dumps({"model": "bench", "messages": messages}, ensure_ascii=False)
        decision = decide(type("R", (), {"step": step})())
        interactions.append(_vcr("https://api.example.com/v1/chat/completions", body,
                                 json.dumps(decision.model_dump(mode="json"), ensure_ascii=False)))
        if decision.kind == "final":
            break
        messages.append({"role": "assistant", "tool_calls": [c.model_dump(mode="json") for c in decision.tool_calls]})
        for call in decision.tool_calls:
            ti = next(tool_iter)
            args = json.dumps(call.arguments, ensure_ascii=False)
            result = json.dumps(ti.envelope(), ensure_ascii=False)
            interactions.append(_vcr("https://tools.example.com/search", args, result))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}, allow_unicode=True), encoding="utf-8")
    return len(interactions)


def _vcr(uri: str, body: str, answer: str) -> dict:
    return {"request": {"body": body, "headers": {"content-type": ["application/json"]}, "method": "POST", "uri": uri},
            "response": {"body": {"string": answer}, "headers": {"content-type": ["application/json"]},
                         "status": {"code": 200, "message": "OK"}}}


def vcr_once(path: Path, match_on: tuple[str, ...]) -> float | None:
    try:
        import httpx
        import vcr
    except ImportError:
        return None
    import yaml

    start = time.perf_counter()
    recorded = yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"]   # the client replays what it sent
    with vcr.use_cassette(str(path), record_mode="none", match_on=list(match_on)), httpx.Client() as client:
        for it in recorded:
            r = client.post(it["request"]["uri"], content=it["request"]["body"].encode("utf-8"),
                            headers={"content-type": "application/json"})
            assert r.status_code == 200
    return time.perf_counter() - start


VCR_DEFAULT = ("method", "scheme", "host", "port", "path", "query")   # vcrpy's default: the body is not compared
VCR_BODY = ("method", "uri", "body")


def main() -> None:
    global CALLS_PER_STEP
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 5000]
    print(f"python {sys.version.split()[0]}; load + strict replay, seconds (tether: median of {REPEATS}; vcrpy: one run)\n")
    print("| tool calls | events | tether strict (requests, names, arguments, counts) | vcrpy default (no body match) | "
          "vcrpy matching the body | tether / vcrpy default |")
    print("|---:|---:|---:|---:|---:|---:|")
    for calls in sizes:
        CALLS_PER_STEP = calls
        with tempfile.TemporaryDirectory() as d:
            ours_path, vcr_path = Path(d) / "run.json", Path(d) / "run.yaml"
            cassette, events = record(ours_path)
            write_vcr_cassette(vcr_path, cassette)
            ours = statistics.median(tether_once(ours_path) for _ in range(REPEATS))
            default = vcr_once(vcr_path, VCR_DEFAULT)
            body = vcr_once(vcr_path, VCR_BODY) if calls <= 1000 else None
        fmt = lambda x: "-" if x is None else f"{x:.2f} s"   # noqa: E731
        ratio = "-" if default is None else f"{ours / default:.3f}"
        body_cell = fmt(body) if calls <= 1000 else "not run (quadratic: about an hour)"
        print(f"| {calls:,} | {len(events):,} | {ours:.2f} s | {fmt(default)} | {body_cell} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
