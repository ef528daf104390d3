"""Support of the fleet tests: :class:`gateway.fleet.link.RedisLink` objects on the local test
Redis (``TURNSTILE_TEST_REDIS_URL``), all under one fresh key prefix per test (their keys
deleted afterwards), standing for several instances; skipped when Redis is unreachable unless
``TURNSTILE_REQUIRE_SERVICES=1``. ``until`` waits for a condition, bounded."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from gateway.config import RedisConfig
from gateway.fleet.link import RedisLink

REDIS_URL = os.environ.get("TURNSTILE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


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


async def until(check: Callable[[], bool], timeout_s: float = 1.0) -> float:
    """Seconds until ``check()`` held; fails past ``timeout_s``."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout_s, "condition not reached in time"
        await asyncio.sleep(0.005)  # polling pace of a bounded wait
    return time.monotonic() - start


@pytest.fixture
async def links() -> AsyncIterator[Callable[[], RedisLink]]:
    """``links()``: a new link (a new instance) on the test's prefix."""
    redis_or_skip()
    prefix = f"turnstile-test:{uuid.uuid4().hex[:12]}:"
    made: list[RedisLink] = []

    def make() -> RedisLink:
        link = RedisLink.from_config(RedisConfig(url=REDIS_URL, prefix=prefix, timeout_s=2.0))
        assert link is not None
        made.append(link)
        return link

    yield make
    for link in made:
        await link.aclose()
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(REDIS_URL, decode_responses=True)
    keys = [k async for k in client.scan_iter(match=prefix + "*", count=1000)]
    if keys:
        await client.delete(*keys)
    await client.aclose()
