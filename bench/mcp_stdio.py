"""What the stdio launcher and transport cost (issue 11, items 13 and 14).

Run: ``uv run --locked python -m bench.mcp_stdio [-n RUNS] [--calls CALLS]`` (Linux).

* ``launcher RSS``: resident memory of one :mod:`mcp_servers._launcher` process serving the
  fixture server (``VmRSS``; ``Pss`` and ``Private`` from ``/proc/PID/smaps_rollup``: what it
  adds, shared pages of the Python binary counted once);
* ``spawn``: wall time of ``/bin/true`` run directly and through the launcher (median of RUNS);
* ``start``/``stop``: :class:`mcp_servers.upstream.Upstream` with the fixture server from
  ``start()`` to ready and ``stop()``, through the launcher and directly (median of RUNS);
* ``echo call``: median latency of CALLS ``tools/call echo`` over stdio through the gateway's
  transport and through the ``mcp`` SDK's ``stdio_client`` (per-call cost of the framing).

Numbers from a 2-CPU machine shared with other work: compare within one run.

Measured 2026-12-01 (2-CPU VM, load average 6.2-6.7 from other work, Python 3.11.7, mcp 2.3.0):
launcher VmRSS 9,920 KiB, Pss 4,125 KiB, private 3,688 KiB; spawn of ``/bin/true`` 2.3 ms direct,
106.6 ms through the launcher (``python -I -S -c pass`` alone took 35-60 ms in the same minutes:
the launcher is one small interpreter start plus ``ctypes``); fixture server start to ready
5,407 ms through the launcher vs 4,741 ms direct (the server's own start dominates; the spread
between runs is as large); stop 1,440 vs 1,375 ms; echo call 9.6 ms (launcher) vs 10.4 ms
(direct) through the gateway's transport, 15.9 ms through the SDK's ``stdio_client``. A 100 MiB
answer: refused in 1.2 s with the process's peak RSS at 86 MB (70 MB idle); through the SDK's
reader a 10 MiB answer took 3.7 s and 20 MiB 16.4 s (quadratic re-copying; peak 120 and 170 MB).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcp_servers import stdio_transport
from mcp_servers import upstream as upstream_mod
from mcp_servers.config import McpServerSpec
from mcp_servers.upstream import Upstream

FIXTURE = Path(__file__).parents[1] / "tests" / "mcp_servers" / "fixture_server.py"


def _spec() -> McpServerSpec:
    return McpServerSpec.model_validate(
        {"id": "fx", "transport": {"type": "stdio", "command": sys.executable, "args": [str(FIXTURE)]}}
    )


def _launcher_pids() -> list[int]:
    out = []
    for task in Path("/proc/self/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"_launcher.py" in cmdline:
                out.append(int(child))
    return out


def _memory_kib(pid: int) -> dict[str, int]:
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            fields["rss"] = int(line.split()[1])
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Pss", "Private_Clean", "Private_Dirty"):
            fields[key] = int(rest.split()[0])
    fields["private"] = fields.pop("Private_Clean", 0) + fields.pop("Private_Dirty", 0)
    return fields


def _spawn_ms(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, check=True)
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


async def _start_stop(runs: int) -> tuple[float, float, dict[str, int]]:
    starts, stops = [], []
    memory: dict[str, int] = {}
    for _ in range(runs):
        up = Upstream(_spec(), read_env=lambda _: None, on_tools=lambda *_: None, health_interval_s=600)
        began = time.perf_counter()
        up.start()
        assert await up.wait_ready(60), up.status()
        starts.append((time.perf_counter() - began) * 1000)
        if not memory and (pids := _launcher_pids()):
            memory = _memory_kib(pids[0])
        began = time.perf_counter()
        await up.stop()
        stops.append((time.perf_counter() - began) * 1000)
    return statistics.median(starts), statistics.median(stops), memory


async def _echo_ms(calls: int) -> float:
    up = Upstream(_spec(), read_env=lambda _: None, on_tools=lambda *_: None, health_interval_s=600)
    up.start()
    assert await up.wait_ready(60)
    try:
        for _ in range(20):
            await up.call_tool("echo", {"text": "warm"})
        times = []
        for _ in range(calls):
            began = time.perf_counter()
            await up.call_tool("echo", {"text": "hello"})
            times.append((time.perf_counter() - began) * 1000)
        return statistics.median(times)
    finally:
        await up.stop()


def main() -> None:
    """Measure and print one table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", "--runs", type=int, default=10)
    parser.add_argument("--calls", type=int, default=300)
    opts = parser.parse_args()
    rows: list[tuple[str, Any]] = []
    rows.append(("spawn /bin/true directly, ms", _spawn_ms(["/bin/true"], opts.runs * 3)))
    launched = stdio_transport.launch_argv("/bin/true", [])
    rows.append(("spawn /bin/true through the launcher, ms", _spawn_ms(launched, opts.runs * 3)))
    start, stop, memory = asyncio.run(_start_stop(opts.runs))
    rows += [("fixture server start to ready, launcher, ms", start), ("stop, launcher, ms", stop)]
    rows += [(f"launcher {k}, KiB", v) for k, v in memory.items()]
    real = stdio_transport.uses_launcher
    stdio_transport.uses_launcher = lambda: False  # type: ignore[assignment]
    start, stop, _ = asyncio.run(_start_stop(opts.runs))
    rows += [("fixture server start to ready, direct, ms", start), ("stop, direct, ms", stop)]
    rows.append(("echo call, gateway transport (direct), ms", asyncio.run(_echo_ms(opts.calls))))
    stdio_transport.uses_launcher = real  # type: ignore[assignment]
    rows.append(("echo call, gateway transport (launcher), ms", asyncio.run(_echo_ms(opts.calls))))
    original = upstream_mod.stdio_transport
    upstream_mod.stdio_transport = lambda params, **_: params  # type: ignore[assignment]
    rows.append(("echo call, mcp SDK stdio_client, ms", asyncio.run(_echo_ms(opts.calls))))
    upstream_mod.stdio_transport = original  # type: ignore[assignment]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        shown = f"{value:,.2f}" if isinstance(value, float) else f"{value:,}"
        print(f"{name:<{width}}  {shown:>10}")


if __name__ == "__main__":
    main()
