"""What `--help` costs, as a ratio to a bare interpreter start (`python -c pass`).

    python benchmarks/help_cost.py [--runs 10]

Each command runs `--runs` times in a fresh interpreter; the median CPU time
(user + system, of the child process) is compared with the median of
`python -c pass` measured in the same run. CPU time, not wall time: on a busy
machine wall time mostly measures the wait for a core. The goal (issue 23): at most 20x for `tether --help`,
`tether eval --help` and `tether runs --help`.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "tether --help": [sys.executable, "-m", "tether.cli", "--help"],
    "tether eval --help": [sys.executable, "-m", "tether.cli", "eval", "--help"],
    "tether runs --help": [sys.executable, "-m", "tether.cli", "runs", "--help"],
}
GOAL = 20.0


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def median_seconds(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float]]:
    """(median CPU seconds, median wall seconds) per command. The commands take turns,
    one run each per round, so a change in the machine's load hits all of them alike
    and the ratios to the bare start stay comparable."""
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            c0, w0 = _cpu(), time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            cpu[name].append(_cpu() - c0)
            wall[name].append(time.perf_counter() - w0)
    return {name: (statistics.median(cpu[name]), statistics.median(wall[name])) for name in commands}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    base = None
    worst = 0.0
    print(f"{'command':<22} {'CPU':>9} {'x bare':>7} {'wall':>9}")
    for name, (t, wall) in median_seconds(COMMANDS, args.runs).items():
        base = base or t
        ratio = t / base
        if name != "python -c pass":
            worst = max(worst, ratio)
        print(f"{name:<22} {t * 1000:>6.0f} ms {ratio:>6.1f}x {wall * 1000:>6.0f} ms")
    print(f"worst ratio {worst:.1f}x (goal <= {GOAL:.0f}x): {'met' if worst <= GOAL else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
