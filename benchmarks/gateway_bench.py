"""The LLM gateway against LiteLLM's proxy, side by side, in one run.

    python benchmarks/gateway_bench.py [--conversations 100,10] [--waves 3] [--turns 5] [--delay 0.2]
                                       [--skip-litellm] [--rounds 1]

One loopback model API (tests/gateway/llm_upstream.py, a fixed ``--delay`` per
request to stand for the model's time) and, in front of it, each in its own
process:

* ``direct``: no proxy (the baseline);
* ``tether --guards off`` and ``tether --guards on``: ``tether gateway``;
* ``litellm``: LiteLLM's proxy (``pip install 'litellm[proxy]'``) as a plain
  pass-through to the same upstream (one model entry, no database, no callbacks).

``--conversations`` agent loops run at once (each level of the comma list in
turn, on every target), each ``--turns`` non-streamed chat requests with a
growing history (tool call, tool result, a new result each turn, so no guard
trips), ``--waves`` times at 100 conversations (more waves at fewer, so each
level makes about the same number of requests). The load generator is a lean
keep-alive HTTP/1.1 client on asyncio streams, the same for every target.
Reported per target: latency p50 / p99 per request, the latency the proxy adds
over ``direct`` (p50, p99), requests per second, and the CPU time the proxy
process spent per request (for ``direct``: the upstream's own), which the
machine's other load does not change much. Everything shares this
machine's cores, the client included: the numbers are for comparing targets
within one run, not absolute. The last lines printed are a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / "tests" / "gateway" / "llm_upstream.py"
KEY = "sk-" + "7f3a9c2e" * 8        # the proxies' key (LiteLLM refuses to start without a master key)
TOOLS = [{"type": "function", "function": {"name": "fetch_report", "description": "Fetch a report by id.",
                                           "parameters": {"type": "object",
                                                          "properties": {"report_id": {"type": "string"}}}}}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with code {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on port {port} after {timeout:g} s")


class Conn:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, port: int):
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        self.writer.write(f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                          f"authorization: Bearer {KEY}\r\ncontent-length: {len(body)}"
                          "\r\n\r\n".encode() + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
        if "content-length" in headers:
            data = await self.reader.readexactly(int(headers["content-length"]))
        else:                       # chunked
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(chunk[:-2])
            data = b"".join(parts)
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, data

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.writer = None


async def conversation(port: int, path: str, n: int, turns: int, latencies: list[float], errors: list[str]) -> None:
    conn = Conn(port)
    messages: list[dict] = [{"role": "system", "content": "You fetch reports."},
                            {"role": "user", "content": f"Fetch report r-7 for customer {n} and summarize it."}]
    try:
        for turn in range(turns):
            body = json.dumps({"model": "stubborn", "messages": messages, "tools": TOOLS}).encode()
            started = time.perf_counter()
            status, data = await conn.post(path, body)
            latencies.append(time.perf_counter() - started)
            if status != 200:
                errors.append(f"{status}: {data[:200]!r}")
                return
            message = json.loads(data)["choices"][0]["message"]
            calls = message.get("tool_calls") or []
            if not calls:
                return
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for c in calls:
                messages.append({"role": "tool", "tool_call_id": c["id"],
                                 "content": json.dumps({"report": "r-7", "page": turn, "customer": n})})
    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()


async def load(port: int, path: str, conversations: int, waves: int, turns: int, offset: int) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    started = time.perf_counter()
    for wave in range(waves):
        base = offset + wave * conversations
        await asyncio.gather(*(conversation(port, path, base + i, turns, latencies, errors)
                               for i in range(conversations)))
    wall = time.perf_counter() - started
    latencies.sort()
    q = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) >= 2 else [0.0] * 99
    return {"requests": len(latencies), "errors": len(errors), "first_error": errors[0] if errors else "",
            "p50_ms": q[49] * 1000, "p99_ms": q[98] * 1000, "rps": len(latencies) / wall}


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) a process and its children have used so far (Linux /proc)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    total = sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks      # utime stime cutime cstime
    try:
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            total += cpu_seconds(int(child))
    except OSError:
        pass
    return total


def start(cmd: list[str], port: int, env: dict | None = None, log: Path | None = None,
          timeout: float = 90.0) -> subprocess.Popen:
    out = open(log, "wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
                            env={**os.environ, **(env or {})})
    wait_port(port, proc, timeout)
    return proc


def litellm_command(upstream: str, port: int, folder: Path) -> list[str] | str:
    exe = shutil.which("litellm") or str(Path(sys.executable).with_name("litellm"))
    if not Path(exe).exists():
        return "LiteLLM is not installed here (pip install 'litellm[proxy]')"
    config = folder / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: stubborn\n"
        "    litellm_params:\n"
        "      model: openai/stubborn\n"
        f"      api_base: {upstream}\n"
        "      api_key: sk-upstream-0000000000000000\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
        "  drop_params: true\n"
        "general_settings:\n"
        f"  master_key: {KEY}\n"
        "  disable_spend_logs: true\n")
    return [exe, "--config", str(config), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]


LABELS = {"direct": "direct (no proxy)", "tether-off": "tether gateway, guards off",
          "tether-on": "tether gateway, guards on", "litellm": "LiteLLM proxy"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conversations", default="100,10",
                    help="concurrent conversations, a comma list: each level is measured on every target")
    ap.add_argument("--waves", type=int, default=3,
                    help="waves at 100 conversations; fewer conversations get more waves (the same requests)")
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--delay", type=float, default=0.2, help="the upstream's time per request, seconds")
    ap.add_argument("--only", default="direct,tether-off,tether-on,litellm")
    ap.add_argument("--skip-litellm", action="store_true", help="leave LiteLLM out (quick iterations)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every target this many times, in alternating order (the machine's load drifts)")
    args = ap.parse_args()
    levels = [int(c) for c in str(args.conversations).split(",") if c.strip()]
    names = [n for n in args.only.split(",") if n and not (args.skip_litellm and n == "litellm")]

    folder = Path(tempfile.mkdtemp(prefix="gateway-bench-"))
    up_port = free_port()
    upstream = f"http://127.0.0.1:{up_port}/v1"
    procs = [start([sys.executable, str(UPSTREAM), str(up_port), "--delay", str(args.delay)], up_port)]
    results: dict[tuple[int, str, int], dict] = {}
    missing: dict[str, str] = {}
    offset = 0
    targets: dict[str, tuple[int, str]] = {}
    pids: dict[str, int | None] = {"direct": procs[0].pid}
    try:
        for name in names:
            port = free_port()
            if name == "direct":
                targets[name] = (up_port, "/v1/chat/completions")
            elif name.startswith("tether"):
                guards = "off" if name == "tether-off" else "on"
                cmd = [sys.executable, "-m", "tether.cli", "gateway", "--upstream", upstream, "--port", str(port),
                       "--guards", guards, "--store", str(folder / f"{name}.db")]
                procs.append(start(cmd, port, log=folder / f"{name}.log"))
                targets[name] = (port, "/v1/chat/completions")
                pids[name] = procs[-1].pid
            elif name == "litellm":
                cmd = litellm_command(upstream, port, folder)
                if isinstance(cmd, str):
                    missing[name] = cmd
                    continue
                try:
                    procs.append(start(cmd, port, env={"LITELLM_LOCAL_MODEL_COST_MAP": "True",
                                                       "LITELLM_TELEMETRY": "False"},
                                       log=folder / "litellm.log", timeout=600.0))
                except RuntimeError as exc:
                    missing[name] = f"LiteLLM did not start ({exc}); see {folder / 'litellm.log'}"
                    continue
                targets[name] = (port, "/v1/chat/completions")
                pids[name] = procs[-1].pid
            else:
                raise SystemExit(f"unknown target {name}")
        order = list(targets)
        for round_ in range(1, args.rounds + 1):
            for conversations in levels:
                waves = max(1, round(args.waves * 100 / conversations))
                for name in (order if round_ % 2 else order[::-1]):
                    target_port, path = targets[name]
                    asyncio.run(load(target_port, path, min(10, conversations), 1, args.turns, 10**6 + offset))
                    offset += 1000
                    cpu = cpu_seconds(pids.get(name))
                    r = asyncio.run(load(target_port, path, conversations, waves, args.turns, offset))
                    r["cpu_ms"] = (cpu_seconds(pids.get(name)) - cpu) * 1000 / max(1, r["requests"])
                    results[(conversations, name, round_)] = r
                    offset += conversations * waves
                    print(f"{conversations} conversations, {name}, round {round_}: "
                          f"p50 {r['p50_ms']:.1f} ms, {r['rps']:.0f} req/s, {r['cpu_ms']:.2f} CPU ms/req, "
                          f"{r['errors']} errors", file=sys.stderr, flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()

    command = "python benchmarks/gateway_bench.py " + " ".join(sys.argv[1:])
    try:
        load_avg = " (load average {:.1f} {:.1f} {:.1f} at the end)".format(*os.getloadavg())
    except OSError:
        load_avg = ""
    print(f"\n`{command.strip()}`: {args.turns} turns per conversation, upstream delay {args.delay * 1000:g} ms, "
          f"{args.rounds} round(s); {os.cpu_count()} CPU(s) shared by the client, the upstream and the proxy"
          f"{load_avg}. Added: the target's latency minus the direct one at the same concurrency, same round. "
          "CPU: the proxy process's CPU time per request (for direct: the upstream's own).\n")
    print("| conversations | target | p50 ms | p99 ms | added p50 ms | added p99 ms | req/s | CPU ms/req | errors |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for conversations in levels:
        for round_ in range(1, args.rounds + 1):
            base = results.get((conversations, "direct", round_))
            for name in order:
                r = results.get((conversations, name, round_))
                if r is None:
                    continue
                label = LABELS.get(name, name) + (f" #{round_}" if args.rounds > 1 else "")
                if base is not None and name != "direct":
                    added = f"{r['p50_ms'] - base['p50_ms']:.1f} | {r['p99_ms'] - base['p99_ms']:.1f}"
                else:
                    added = "- | -"
                print(f"| {conversations} | {label} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {added} | "
                      f"{r['rps']:.0f} | {r['cpu_ms']:.2f} | {r['errors']} |")
    for name, why in missing.items():
        print(f"\n{LABELS.get(name, name)}: not measured: {why}")
    for key, r in results.items():
        if r["errors"]:
            print(f"\n{key[1]} at {key[0]} conversations: first error: {r['first_error']}")


if __name__ == "__main__":
    main()
