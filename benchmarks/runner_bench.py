"""tether's eval runner next to inspect_ai's on the same workload.

    pip install -e '.[bench]' inspect-ai     # inspect_ai is optional: without it, tether's side only
    python benchmarks/runner_bench.py [--repeat 3] [--json out.json]

The workload (issue 14): 12 cases x 10 trials, 16 trials at once; a mock model
on both sides that answers after a fixed 50 ms; 3 model requests and 2 tool
calls per trial (call, call, final answer). The floor is the model's own time:
ceil(120 / 16) waves x 3 requests x 50 ms = 1.2 s.

* tether: ``run_suite`` on the first 12 C4 cases (their scenario-world tools
  with the cases' mocks in front, every trial a run in a fresh SQLite store,
  scored) around a model that calls the case's first tool twice, then answers.
* inspect_ai: a ``Task`` of 12 samples x 10 epochs, ``use_tools`` + ``generate``
  around a registered mock ``ModelAPI`` doing the same; logging minimised
  (``log_samples=False``, ``log_level="error"``, ``display="none"``), then with
  its default logging.

Each side runs in its own fresh process, ``--repeat`` times, after a one-trial
warm-up in that process (imports, lazy registries and first-use caches are
not timed: inspect_ai imports its providers on its first eval); the median
wall time is reported with the CPU time of that run.
``overhead/trial`` is the time each trial held a slot beyond its 150 ms of
model waiting: (wall - floor) x 16 / 120.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

CASES, TRIALS, CONCURRENCY, LATENCY, REQUESTS = 12, 10, 16, 0.05, 3
N = CASES * TRIALS
FLOOR = math.ceil(N / CONCURRENCY) * REQUESTS * LATENCY
SRC = Path(__file__).resolve().parents[1] / "src"

TETHER = textwrap.dedent(f"""
    import asyncio, json, sys, tempfile, time
    from pathlib import Path
    from tether.evals import EvalConfig, load_suite, run_suite
    from tether.messages import Decision
    from tether.models import ModelResponse

    class Mock:
        name = "mock:50ms"

        async def request(self, request):
            await asyncio.sleep({LATENCY})
            done = sum(1 for m in request.messages if m.role == "tool")
            if done < {REQUESTS - 1} and request.tools:
                return ModelResponse(decision=Decision.call(request.tools[0].name, {{}}, id=f"c{{done}}"))
            return ModelResponse(decision=Decision.final("done"))

    cases = load_suite("c4")[:{CASES}]
    warm = EvalConfig(trials=1, concurrency={CONCURRENCY}, store=Path(tempfile.mkdtemp()) / "warm.db")
    asyncio.run(run_suite(cases[:1], [Mock()], warm))     # imports and first-use caches, not timed
    store = Path(tempfile.mkdtemp()) / "bench.db"
    config = EvalConfig(trials={TRIALS}, concurrency={CONCURRENCY}, store=store)
    wall, cpu = time.perf_counter(), time.process_time()
    results = asyncio.run(run_suite(cases, [Mock()], config))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    trials = [t for _, _, t in results.trials()]
    assert len(trials) == {N} and all(t.counters.tool_calls == {REQUESTS - 1} for t in trials), "workload drifted"
    print(json.dumps({{"wall": wall, "cpu": cpu}}))
""")

INSPECT = textwrap.dedent(f"""
    import asyncio, json, sys, tempfile, time
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelAPI, ModelOutput, get_model, modelapi
    from inspect_ai.model import ChatMessageAssistant, ModelUsage
    from inspect_ai.model._model_output import ChatCompletionChoice
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import ToolCall, tool

    @tool
    def lookup():
        async def execute(query: str = "") -> str:
            \"\"\"Look something up.

            Args:
              query: what to look up
            \"\"\"
            return "no result"
        return execute

    @modelapi(name="benchmock")
    class BenchMock(ModelAPI):
        async def generate(self, input, tools, tool_choice, config):
            await asyncio.sleep({LATENCY})
            done = sum(1 for m in input if m.role == "tool")
            if done < {REQUESTS - 1} and tools:
                msg = ChatMessageAssistant(content="", model="mock", source="generate", tool_calls=[
                    ToolCall(id=f"c{{done}}", function=tools[0].name, arguments={{}})])
                return ModelOutput(model="mock", choices=[ChatCompletionChoice(message=msg, stop_reason="tool_calls")])
            return ModelOutput.from_content(model="mock", content="done")

    minimal = sys.argv[1] == "minimal"
    task = Task(dataset=[Sample(input=f"case {{i}}", target="done") for i in range({CASES})],
                solver=[use_tools(lookup()), generate()], scorer=includes(), epochs={TRIALS})
    model = get_model("benchmock/mock", config=__import__("inspect_ai.model", fromlist=["GenerateConfig"])
                      .GenerateConfig(max_connections={CONCURRENCY}))
    kwargs = dict(log_samples=False, log_level="error", log_realtime=False) if minimal else {{}}
    warm = Task(dataset=[Sample(input="warm", target="done")], solver=[use_tools(lookup()), generate()],
                scorer=includes())
    inspect_eval(warm, model=model, display="none", log_dir=tempfile.mkdtemp(), **kwargs)   # imports: not timed
    log_dir = tempfile.mkdtemp()
    wall, cpu = time.perf_counter(), time.process_time()
    logs = inspect_eval(task, model=model, max_samples={CONCURRENCY}, display="none", log_dir=log_dir, **kwargs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert logs[0].status == "success", logs[0].error
    print(json.dumps({{"wall": wall, "cpu": cpu}}))
""")


def _run(code: str, *args: str) -> dict | None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-2000:])
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(code: str, *args: str, repeat: int) -> dict | None:
    runs = [r for r in (_run(code, *args) for _ in range(repeat)) if r is not None]
    if not runs:
        return None
    median = statistics.median(r["wall"] for r in runs)
    best = min(runs, key=lambda r: abs(r["wall"] - median))
    return {"wall": median, "cpu": best["cpu"], "walls": [round(r["wall"], 3) for r in runs]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--tether-only", action="store_true", help="skip inspect_ai")
    args = parser.parse_args()
    rows: dict[str, dict | None] = {"tether run_suite": measure(TETHER, repeat=args.repeat)}
    if not args.tether_only:
        try:
            import inspect_ai  # noqa: F401
        except ImportError:
            print("inspect_ai is not installed (pip install inspect-ai): tether's side only\n")
        else:
            rows["inspect_ai, logging minimised"] = measure(INSPECT, "minimal", repeat=args.repeat)
            rows["inspect_ai, default logging"] = measure(INSPECT, "default", repeat=args.repeat)
    print(f"{CASES} cases x {TRIALS} trials, {CONCURRENCY} at once, {REQUESTS} requests x {LATENCY * 1000:.0f} ms "
          f"and {REQUESTS - 1} tool calls per trial; floor {FLOOR:.2f} s; median of {args.repeat} runs\n")
    print(f"{'runner':32} {'wall s':>7} {'x floor':>8} {'CPU s':>6} {'CPU/trial':>10} {'overhead/trial':>15}")
    for name, r in rows.items():
        if r is None:
            print(f"{name:32} failed (see stderr)")
            continue
        overhead = (r["wall"] - FLOOR) * CONCURRENCY / N
        print(f"{name:32} {r['wall']:7.2f} {r['wall'] / FLOOR:8.2f} {r['cpu']:6.2f} {r['cpu'] / N * 1000:8.1f}ms "
              f"{overhead * 1000:13.1f}ms")
    t, i = rows.get("tether run_suite"), rows.get("inspect_ai, logging minimised")
    if t and i:
        print(f"\ntether / inspect_ai (logging minimised): {t['wall'] / i['wall']:.2f}x wall, "
              f"{t['cpu'] / i['cpu']:.2f}x CPU")
    if args.json:
        args.json.write_text(json.dumps({"floor": FLOOR, "rows": rows}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
