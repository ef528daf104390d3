"""Support of the limits tests: an injected clock and the limit counters, parametrised over
the in-process backend, the workers' shared SQLite file and Redis (fixtures re-exported by
this folder's ``conftest.py``; a module of its own so that tests import it by a name no other folder uses).

Redis is the local server at ``TURNSTILE_TEST_REDIS_URL`` (default
``redis://127.0.0.1:6379/0``); each test gets a key prefix of its own, and its keys are
deleted afterwards. When Redis is unreachable the Redis cases skip with the reason, unless
``TURNSTILE_REQUIRE_SERVICES=1``, in which case they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.limits.backend import Limits, SpendSource, no_spend
from gateway.limits.memory import MemoryLimits
from gateway.limits.redis_backend import RedisLimits
from gateway.limits.sqlite_backend import SqliteLimits

REDIS_URL = os.environ.get("TURNSTILE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

T0 = 1_767_225_600.0 + 12 * 3600 + 0.25
"""2026-01-01 12:00:00.25 UTC (a Thursday): the tests' "now"."""


def redis_or_skip() -> None:
    """Skip (or fail under TURNSTILE_REQUIRE_SERVICES=1) when Redis is unreachable."""
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2, socket_timeout=2).ping()
    except Exception as err:
        reason = f"Redis at {REDIS_URL} is unreachable ({type(err).__name__}: {err})"
        if os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1":
            pytest.fail(reason + "; TURNSTILE_REQUIRE_SERVICES=1 requires it")
        pytest.skip(reason)


class Clock:
    """A settable clock (epoch seconds)."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def drop_prefix(url: str, prefix: str) -> None:
    """Delete every key under ``prefix``."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        keys = [k async for k in client.scan_iter(match=prefix + "*", count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


Factory = Callable[..., Limits]


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def make_limits(request: Any, clock: Clock, tmp_path: Any) -> AsyncIterator[Factory]:
    """``make_limits(spend=..., timezone=..., lease_ttl_s=...)``: a fresh backend of the
    parameter's kind on the test's clock (SQLite: a file of the test's own; Redis: under a
    prefix of its own, removed after)."""
    made: list[Limits] = []
    prefix = f"turnstile-test:{uuid.uuid4().hex[:12]}:"
    if request.param == "redis":
        redis_or_skip()

    def make(*, spend: SpendSource = no_spend, timezone: str = "UTC", **kw: Any) -> Limits:
        lim: Limits
        if request.param == "memory":
            lim = MemoryLimits(spend=spend, timezone=timezone, clock=clock, **kw)
        elif request.param == "sqlite":
            lim = SqliteLimits(tmp_path / "shared.db", spend=spend, timezone=timezone, clock=clock, **kw)
        else:
            lim = RedisLimits.from_url(
                REDIS_URL, prefix=prefix, spend=spend, timezone=timezone, clock=clock, **kw
            )
        made.append(lim)
        return lim

    yield make
    for lim in made:
        await lim.aclose()
    if request.param == "redis":
        await drop_prefix(REDIS_URL, prefix)


async def spent(lim: Limits, scope: str, period: str = "day") -> tuple[float, float]:
    """``(spent, reserved)`` USD of ``scope``'s current ``period`` window on either backend."""
    got = lim.spent_usd(scope, period)  # type: ignore[attr-defined]
    if not isinstance(got, tuple):
        got = await got
    return got
