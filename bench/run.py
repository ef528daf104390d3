"""One command: Turnstile, LiteLLM's proxy and a bare pass-through floor, side by side.

``uv run python -m bench.run`` starts the nginx upstream stand-in, then each server in turn
(one worker each, all on 127.0.0.1), checks that it answers every case, measures time to first
byte of the streams with a small aiohttp client, drives it with wrk at 1, 16 and 64
connections (the case table, translation lanes included), then ramps the sustained load behind
a 20 ms upstream and the concurrent paced streams (:mod:`bench.phases`); last, Turnstile again
at 1 and 2 worker processes. It writes ``bench/RESULTS.md``. ``--smoke`` is a seconds-long run
(CI): one connection, one-second loads, one small level of each ramp, results printed, nothing
written unless ``--out`` is given.

Every loop is bounded in count and time; every process started is stopped by its own id.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import orjson
import yaml

from bench import phases, procs, report, streams
from bench.bodies import (
    ANTHROPIC_MODEL,
    CASE_MODEL,
    OPENAI_MODEL,
    ROUTES,
    STREAM_CASES,
    extra_bodies,
    request_bodies,
    upstream_path,
)
from bench.upstream import has_echo, nginx_binary, nginx_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SERVERS = ("upstream", "floor", "turnstile", "litellm")
HEADERS = {
    "content-type": "application/json",
    "authorization": "Bearer bench",
    "x-api-key": "bench",
    "anthropic-version": "2023-06-01",
}


@dataclass
class Options:
    duration_s: float
    warmup_s: float
    connections: list[int]
    cases: list[str]
    ttfb_samples: int
    litellm: bool
    out: Path | None
    install: bool
    sustain_levels: tuple[int, ...] = phases.SUSTAIN_LEVELS
    ceiling_levels: tuple[int, ...] = streams.LEVELS
    workers: tuple[int, ...] = (1, 2)
    worker_connections: tuple[int, ...] = (16, 64)
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="turnstile-bench-")))


# ---------------------------------------------------------------------------- configs


def turnstile_config(upstream: str, port: int, workdir: Path) -> Path:
    """Production-like: guards on (reject/reorder/withhold/strip), aliases with a fallback
    deployment each (routing), litellm-table prices (accounting), SQLite transcript."""
    deployments, models = [], []
    for name, (api, prefix) in ROUTES.items():
        wire = "openai_chat" if api == "openai" else "anthropic_messages"
        model = OPENAI_MODEL if api == "openai" else ANTHROPIC_MODEL
        for suffix in ("primary", "fallback"):
            deployments.append(
                {
                    "name": f"{name}-{suffix}",
                    "api": wire,
                    "model": model,
                    "base_url": upstream + prefix,
                    "api_key_env": "BENCH_UPSTREAM_KEY",
                }
            )
        models.append({"name": name, "deployments": [f"{name}-primary", f"{name}-fallback"]})
    cfg = {
        "server": {"host": "127.0.0.1", "port": port, "db_path": str(workdir / "turnstile-bench.db")},
        "guards": {
            "pairing": "reject",
            "ordering": "reorder",
            "truncation": "withhold",
            "foreign_thinking": "strip",
        },
        "deployments": deployments,
        "models": models,
    }
    path = workdir / "turnstile.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def litellm_config(upstream: str, workdir: Path) -> Path:
    """LiteLLM proxy model list pointing at the same nginx paths (no database, no master key)."""
    model_list = []
    for name, (api, prefix) in ROUTES.items():
        model = f"openai/{OPENAI_MODEL}" if api == "openai" else f"anthropic/{ANTHROPIC_MODEL}"
        model_list.append(
            {
                "model_name": name,
                "litellm_params": {"model": model, "api_base": upstream + prefix, "api_key": "bench"},
            }
        )
    path = workdir / "litellm.yaml"
    # An Anthropic Messages client of an OpenAI model goes to Chat Completions, as Turnstile's
    # deployment does (LiteLLM's default for /v1/messages -> openai/ is the Responses API).
    settings = {"drop_params": True, "use_chat_completions_url_for_anthropic_messages": True}
    path.write_text(yaml.safe_dump({"model_list": model_list, "litellm_settings": settings}))
    return path


# ---------------------------------------------------------------------------- measuring


def case_url(server: str, base: str, case: str, path: str) -> str:
    """The URL a case is sent to: the client path on a server, the nginx path for the upstream."""
    return base + (upstream_path(CASE_MODEL[case]) if server == "upstream" else path)


async def _post_ok(url: str, body: bytes) -> bytes | str:
    """One POST: the body of a 200 answer, else what was wrong (a string)."""
    try:
        async with (
            aiohttp.ClientSession() as s,
            s.post(url, data=body, headers=HEADERS, timeout=aiohttp.ClientTimeout(total=60)) as r,
        ):
            raw = await r.read()
    except (aiohttp.ClientError, TimeoutError) as err:
        return f"no answer: {err!r}"
    return raw if r.status == 200 else f"HTTP {r.status}: {raw[:300]!r}"


async def check_case(url: str, body: bytes, case: str) -> str | None:
    """One request; None when the answer is a 200 of the right shape, else what was wrong."""
    raw = await _post_ok(url, body)
    if isinstance(raw, str):
        return raw
    if case in STREAM_CASES:
        return None if b"tok47" in raw else f"stream without its last chunk: {raw[-300:]!r}"
    obj = orjson.loads(raw)
    ok = "read_file" in raw.decode() if case == "tools-40" else b"Hello from the bench upstream" in raw
    return None if ok and isinstance(obj, dict) else f"unexpected body: {raw[:300]!r}"


async def ttfb(url: str, body: bytes, samples: int) -> dict[str, float]:
    """Sequential streamed requests: p50/p99 time to first body byte and p50 time to the last
    byte (ms), and the SSE frames received per stream."""
    first, last, frames = [], [], 0
    async with aiohttp.ClientSession() as s:
        for _ in range(samples):
            t0 = time.perf_counter()
            async with s.post(url, data=body, headers=HEADERS, timeout=aiohttp.ClientTimeout(total=30)) as r:
                chunk = await r.content.readany()
                first.append(time.perf_counter() - t0)
                n = chunk.count(b"\n\n")
                while chunk:
                    chunk = await r.content.readany()
                    n += chunk.count(b"\n\n")
                last.append(time.perf_counter() - t0)
                frames = n
    return {
        "ttfb_p50": pct(first, 50) * 1e3,
        "ttfb_p99": pct(first, 99) * 1e3,
        "last_p50": pct(last, 50) * 1e3,
        "frames": frames,
    }


def pct(values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank) of ``values``."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]


def wrk(url: str, body_file: Path, conns: int, duration_s: float, key: str | None = None) -> dict[str, float]:
    """One wrk run (1 thread, ``conns`` connections, ``duration_s`` seconds): req/s, p50/p99 (ms),
    errors (connect + read + write + timeout + non-2xx responses). ``key``: the API key sent
    (a virtual key; default ``bench``)."""
    secs = max(1, round(duration_s))
    argv = ["wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--timeout", "10s", "-s", str(HERE / "post.lua"), url]
    res = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=secs + 60,
        env={**os.environ, "BENCH_BODY": str(body_file), **({"BENCH_KEY": key} if key else {})},
    )
    m = re.search(r"BENCH_JSON (\{.*\})", res.stdout)
    if res.returncode != 0 or m is None:
        raise RuntimeError(f"wrk failed ({res.returncode}): {res.stdout[-500:]} {res.stderr[-500:]}")
    d = orjson.loads(m.group(1))
    errors = d["connect"] + d["read"] + d["write"] + d["timeout"] + d["status"]
    return {
        "rps": d["requests"] / (d["duration_us"] / 1e6),
        "p50": d["p50_us"] / 1e3,
        "p99": d["p99_us"] / 1e3,
        "errors": errors,
        "requests": d["requests"],
    }


# ---------------------------------------------------------------------------- servers


def start_server(name: str, opts: Options, upstream: str, workers: int = 1) -> tuple[procs.Proc, str, str]:
    """Start server ``name`` (Turnstile with ``workers`` processes); returns (process, base URL,
    readiness URL)."""
    port = procs.free_port()
    base = f"http://127.0.0.1:{port}"
    log = opts.workdir / f"{name}.log"
    uvicorn_args = ["--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--no-access-log"]
    if name == "floor":
        argv = [sys.executable, "-m", "uvicorn", "bench.floor:app", *uvicorn_args, "--log-level", "warning"]
        p = procs.Proc(name, argv, log, env={"BENCH_UPSTREAM": upstream}, cwd=ROOT)
        return p, base, base + "/health"
    if name == "turnstile":
        cfg = turnstile_config(upstream, port, opts.workdir)
        argv = [
            sys.executable,
            "-m",
            "gateway.cli",
            "serve",
            "--config",
            str(cfg),
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "info",
        ]
        p = procs.Proc(name, argv, log, env={"BENCH_UPSTREAM_KEY": "bench"}, cwd=ROOT)
        return p, base, base + "/health"
    exe = procs.ensure_litellm(procs.DEFAULT_LITELLM_VENV)
    if exe is None:
        raise RuntimeError("LiteLLM is not installed")
    cfg = litellm_config(upstream, opts.workdir)
    argv = [str(exe), "--config", str(cfg), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False", "NO_DOCS": "True"}
    return procs.Proc(name, argv, log, env=env, cwd=opts.workdir), base, base + "/health/liveliness"


async def measure(
    name: str,
    base: str,
    pid: int | None,
    opts: Options,
    bodies: dict[str, tuple[str, Path]],
    results: report.Results,
) -> None:
    """Check every case, sample TTFB of the streams, then the wrk runs."""
    for case in opts.cases:
        path, body_file = bodies[case]
        url = case_url(name, base, case, path)
        body = body_file.read_bytes()
        problem = await check_case(url, body, case)
        results.answers[(name, case)] = problem or "ok"
        if problem:
            print(f"  {name} {case}: {problem}", flush=True)
            continue
        if case in STREAM_CASES:
            results.ttfb[(name, case)] = await ttfb(url, body, opts.ttfb_samples)
        for conns in opts.connections:
            if opts.warmup_s > 0:
                await asyncio.to_thread(wrk, url, body_file, conns, opts.warmup_s)
            if pid is not None:
                procs.reset_peak_rss(pid)
            row = await asyncio.to_thread(wrk, url, body_file, conns, opts.duration_s)
            row["rss_mb"] = procs.peak_rss_mb(pid) if pid is not None else 0.0
            results.runs[(name, case, conns)] = row
            _print_row(name, case, conns, row)
    await measure_phases(name, base, opts, results)


def _print_row(name: str, case: str, conns: int, row: dict[str, float]) -> None:
    print(
        f"  {name:9} {case:16} c={conns:<3} {row['rps']:9.0f} req/s  p50 {row['p50']:7.3f} ms  "
        f"p99 {row['p99']:7.3f} ms  errors {row['errors']}  rss {row['rss_mb']:.0f} MB",
        flush=True,
    )


async def check_extra(url: str, body: bytes) -> str | None:
    """One request of an extra case; None when it is a 200 carrying the whole answer."""
    raw = await _post_ok(url, body)
    if isinstance(raw, str):
        return raw
    ok = b"[DONE]" in raw if b'"stream":true' in body else b"Hello from the bench upstream" in raw
    return None if ok else f"unexpected body: {raw[-300:]!r}"


async def measure_phases(name: str, base: str, opts: Options, results: report.Results) -> None:
    """The sustained ramp behind the 20 ms upstream and the stream ceiling (both need nginx's
    echo module: skipped with a note without it)."""
    if not (opts.sustain_levels or opts.ceiling_levels):
        return
    if not has_echo():
        results.notes.append("nginx echo module absent: sustained load and stream ceiling not measured")
        return
    extras = extra_bodies()
    for extra, levels in (("openai-20ms", opts.sustain_levels), ("openai-paced", opts.ceiling_levels)):
        if not levels:
            continue
        path, body = extras[extra]
        model = orjson.loads(body)["model"]
        if name == "upstream":
            path = upstream_path(model)
        problem = await check_extra(base + path, body)
        results.answers[(name, extra)] = problem or "ok"
        if problem:
            print(f"  {name} {extra}: {problem}", flush=True)
            continue
        if extra == "openai-20ms":
            f = opts.workdir / "request-openai-20ms.json"
            f.write_bytes(body)
            ramp = await phases.sustained(wrk, base + path, f, levels, opts.duration_s, opts.warmup_s)
            results.sustained[name] = ramp
        else:
            results.ceiling[name] = await phases.stream_ceiling(base, path, body, HEADERS, levels)


async def measure_workers(
    opts: Options, upstream: str, bodies: dict[str, tuple[str, Path]], results: report.Results
) -> None:
    """Turnstile at each worker count of ``opts.workers``, back to back: the openai case at
    ``opts.worker_connections``."""
    path, body_file = bodies["openai"]
    for n in opts.workers:
        print(f"== turnstile --workers {n}", flush=True)
        proc: procs.Proc | None = None
        try:
            proc, base, ready = start_server("turnstile", opts, upstream, workers=n)
            await procs.wait_ready(proc, ready, 60)
            url = base + path
            problem = await check_case(url, body_file.read_bytes(), "openai")
            if problem:
                results.failures[f"turnstile-{n}w"] = problem
                continue
            for conns in opts.worker_connections:
                if opts.warmup_s > 0:
                    await asyncio.to_thread(wrk, url, body_file, conns, opts.warmup_s)
                procs.reset_peak_rss(proc.pid)
                row = await asyncio.to_thread(wrk, url, body_file, conns, opts.duration_s)
                row["rss_mb"] = procs.peak_rss_mb(proc.pid)
                results.workers[(n, conns)] = row
                _print_row(f"{n} worker", "openai", conns, row)
        except RuntimeError as err:
            results.failures[f"turnstile-{n}w"] = str(err)
            print(f"  turnstile --workers {n} failed: {err}", flush=True)
        finally:
            if proc is not None:
                proc.stop()


async def run(opts: Options) -> report.Results:
    procs.ensure_tools(opts.install)
    results = report.Results(opts={**vars(opts), "load_start": os.getloadavg()[0]})
    bodies = {}
    for case, (path, body) in request_bodies().items():
        f = opts.workdir / f"request-{case}.json"
        f.write_bytes(body)
        bodies[case] = (path, f)
    nginx_port = procs.free_port()
    upstream = f"http://127.0.0.1:{nginx_port}"
    conf = nginx_config(opts.workdir / "nginx", nginx_port)
    nginx = procs.Proc(
        "upstream",
        [nginx_binary() or "nginx", "-c", str(conf), "-p", str(conf.parent)],
        opts.workdir / "nginx.log",
    )
    servers = [s for s in SERVERS if s != "litellm" or opts.litellm]
    try:
        await procs.wait_ready(nginx, upstream + "/", 20)
        for name in servers:
            print(f"== {name}", flush=True)
            if name == "upstream":
                await measure(name, upstream, None, opts, bodies, results)
                continue
            proc: procs.Proc | None = None
            try:
                proc, base, ready = start_server(name, opts, upstream)
                await procs.wait_ready(proc, ready, 180 if name == "litellm" else 60)
                await measure(name, base, proc.pid, opts, bodies, results)
            except RuntimeError as err:
                results.failures[name] = str(err)
                print(f"  {name} failed: {err}", flush=True)
            finally:
                if proc is not None:
                    proc.stop()
        if opts.workers:
            await measure_workers(opts, upstream, bodies, results)
    finally:
        nginx.stop()
    return results


def parse_args(argv: list[str] | None = None) -> Options:
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--smoke", action="store_true", help="seconds-long run for CI; writes nothing unless --out"
    )
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per wrk run (default 5)")
    ap.add_argument(
        "--warmup", type=float, default=1.0, help="seconds of warm-up before each run (default 1)"
    )
    ap.add_argument("--connections", default="1,16,64", help="comma-separated wrk connection counts")
    ap.add_argument("--cases", default=",".join(CASE_MODEL), help="comma-separated cases")
    ap.add_argument("--ttfb-samples", type=int, default=100, help="sequential streams timed per stream case")
    ap.add_argument(
        "--sustain",
        default=",".join(map(str, phases.SUSTAIN_LEVELS)),
        help="connection levels of the 20 ms-upstream ramp ('' skips it)",
    )
    ap.add_argument(
        "--streams",
        default=",".join(map(str, streams.LEVELS)),
        help="concurrent-stream levels of the stream ceiling ('' skips it)",
    )
    ap.add_argument("--workers", default="1,2", help="Turnstile worker counts measured at the end ('' skips)")
    ap.add_argument("--no-litellm", action="store_true", help="skip LiteLLM's proxy")
    ap.add_argument("--no-install", action="store_true", help="never apt-get install nginx/wrk")
    ap.add_argument(
        "--out", type=Path, default=None, help="results file (default bench/RESULTS.md; smoke: none)"
    )
    a = ap.parse_args(argv)
    if a.smoke:
        a.duration, a.warmup, a.connections, a.ttfb_samples = 1.0, 0.0, "1", 3
        a.sustain, a.streams, a.workers = "4", "8", "2"
    out = a.out if a.out is not None or a.smoke else HERE / "RESULTS.md"
    cases = [c for c in a.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASE_MODEL))
    if unknown:
        ap.error(f"unknown cases {unknown}; known: {', '.join(CASE_MODEL)}")
    return Options(
        duration_s=a.duration,
        warmup_s=a.warmup,
        connections=[int(c) for c in a.connections.split(",")],
        cases=cases,
        ttfb_samples=max(1, a.ttfb_samples),
        litellm=not a.no_litellm,
        out=out,
        install=not a.no_install,
        sustain_levels=_ints(a.sustain),
        ceiling_levels=_ints(a.streams),
        workers=_ints(a.workers),
        worker_connections=(1,) if a.smoke else (16, 64),
    )


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    t0 = time.monotonic()
    results = asyncio.run(run(opts))
    text = report.render(results, elapsed_s=time.monotonic() - t0)
    print(text)
    if opts.out is not None:
        opts.out.write_text(text)
        print(f"written to {opts.out}")
    return 0 if results.complete() else 1


if __name__ == "__main__":
    sys.exit(main())
