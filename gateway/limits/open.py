"""The limit counters a gateway's configuration asks for: Redis when ``redis.url`` is set, else
the SQLite file the worker processes share (``--workers N``), else in process."""

from __future__ import annotations

import time

from gateway.config import GatewayConfig
from gateway.limits.backend import Clock, Limits, SpendSource, no_spend
from gateway.limits.memory import MemoryLimits


def open_limits(
    config: GatewayConfig,
    *,
    spend: SpendSource = no_spend,
    clock: Clock = time.time,
    shared: str | None = None,
) -> Limits:
    """:class:`gateway.limits.redis_backend.RedisLimits` on ``config.redis`` when its ``url``
    is set, else :class:`gateway.limits.sqlite_backend.SqliteLimits` on the file ``shared``
    when this process is one of several workers (:func:`gateway.config.workers_state_path`),
    else :class:`gateway.limits.memory.MemoryLimits`; all with ``config.limits`` (time zone,
    lease TTL), the ledger's ``spend`` source and ``clock``. Connecting is lazy: nothing is
    reached until the first admission."""
    lim = config.limits
    r = config.redis
    if r.url:
        from gateway.limits.redis_backend import RedisLimits

        return RedisLimits.from_url(
            r.url,
            timeout_s=r.timeout_s,
            prefix=r.prefix,
            fail=r.fail,
            timezone=lim.timezone,
            spend=spend,
            clock=clock,
            lease_ttl_s=lim.lease_ttl_s,
        )
    if shared is not None:
        from gateway.limits.sqlite_backend import SqliteLimits

        return SqliteLimits(
            shared, timezone=lim.timezone, spend=spend, clock=clock, lease_ttl_s=lim.lease_ttl_s
        )
    return MemoryLimits(timezone=lim.timezone, spend=spend, clock=clock, lease_ttl_s=lim.lease_ttl_s)
