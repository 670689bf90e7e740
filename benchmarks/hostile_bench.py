"""Hostile-input timings (issue 19), on this machine: run by hand, never asserted in tests.

    python benchmarks/hostile_bench.py

1. ``yes | tether runs import -``: wall time and peak memory (RSS) until the size
   error (goal: within 2 s, under 200 MB). The CLI's start-up is measured alone too
   (``tether runs import /dev/null``), so a loaded machine's share is visible.
2. a 1 MB case file with ~60,000 values: ``tether case validate`` (goal: under 1 s),
   and the parse alone in-process.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ENV = {**os.environ, "PYTHONPATH": str(SRC)}


def _timed(argv: list[str], cwd: Path, stdin=None) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS MB of the child, exit code, last line)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=ENV, stdin=stdin, capture_output=True, timeout=120)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace").strip().splitlines()
    return wall, max(peak, before) / 1024, proc.returncode, out[-1] if out else ""


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="tether-hostile-bench-"))
    cli = [sys.executable, "-m", "tether.cli"]
    wall, rss, code, last = _timed([*cli, "runs", "import", "/dev/null", "--store", "s.db"], work)
    print(f"start-up alone (runs import /dev/null): {wall:.2f} s, exit {code}")
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        wall, rss, code, last = _timed([*cli, "runs", "import", "-", "--store", "s.db"], work, stdin=yes.stdout)
    finally:
        yes.kill()
        yes.wait()
        yes.stdout.close()
    print(f"yes | tether runs import -: {wall:.2f} s, peak RSS {rss:.0f} MB, exit {code}: {last}")

    base = subprocess.run([*cli, "case", "show", "C4-LD-01"], env=ENV, capture_output=True, text=True).stdout
    lines, total = [base.rstrip("\n"), "tags:"], len(base)
    while total < 1_000_000 - 40:
        line = f"  - tag-{len(lines):07d}"
        lines.append(line)
        total += len(line) + 1
    case = work / "big.yaml"
    case.write_text("\n".join(lines) + "\n", encoding="utf-8")
    wall, rss, code, last = _timed([*cli, "case", "validate", str(case)], work)
    print(f"tether case validate (1 MB, {len(lines):,} lines): {wall:.2f} s, exit {code}: {last[:120]}")
    sys.path.insert(0, str(SRC))
    from tether.errors import CaseFileError
    from tether.evals import case_yaml

    t = time.perf_counter()
    try:
        case_yaml.parse(case.read_text(encoding="utf-8"), str(case))
    except CaseFileError:
        pass
    print(f"parse alone: {time.perf_counter() - t:.3f} s (loader {case_yaml.LOADER.__name__})")


if __name__ == "__main__":
    main()
