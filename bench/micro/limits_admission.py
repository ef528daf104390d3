"""Cost of the limits on one turn (issue 15 target: <= 0.1 ms added per turn embedded; one
Redis round trip per admission).

One turn is ``admit`` + ``settle`` over three scopes, as a wired gateway will call them: a key
(day and month hard budgets, rpm, tpm, concurrent), its team (month budget, rpm, concurrent)
and the chosen deployment (rpm, tpm). The clock advances 1 ms per turn, so windows sweep and
buckets roll as under load.

    uv run python bench/micro/limits_admission.py [--turns 20000] [--redis redis://127.0.0.1:6379/0]

Reported: in-process CPU per turn (``time.thread_time``) and wall-clock percentiles; on Redis,
wall-clock per turn sequentially (two round trips: admission, settle) against a bare ``PING``
round trip on the same client, the script calls per turn (counted), and turns/s with 32 turns
in flight. Wall-clock numbers include preemption on a loaded machine.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from gateway.limits.backend import Limits  # noqa: E402
from gateway.limits.memory import MemoryLimits  # noqa: E402
from gateway.limits.model import BudgetLimit, RateLimit, Scope  # noqa: E402

BIG = 10**9
SCOPES = [
    Scope("key", "k1", (BudgetLimit("day", 1e6), BudgetLimit("month", 1e7)), RateLimit(BIG, BIG**2, 10_000)),
    Scope("team", "t1", (BudgetLimit("month", 1e8),), RateLimit(rpm=BIG, concurrent=10_000)),
    Scope("deployment", "gpt-4o", (), RateLimit(rpm=BIG, tpm=BIG**2)),
]


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def pct(xs: list[float], p: float) -> float:
    return sorted(xs)[min(int(len(xs) * p), len(xs) - 1)]


async def sequential(lim: Limits, clock: Clock, turns: int) -> tuple[list[float], float]:
    wall: list[float] = []
    c0 = time.thread_time()
    for _ in range(turns):
        clock.now += 0.001
        t0 = time.perf_counter()
        res = await lim.admit(SCOPES, 0.012)
        await lim.settle(res, 0.004, tokens=1500)
        wall.append((time.perf_counter() - t0) * 1000)
    return wall, (time.thread_time() - c0) * 1000 / turns


async def embedded(turns: int) -> None:
    clock = Clock()
    lim = MemoryLimits(clock=clock)
    await sequential(lim, clock, 2000)  # warm: seeds, window caches
    wall, cpu = await sequential(lim, clock, turns)
    print(f"embedded (in-process), {turns} turns of admit+settle over 3 scopes:")
    print(f"  cpu {cpu:.4f} ms/turn; wall p50 {pct(wall, 0.5):.4f} p99 {pct(wall, 0.99):.4f} ms")


async def on_redis(url: str, turns: int) -> None:
    import redis.asyncio as aioredis

    from gateway.limits.redis_backend import RedisLimits

    prefix = f"turnstile-bench:{uuid.uuid4().hex[:8]}:"
    clock = Clock()
    lim = RedisLimits.from_url(url, prefix=prefix, clock=clock)
    calls = [0]
    real = lim.client.evalsha

    async def counting(*args: Any) -> Any:
        calls[0] += 1
        return await real(*args)

    lim.client.evalsha = counting  # type: ignore[method-assign]
    try:
        await sequential(lim, clock, 200)
        pings: list[float] = []
        for _ in range(turns):
            t0 = time.perf_counter()
            await lim.client.ping()
            pings.append((time.perf_counter() - t0) * 1000)
        calls[0] = 0
        wall, cpu = await sequential(lim, clock, turns)
        print(f"redis ({url}), {turns} turns of admit+settle over 3 scopes, one at a time:")
        print(f"  script calls per turn {calls[0] / turns:.2f} (admission 1, settle 1)")
        print(f"  wall p50 {pct(wall, 0.5):.3f} p99 {pct(wall, 0.99):.3f} ms/turn; client cpu {cpu:.3f} ms")
        print(f"  bare PING round trip p50 {pct(pings, 0.5):.3f} p99 {pct(pings, 0.99):.3f} ms")

        async def worker(n: int) -> None:
            for _ in range(n):
                clock.now += 0.0001
                res = await lim.admit(SCOPES, 0.012)
                await lim.settle(res, 0.004, tokens=1500)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(turns // 32) for _ in range(32)))
        rate = (turns // 32) * 32 / (time.perf_counter() - t0)
        print(f"  32 turns in flight: {rate:,.0f} turns/s")
        info = await lim.client.info("commandstats")
        stat = info.get("cmdstat_evalsha", {})
        if stat:
            us = stat["usec_per_call"]
            print(f"  redis server time per script call (all since its last stats reset): {us} us")
    finally:
        client = aioredis.Redis.from_url(url, decode_responses=True)
        keys = [k async for k in client.scan_iter(match=prefix + "*", count=1000)]
        for i in range(0, len(keys), 1000):
            await client.delete(*keys[i : i + 1000])
        await client.aclose()
        await lim.aclose()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=20_000)
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/0", help="'' to skip the Redis run")
    args = ap.parse_args()
    await embedded(args.turns)
    if args.redis:
        await on_redis(args.redis, max(args.turns // 10, 320))


if __name__ == "__main__":
    asyncio.run(main())
