"""The backend the configuration asks for: Redis with ``redis.url``, else in process."""

from __future__ import annotations

from gateway.config import parse_config
from gateway.limits.memory import MemoryLimits
from gateway.limits.open import open_limits
from gateway.limits.redis_backend import RedisLimits


async def test_without_a_redis_url_the_counters_live_in_process() -> None:
    lim = open_limits(parse_config({"limits": {"timezone": "Europe/Paris", "lease_ttl_s": 30}}))
    assert isinstance(lim, MemoryLimits)
    assert (str(lim.windows.tz), lim.lease_ttl_s) == ("Europe/Paris", 30)


async def test_a_redis_url_gives_the_shared_counters_with_the_configured_fail_mode() -> None:
    cfg = parse_config({"redis": {"url": "redis://127.0.0.1:1/0", "fail": "open", "prefix": "gw1:"}})
    lim = open_limits(cfg)  # connecting is lazy: nothing listens on port 1
    assert isinstance(lim, RedisLimits)
    assert (lim.fail, lim.prefix) == ("open", "gw1:")
    await lim.aclose()
