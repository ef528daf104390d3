"""Access control on the hot path in requests per second: keys off and on, one instance and
two (issue 15's target: "report req/s with access control on vs off, one and two instances").

``uv run python -m bench.access [--duration 5] [--connections 16] [--rounds 2]`` starts the
nginx upstream stand-in, then Turnstile (``bench.run``'s production-like configuration, one
worker per instance) in four set-ups, each driven by wrk with the ``openai`` case:

* ``off``: ``access.auth: off`` — no key read, no limits (the embedded default on loopback
  with no keys);
* ``on``: keys required, a virtual key with a hard day budget and rpm/tpm/concurrent limits
  far above the load (every turn is admitted, reserved and settled); SQLite, counters in
  process;
* ``on-shared``: the same on PostgreSQL (``storage.url``) and Redis (``redis.url``: the limit
  counters and :mod:`gateway.fleet`), one instance;
* ``on-shared-x2``: two such instances behind an nginx round robin (the deploy.md topology).

Every deployment is priced (1 and 2 USD per million input and output tokens) in every set-up,
since a hard budget needs a price. PostgreSQL is
``BENCH_PG_ADMIN_URL`` (default ``postgresql://127.0.0.1:5432/test``; a fresh database is made
and dropped), Redis ``BENCH_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``, a prefix of its
own, deleted after). Rounds alternate the set-ups so that a busy machine disturbs them alike;
the figures are printed, one line per run, and the best and median per set-up at the end.
Every process started is stopped by its own id.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench import procs
from bench.bodies import request_bodies
from bench.run import check_case, turnstile_config, wrk
from bench.upstream import nginx_binary, nginx_config

ADMIN_ENV = "BENCH_ADMIN_KEY"
ADMIN = "bench-admin-key"
SETUPS = ("off", "on", "on-shared", "on-shared-x2")
PG_ADMIN = os.environ.get("BENCH_PG_ADMIN_URL", "postgresql://127.0.0.1:5432/test")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")


def _config(base: Path, setup: str, upstream: str, port: int, workdir: Path, shared: dict[str, str]) -> Path:
    cfg = yaml.safe_load(base.read_text())
    cfg["server"]["db_path"] = str(workdir / "transcript.db")
    cfg["server"]["port"] = port
    for dep in cfg["deployments"]:  # a hard budget needs a price (USD per million tokens)
        dep["price"] = {"input": 1.0, "output": 2.0}
    if setup == "off":
        cfg["access"] = {"auth": "off"}
    else:
        cfg["access"] = {"auth": "required", "admin_key_env": ADMIN_ENV}
    if setup.startswith("on-shared"):
        cfg["storage"] = {"url": shared["pg"]}
        cfg["redis"] = {"url": REDIS_URL, "prefix": shared["prefix"]}
    path = workdir / "turnstile.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _balancer(workdir: Path, port: int, backends: list[int]) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    servers = "".join(f"        server 127.0.0.1:{p} max_fails=0;\n" for p in backends)
    temp = "".join(
        f"    {t}_temp_path {workdir}/{d};\n"
        for t, d in (
            ("client_body", "client_body"),
            ("proxy", "proxy"),
            ("fastcgi", "fastcgi"),
            ("uwsgi", "uwsgi"),
            ("scgi", "scgi"),
        )
    )
    conf = workdir / "balancer.conf"
    conf.write_text(
        f"daemon off;\nworker_processes 1;\npid {workdir}/nginx.pid;\nerror_log {workdir}/error.log warn;\n"
        "events { worker_connections 1024; }\nhttp {\n    access_log off;\n"
        + temp
        + f"    upstream turnstile {{\n{servers}        keepalive 64;\n    }}\n"
        f"    server {{\n        listen 127.0.0.1:{port};\n        location / {{\n"
        "            proxy_pass http://turnstile;\n            proxy_http_version 1.1;\n"
        '            proxy_set_header Connection "";\n            proxy_buffering off;\n'
        "            proxy_next_upstream off;\n        }\n    }\n}\n"
    )
    return conf


async def _key(base: str) -> str:
    body = {
        "name": "bench",
        "budgets": [{"period": "day", "usd": 1_000_000, "hard": True}],
        "rate_limits": {"rpm": 10_000_000, "tpm": 10_000_000_000, "concurrent": 100_000},
    }
    async with (
        aiohttp.ClientSession() as s,
        s.post(f"{base}/admin/keys", json=body, headers={"authorization": f"Bearer {ADMIN}"}) as r,
    ):
        got = await r.json()
        if r.status != 201:
            raise RuntimeError(f"key not created: {r.status} {got}")
        return str(got["secret"])


async def _check(url: str, body: bytes, key: str | None) -> str | None:
    """One request with ``key`` (``off``: bench's own): None when answered, else what was wrong."""
    if key is None:
        return await check_case(url, body, "openai")
    headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession() as s, s.post(url, data=body, headers=headers) as r:
        return None if r.status == 200 else f"HTTP {r.status}: {(await r.read())[:300]!r}"


async def _load_tokenizer(base: str, key: str, instances: int) -> None:
    """Count tokens once per instance (round robin): the count waits for the tokenizer."""
    body = {"model": "bench-anthropic", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    async with aiohttp.ClientSession() as s:
        for _ in range(2 * instances):
            timeout = aiohttp.ClientTimeout(total=120)
            async with s.post(
                f"{base}/v1/messages/count_tokens", json=body, headers=headers, timeout=timeout
            ) as r:
                if r.status != 200:
                    raise RuntimeError(f"count_tokens: HTTP {r.status}: {(await r.read())[:200]!r}")


async def run_setup(
    setup: str, upstream: str, workdir: Path, shared: dict[str, str], body: tuple[str, Path], opts: Any
) -> dict[str, float]:
    """Start ``setup``'s instances (and balancer), make a key, one wrk run; stops them all."""
    started: list[procs.Proc] = []
    home = workdir / f"{setup}-{uuid.uuid4().hex[:6]}"
    home.mkdir()
    base_cfg = turnstile_config(upstream, 1, home)  # the port is given on the command line
    try:
        ports = []
        for i in range(2 if setup.endswith("x2") else 1):
            port = procs.free_port()
            inst = home / f"i{i}"
            inst.mkdir()
            cfg = _config(base_cfg, setup, upstream, port, inst, shared)
            argv = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(cfg), "--port", str(port)]
            argv += ["--workers", "1", "--log-level", "warning"]
            env = {"BENCH_UPSTREAM_KEY": "bench", ADMIN_ENV: ADMIN}
            started.append(
                procs.Proc(f"turnstile-{setup}-{i}", argv, inst / "serve.log", env=env, cwd=Path.cwd())
            )
            ports.append(port)
        for proc, port in zip(started, ports, strict=True):
            await procs.wait_ready(proc, f"http://127.0.0.1:{port}/health", 120)
        base = f"http://127.0.0.1:{ports[0]}"
        if len(ports) > 1:
            lb_port = procs.free_port()
            conf = _balancer(home / "lb", lb_port, ports)
            lb = procs.Proc("balancer", [nginx_binary() or "nginx", "-c", str(conf)], home / "lb.log")
            started.append(lb)
            base = f"http://127.0.0.1:{lb_port}"
            await procs.wait_ready(lb, base + "/health", 20)
        key = None if setup == "off" else await _key(base)
        path, body_file = body
        url = base + path
        problem = await _check(url, body_file.read_bytes(), key)
        if problem:
            raise RuntimeError(f"{setup}: {problem}")
        if key is not None:  # a server that ran a while has its tokenizer loaded (worst cases count with it)
            await _load_tokenizer(base, key, len(ports))
        if opts.warmup > 0:
            await asyncio.to_thread(wrk, url, body_file, opts.connections, opts.warmup, key)
        row = await asyncio.to_thread(wrk, url, body_file, opts.connections, opts.duration, key)
        if row["errors"]:
            raise RuntimeError(f"{setup}: {row['errors']:.0f} errors of {row['requests']:.0f} requests")
        return row
    finally:
        for proc in reversed(started):
            proc.stop()


async def main_async(opts: Any) -> dict[str, list[dict[str, float]]]:
    procs.ensure_tools(False)
    workdir = Path(tempfile.mkdtemp(prefix="turnstile-bench-access-"))
    _, body_bytes = request_bodies()["openai"]
    path = request_bodies()["openai"][0]
    body_file = workdir / "request-openai.json"
    body_file.write_bytes(body_bytes)
    nginx_port = procs.free_port()
    upstream = f"http://127.0.0.1:{nginx_port}"
    conf = nginx_config(workdir / "nginx", nginx_port)
    nginx = procs.Proc(
        "upstream", [nginx_binary() or "nginx", "-c", str(conf), "-p", str(conf.parent)], workdir / "u.log"
    )
    import psycopg
    import redis

    db = f"bench_access_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{db}"')
    shared = {"pg": PG_ADMIN.rsplit("/", 1)[0] + "/" + db, "prefix": f"bench-access-{uuid.uuid4().hex[:8]}:"}
    results: dict[str, list[dict[str, float]]] = {s: [] for s in opts.setups}
    try:
        await procs.wait_ready(nginx, upstream + "/", 20)
        for r in range(opts.rounds):
            for setup in opts.setups:
                row = await run_setup(setup, upstream, workdir, shared, (path, body_file), opts)
                results[setup].append(row)
                print(
                    f"round {r + 1} {setup:13} c={opts.connections} {row['rps']:8.0f} req/s  "
                    f"p50 {row['p50']:7.2f} ms  p99 {row['p99']:7.2f} ms  load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    finally:
        nginx.stop()
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        client = redis.Redis.from_url(REDIS_URL)
        for k in client.scan_iter(match=shared["prefix"] + "*"):
            client.delete(k)
    print("\nsetup          best req/s  median req/s  (vs off, median)")
    off = statistics.median(r["rps"] for r in results["off"]) if results.get("off") else None
    for setup, rows in results.items():
        if rows:
            med = statistics.median(r["rps"] for r in rows)
            rel = f"{med / off:6.2f}x" if off else ""
            print(f"{setup:13} {max(r['rps'] for r in rows):11.0f} {med:13.0f}  {rel}")
    return results


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.access", description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per wrk run (default 5)")
    ap.add_argument("--warmup", type=float, default=1.0, help="seconds of wrk before each run (default 1)")
    ap.add_argument("--connections", type=int, default=16, help="wrk connections (default 16)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds over every set-up (default 2)")
    ap.add_argument("--setups", default=",".join(SETUPS), help="comma-separated set-ups")
    args = ap.parse_args()
    args.setups = [s for s in args.setups.split(",") if s]
    unknown = sorted(set(args.setups) - set(SETUPS))
    if unknown:
        ap.error(f"unknown set-ups: {', '.join(unknown)} (known: {', '.join(SETUPS)})")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
