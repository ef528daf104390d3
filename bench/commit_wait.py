"""What commit-before-release adds to a turn: the time each answer waits for its transcript row.

``uv run python -m bench.commit_wait [--case openai] [-n 2000] [--concurrency 1,16]`` builds
Turnstile exactly as :mod:`bench.inproc` does (the real ASGI app, the nginx upstream stand-in,
SQLite transcript) and drives ``n`` requests per case with ``c`` concurrent clients for each
``c`` of ``--concurrency``. Every turn's row is queued with ``TranscriptWriter.try_commit`` and
its answer released when the future resolves; the time between the two is the latency
commit-before-release adds to that turn (before it, the answer went out at once and the row
was written behind it). Prints its p50/p90/p99 (ms), the rows per transaction (group commit:
about 1 alone, more under concurrency) and the wall time per request.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import procs
from bench.bodies import request_bodies
from bench.inproc import _drive
from bench.run import turnstile_config
from bench.upstream import nginx_binary, nginx_config


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _main(cases: list[str], n: int, concurrency: list[int], workdir: Path) -> None:
    from gateway.config import load_config
    from gateway.server import create_app
    from gateway.transcript import TranscriptWriter

    port = procs.free_port()
    conf = nginx_config(workdir / "nginx", port)
    argv = [nginx_binary() or "nginx", "-c", str(conf), "-p", str(conf.parent)]
    nginx = procs.Proc("upstream", argv, workdir / "nginx.log")
    try:
        await procs.wait_ready(nginx, f"http://127.0.0.1:{port}/", 20)
        os.environ["BENCH_UPSTREAM_KEY"] = "bench"
        app = create_app(load_config(turnstile_config(f"http://127.0.0.1:{port}", 4000, workdir)))
        bodies = request_bodies()
        async with app.router.lifespan_context(app):
            writer: TranscriptWriter = app.state.gateway.transcript
            waits: list[float] = []
            transactions = 0
            try_commit = getattr(writer, "try_commit", None)  # None: a build without commit-before-release
            write = writer._write

            def timed(record: Any) -> Any:
                t0 = time.perf_counter()
                future = try_commit(record)
                if future is not None:
                    future.add_done_callback(lambda _: waits.append(time.perf_counter() - t0))
                return future

            def counted(statements: Any) -> None:
                nonlocal transactions
                transactions += 1
                write(statements)

            if try_commit is not None:
                writer.try_commit = timed  # type: ignore[method-assign]
            writer._write = counted  # type: ignore[method-assign]
            for case in cases:
                path, body = bodies[case]
                await _drive(app, path, body, min(200, n))  # warm-up
                for c in concurrency:
                    waits.clear()
                    transactions = 0
                    written = writer.written
                    t0 = time.perf_counter()
                    await asyncio.gather(*(_drive(app, path, body, n // c) for _ in range(c)))
                    wall = time.perf_counter() - t0
                    rows = writer.written - written
                    done = (n // c) * c
                    wait = (
                        f"commit wait ms p50 {_quantile(waits, 0.5) * 1e3:6.3f} p90 "
                        f"{_quantile(waits, 0.9) * 1e3:6.3f} p99 {_quantile(waits, 0.99) * 1e3:6.3f} "
                        f"mean {statistics.fmean(waits) * 1e3:6.3f}"
                        if waits
                        else "no commit wait (answers released before their rows)"
                    )
                    print(
                        f"{case:17} conns={c:<3} n={done} {wait}  rows/transaction "
                        f"{rows / max(1, transactions):5.2f}  wall/req {wall / done * 1e6:7.1f} us",
                        file=sys.__stdout__,
                        flush=True,
                    )
    finally:
        nginx.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help="benchmark case (repeatable); default: all")
    ap.add_argument("-n", type=int, default=2000, help="requests per case and concurrency")
    ap.add_argument("--concurrency", default="1,16", help="comma-separated concurrent clients")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="turnstile-commit-"))
    log = (workdir / "turnstile.log").open("w")
    os.dup2(log.fileno(), 2)  # the access log goes to a file, as under the benchmark
    sys.stderr = log
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    concurrency = [int(c) for c in args.concurrency.split(",") if c]
    asyncio.run(_main(args.case or list(request_bodies()), args.n, concurrency, workdir))


if __name__ == "__main__":
    main()
