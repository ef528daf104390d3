"""In-process hot-path loop: the real ASGI app, a real nginx upstream, no HTTP server in front.

``uv run python -m bench.inproc [--case openai] [-n 2000] [--profile out.prof]`` starts the
nginx stand-in, builds Turnstile exactly as ``bench.run`` configures it (guards, routing with a
fallback deployment, accounting, SQLite transcript, one JSON access-log line per request, written
to a file), drives ``n`` sequential requests straight into the ASGI app and prints the process
CPU time per request (user + system of this process only: nginx runs in its own). CPU time does
not depend on how busy the machine is, so this is the load-independent measure of the hot path;
``--profile`` writes a cProfile of the loop (read it with ``python -m pstats``); ``--opcodes``
prints the bytecodes the event-loop thread executes per request, by module and function
(:mod:`bench.opcodes`: deterministic, load-independent; ~30x slower, so use a small ``-n``).
``--tracing`` turns OpenTelemetry tracing on, exporting over OTLP/HTTP to a local sink
(:mod:`bench.otlp_sink`) in this process. ``--access`` requires virtual keys: the requests carry
one with a hard day budget and rpm/tpm/concurrent limits far above the load (every turn is
judged, admitted, reserved and settled; counters in process), and every deployment is priced.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import procs
from bench.bodies import extra_bodies, request_bodies
from bench.opcodes import OpcodeCounter
from bench.run import turnstile_config
from bench.upstream import nginx_binary, nginx_config

ROUNDS = 10
"""The loop is split in this many rounds; the fastest round's CPU time per request is the
least disturbed by other work on the machine."""


def _callgrind(*args: str) -> None:
    """Under ``valgrind --tool=callgrind --instr-atstart=no`` (env ``BENCH_CALLGRIND=1``), switch
    instrumentation of this process on or off: instruction counts of the measured loop only."""
    if os.environ.get("BENCH_CALLGRIND") == "1":
        import subprocess

        subprocess.run(["callgrind_control", *args, str(os.getpid())], check=True, capture_output=True)


async def _drive(app: Any, path: str, body: bytes, n: int, key: str = "bench") -> int:
    """Send ``n`` requests through the ASGI ``app`` with ``key``; returns the number of 200
    answers."""
    ok = 0
    headers = [
        (b"host", b"127.0.0.1"),
        (b"content-type", b"application/json"),
        (b"authorization", f"Bearer {key}".encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    for _ in range(n):
        sent = False
        status = 0

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 5555),
            "server": ("127.0.0.1", 4000),
            "state": {},
        }
        await app(scope, receive, send)
        ok += status == 200
    return ok


async def _main(
    cases: list[str],
    n: int,
    profile: Path | None,
    workdir: Path,
    floor: bool = False,
    opcodes: bool = False,
    tracing: bool = False,
    access: bool = False,
) -> None:
    from gateway.config import load_config
    from gateway.server import create_app

    port = procs.free_port()
    conf = nginx_config(workdir / "nginx", port)
    nginx = procs.Proc(
        "upstream",
        [nginx_binary() or "nginx", "-c", str(conf), "-p", str(conf.parent)],
        workdir / "nginx.log",
    )
    try:
        await procs.wait_ready(nginx, f"http://127.0.0.1:{port}/", 20)
        os.environ["BENCH_UPSTREAM_KEY"] = "bench"
        if floor:  # the bare pass-through, for comparison
            os.environ["BENCH_UPSTREAM"] = f"http://127.0.0.1:{port}"
            import bench.floor

            bench.floor.UPSTREAM = os.environ["BENCH_UPSTREAM"]
            app: Any = bench.floor.app
        else:
            cfg = load_config(turnstile_config(f"http://127.0.0.1:{port}", 4000, workdir))
            if tracing:
                from bench.otlp_sink import OtlpSink

                sink = OtlpSink()
                traced = cfg.tracing.model_copy(update={"enabled": True, "otlp_endpoint": sink.url})
                cfg = cfg.model_copy(update={"tracing": traced})
            if access:
                from gateway.config import AccessConfig, Price

                priced = [
                    d.model_copy(update={"price": Price(input=1.0, output=2.0)}) for d in cfg.deployments
                ]
                keys = AccessConfig(auth="required", admin_key_env=None)
                cfg = cfg.model_copy(update={"access": keys, "deployments": priced})
            app = create_app(cfg)
        bodies = {**request_bodies(), **extra_bodies()}
        async with app.router.lifespan_context(app):
            key = "bench"
            if access:  # a server that ran a while has its tokenizer loaded: worst cases count with it
                from gateway.providers.catalog import count_tokens, load_tokenizer
                from gateway.schema import Request, TextPart, UserMessage

                load_tokenizer()
                count_tokens(
                    Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])]), "gpt-4o"
                )
                _, key = await app.state.access.create_key(
                    "bench",
                    actor="bench",
                    budgets=[{"period": "day", "usd": 1_000_000, "hard": True}],
                    rate_limits={"rpm": 10_000_000, "tpm": 10_000_000_000, "concurrent": 100_000},
                )
            for case in cases:
                path, body = bodies[case]
                await _drive(app, path, body, min(200, n), key)  # warm-up: pools, caches, imports
                # CPU-time timer: the profile does not count time spent descheduled on a busy machine.
                prof = cProfile.Profile(time.process_time) if profile is not None else None
                rounds: list[float] = []
                c0, t0, th0 = time.process_time(), time.perf_counter(), time.thread_time()
                if prof is not None:
                    prof.enable()
                ok = 0
                per = max(1, n // ROUNDS)
                counter = OpcodeCounter() if opcodes else None
                _callgrind("-i", "on")
                if counter is not None:
                    counter.start()
                for _ in range(ROUNDS):
                    r0 = time.process_time()
                    ok += await _drive(app, path, body, per, key)
                    rounds.append((time.process_time() - r0) / per)
                if counter is not None:
                    counter.stop()
                _callgrind("-i", "off")
                if prof is not None and profile is not None:
                    prof.disable()
                    out = profile.with_name(f"{profile.stem}-{case}{profile.suffix}")
                    prof.dump_stats(out)
                done = per * ROUNDS
                cpu, wall = time.process_time() - c0, time.perf_counter() - t0
                loop_cpu = time.thread_time() - th0
                rounds.sort()
                print(
                    f"{case:17} n={done} ok={ok} cpu/req mean {cpu / done * 1e6:7.1f} us  min-of-{ROUNDS} "
                    f"{rounds[0] * 1e6:7.1f} us  median {rounds[ROUNDS // 2] * 1e6:7.1f} us  wall/req "
                    f"{wall / done * 1e6:7.1f} us  loop-thread {loop_cpu / done * 1e6:7.1f} us",
                    file=sys.__stdout__,
                    flush=True,
                )
                if counter is not None:
                    counter.report(done, sys.__stdout__)
    finally:
        nginx.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--case",
        action="append",
        help="case (repeatable; also openai-20ms, openai-paced); default: the table's",
    )
    ap.add_argument("-n", type=int, default=2000, help="requests per case")
    ap.add_argument("--profile", type=Path, help="write cProfile stats to PROFILE-<case>.prof")
    ap.add_argument("--floor", action="store_true", help="drive the bare pass-through floor instead")
    ap.add_argument("--opcodes", action="store_true", help="count executed bytecodes per module/function")
    ap.add_argument("--tracing", action="store_true", help="tracing on, exported to a local OTLP sink")
    ap.add_argument("--access", action="store_true", help="virtual keys required, a key with limits")
    args = ap.parse_args()
    cases = args.case or list(request_bodies())
    workdir = Path(tempfile.mkdtemp(prefix="turnstile-inproc-"))
    log = (workdir / "turnstile.log").open("w")
    os.dup2(log.fileno(), 2)  # the access log goes to a file, as under the benchmark
    sys.stderr = log
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(
        _main(cases, args.n, args.profile, workdir, args.floor, args.opcodes, args.tracing, args.access)
    )


if __name__ == "__main__":
    main()
