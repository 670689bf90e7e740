"""Guard-stack decision time per tool call, by history length.

    python benchmarks/guards_bench.py            # prints a table (markdown)

For histories of 10, 100, 1,000 and 10,000 earlier calls, measures the time the
reference stack (budget + loop + result) takes to decide one tool call
(before_tool + after_tool), next to the loop detector most teams write first:
seed 002's ``LoopDetector`` (``history.count(signature)`` over the whole
history), run on the same calls. tether's loop guard keeps a bounded window,
so its cost stays flat while the naive one grows with the history.

The history is fed to the guards as earlier calls, each through ``before_tool``
and ``after_tool`` as a run feeds them, but ``ctx.tool_calls`` is held at 0: a
real run with this much history would have been stopped by the reference budget
at 25 calls, and what is measured here is the cost of deciding a call, not of
writing a budget stop on every one. The cost of reading the clocks themselves
(timed on an empty decision) is taken off both columns.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import time

from tether.events import ToolCallEvent, ToolResultEvent, Trajectory
from tether.guards import GuardContext
from tether.guards.stacks import guard_stack
from tether.messages import ToolCallRequest

SIZES = (10, 100, 1_000, 10_000)
MEASURED = 200   # decisions timed at each size


class SeedLoopDetector:
    """Seed 002 section 3.1, verbatim in spirit: md5 of the action, count over the whole history."""

    def __init__(self, max_repeat: int = 2, max_steps: int = 10**9):
        self.max_repeat, self.max_steps, self.history, self.steps = max_repeat, max_steps, [], 0

    def check(self, action: dict) -> tuple[bool, str]:
        self.steps += 1
        if self.steps > self.max_steps:
            return False, "steps"
        sig = hashlib.md5(json.dumps(action, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
        if self.history.count(sig) >= self.max_repeat:
            return False, "repeat"
        self.history.append(sig)
        return True, ""


def synthetic_call(i: int) -> tuple[ToolCallRequest, ToolResultEvent]:
    tool = ("taobao_search_products", "weibo_search_posts", "web_search", "maps_text_search")[i % 4]
    call = ToolCallRequest(id=f"c{i}", name=tool, arguments={"keyword": f"关键词 {i}", "page": i % 7})
    result = ToolResultEvent(step=i, call_id=f"c{i}", tool=tool, ok=True, data={"total": 1, "items": [f"item {i}"]})
    return call, result


def bench_stack(history: int) -> tuple[float, float]:
    """(median wall time, process CPU time per decision), in microseconds."""
    stack = list(guard_stack("on")())
    t = Trajectory()
    ctx = GuardContext(trajectory=t)
    for i in range(history):
        call, result = synthetic_call(i)
        t.append(ToolCallEvent(step=i, call_id=call.id, tool=call.name, arguments=call.arguments))
        t.append(result)
        for g in stack:
            g.before_tool(ctx, call)
        for g in stack:
            g.after_tool(ctx, call, result)
    samples = []
    cpu = 0.0
    for j in range(MEASURED):
        call, result = synthetic_call(history + j)
        start, start_cpu = time.perf_counter(), time.process_time()
        for g in stack:
            g.before_tool(ctx, call)
        for g in stack:
            g.after_tool(ctx, call, result)
        cpu += time.process_time() - start_cpu
        samples.append(time.perf_counter() - start)
        t.append(result)
    wall_clock, cpu_clock = clock_cost()
    return statistics.median(samples) * 1e6 - wall_clock, cpu / MEASURED * 1e6 - cpu_clock


def clock_cost() -> tuple[float, float]:
    """(wall, CPU) microseconds the timing itself adds to one decision: the same
    clock reads around nothing (reading the process CPU clock is a system call)."""
    samples = []
    cpu = 0.0
    for _ in range(MEASURED * 10):
        start, start_cpu = time.perf_counter(), time.process_time()
        cpu += time.process_time() - start_cpu
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6, cpu / (MEASURED * 10) * 1e6


def bench_seed(history: int) -> float:
    d = SeedLoopDetector()
    for i in range(history):
        call, _ = synthetic_call(i)
        d.check({"tool": call.name, "args": call.arguments})
    samples = []
    for j in range(MEASURED):
        call, _ = synthetic_call(history + j)
        start = time.perf_counter()
        d.check({"tool": call.name, "args": call.arguments})
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def main() -> None:
    rows = [(n, *bench_stack(n), bench_seed(n)) for n in SIZES]
    wall_clock, cpu_clock = clock_cost()
    print(f"python {sys.version.split()[0]}; median of {MEASURED} decisions per size; microseconds per tool call "
          "(wall: median; CPU: this process's CPU time, mean, which a loaded machine inflates less; the clocks' "
          f"own cost, {wall_clock:.1f} µs wall and {cpu_clock:.1f} µs CPU, taken off)\n")
    print("| history (calls) | tether stack: budget+loop+result | process CPU per call | "
          "seed 002 LoopDetector (loop only) | ratio tether/seed |")
    print("|---:|---:|---:|---:|---:|")
    for n, ours, cpu, seed in rows:
        print(f"| {n:,} | {ours:.1f} µs | {cpu:.1f} µs | {seed:.1f} µs | {ours / seed:.2f} |")
    growth_ours = rows[-1][1] / rows[0][1]
    growth_seed = rows[-1][3] / rows[0][3]
    print(f"\ngrowth from {SIZES[0]:,} to {SIZES[-1]:,} calls: tether x{growth_ours:.1f}, seed detector x{growth_seed:.1f}")


if __name__ == "__main__":
    main()
