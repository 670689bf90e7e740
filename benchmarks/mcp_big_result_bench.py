"""A big MCP tool result end to end, with and without ``tether guard mcp`` in between.

    python benchmarks/mcp_big_result_bench.py [--megabytes 60] [--rounds 3]

The server is tests/gateway/mcp_servers.py (the ``mcp`` SDK's server, stdio),
whose ``big`` tool returns a text of that many megabytes. Timed from the
``tools/call`` request to the whole answer read by the client:

* ``server alone``: the server's answer read straight from its stdout (the floor:
  the SDK serialising and writing it);
* ``gateway, stdio``: the same call through ``tether guard mcp -- SERVER`` on its
  stdio, guards on, recorded (a lean newline-JSON client);
* ``gateway, HTTP``: through ``tether guard mcp --listen`` (a lean HTTP client);
* ``SDK client``: the ``mcp`` SDK's own client over Streamable HTTP (it parses
  the result into its models) to ``tether guard mcp --listen`` in front of the
  stdio server. There is no direct SDK row: the SDK's stdio client copies its
  buffer on every chunk (minutes for 60 MB) and its HTTP server answers in
  server-sent events, which its client refuses over 1 MB.

Prints a Markdown table of the best and median time of each, over ``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / "tests" / "gateway" / "mcp_servers.py"
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def server() -> list[str]:
    return [sys.executable, str(SERVERS), "tools"]


def gateway(store: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "tether.cli", "guard", "mcp", "--store", str(store), *options, "--", *server()]


async def over_stdio(command: list[str], megabytes: int) -> tuple[float, float]:
    """Initialize, then time one big call: request written -> whole answer line read."""
    proc = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.DEVNULL, limit=2**30, env=env())
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
        await proc.stdout.readuntil(b"\n")
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_time", "arguments": {}}})
        await proc.stdout.readuntil(b"\n")                 # warm: the server up, the window open
        started, cpu0 = time.perf_counter(), cpu(proc.pid)
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "big", "arguments": {"megabytes": megabytes}}})
        line = await proc.stdout.readuntil(b"\n")
        elapsed, spent = time.perf_counter() - started, cpu(proc.pid) - cpu0
        assert len(line) > megabytes * 1024 * 1024, len(line)
        assert line.startswith(b'{"') and b'"id":3' in line[:100].replace(b" ", b""), line[:100]
        return elapsed, spent
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def cpu(pid: int) -> float:
    """CPU seconds (user + system) the process itself has used so far (Linux; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def over_http(store: Path, megabytes: int) -> tuple[float, float]:
    import httpx

    port = free_port()
    proc = subprocess.Popen(gateway(store, "--listen", f"127.0.0.1:{port}"), env=env(), stderr=subprocess.DEVNULL)
    try:
        await wait_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(timeout=300) as http:
            init = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                               "params": INIT})
            headers["mcp-session-id"] = init.headers["mcp-session-id"]
            await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                        "params": {"name": "get_time", "arguments": {}}})
            started, cpu0 = time.perf_counter(), cpu(proc.pid)
            reply = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                                                "params": {"name": "big",
                                                                           "arguments": {"megabytes": megabytes}}})
            elapsed, spent = time.perf_counter() - started, cpu(proc.pid) - cpu0
        assert reply.status_code == 200 and len(reply.content) > megabytes * 1024 * 1024
        return elapsed, spent
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def with_sdk(command: list[str], port: int, megabytes: int) -> tuple[float, float]:
    """The mcp SDK's client over Streamable HTTP to ``command``, which listens on ``port``."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    proc = subprocess.Popen(command, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await wait_port(port)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
            async with ClientSession(read, write) as client:
                await client.initialize()
                await client.call_tool("get_time", {})
                started, cpu0 = time.perf_counter(), cpu(proc.pid)
                result = await client.call_tool("big", {"megabytes": megabytes})
                elapsed, spent = time.perf_counter() - started, cpu(proc.pid) - cpu0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert len(result.content[0].text) == megabytes * 1024 * 1024
    return elapsed, spent


async def wait_port(port: int) -> None:
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--megabytes", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-sdk", action="store_true", help="skip the two rows with the mcp SDK's client")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="mcp-big-"))
    mb = args.megabytes
    targets = {
        "server alone (its stdout, read linearly)": lambda i: over_stdio(server(), mb),
        "tether guard mcp, stdio (lean client)": lambda i: over_stdio(gateway(folder / f"s{i}.db"), mb),
        "tether guard mcp --listen, HTTP (lean client)": lambda i: over_http(folder / f"h{i}.db", mb),
    }
    if not args.no_sdk:
        def gateway_sdk(i: int):
            port = free_port()
            return with_sdk(gateway(folder / f"k{i}.db", "--listen", f"127.0.0.1:{port}"), port, mb)

        targets["mcp SDK client, HTTP, through tether guard mcp --listen"] = gateway_sdk
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in targets}
    for i in range(args.rounds):
        for name, run in targets.items():
            times[name].append(asyncio.run(run(i)))
            print(f"{name}: {times[name][-1][0]:.2f} s, {times[name][-1][1]:.2f} s CPU", file=sys.stderr, flush=True)
    command = "python benchmarks/mcp_big_result_bench.py " + " ".join(sys.argv[1:])
    print(f"\n`{command.strip()}`: a {mb} MB tool result, request to last byte, {args.rounds} round(s); "
          f"{os.cpu_count()} CPU(s) shared by the server, the gateway and the client. CPU: what the process in "
          "the middle spent on the call (the gateway; for the first row, the server itself).\n")
    print("| path | best s | median s | CPU s (median) |")
    print("|---|---:|---:|---:|")
    for name, ts in times.items():
        print(f"| {name} | {min(t for t, _ in ts):.2f} | {statistics.median(t for t, _ in ts):.2f} | "
              f"{statistics.median(c for _, c in ts):.2f} |")


if __name__ == "__main__":
    main()
