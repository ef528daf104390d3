"""One Redis connection for the state instances share (:mod:`gateway.fleet`), and what
"unreachable" means for it.

Nothing here is on a turn's way except where its module says so: a failure is logged and the
instance goes on with what it knows locally (health, memories) — sharing degrades, turns do
not fail. After a failure Redis is not tried again for :data:`DOWN_COOLDOWN_S`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis.asyncio as aioredis
import redis.exceptions
import structlog
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from gateway.config import RedisConfig

log = structlog.get_logger("turnstile.fleet")

UNREACHABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
"""What "Redis cannot be reached" is (a script error is a bug and propagates)."""

DOWN_COOLDOWN_S = 1.0
"""After Redis was unreachable, shared-state calls are skipped for this long (seconds)."""

T = TypeVar("T")


class RedisLink:
    """The client (``decode_responses=True``, each command tried once more at once), the key
    ``prefix``, this instance's random ``instance`` id (on every notification it publishes) and
    the notification ``channel``."""

    def __init__(self, client: aioredis.Redis, *, prefix: str, url: str = "", timeout_s: float = 0.5) -> None:
        self.client = client
        self.prefix = prefix
        self.url = url
        self.timeout_s = timeout_s
        self.instance = uuid.uuid4().hex[:12]
        self.channel = prefix + "changes"
        self.down_until = 0.0

    @classmethod
    def from_config(cls, config: RedisConfig) -> RedisLink | None:
        """A link to ``config.url``, or None when it is not set (connecting is lazy)."""
        if not config.url:
            return None
        client = aioredis.Redis.from_url(
            config.url,
            decode_responses=True,
            socket_timeout=config.timeout_s,
            socket_connect_timeout=config.timeout_s,
            retry=Retry(NoBackoff(), 1),
        )
        return cls(client, prefix=config.prefix, url=config.url, timeout_s=config.timeout_s)

    def key(self, *parts: str) -> str:
        """``prefix`` + the parts joined by ``:``."""
        return self.prefix + ":".join(parts)

    async def run(self, what: str, call: Callable[[], Awaitable[T]]) -> T | None:
        """``await call()``, or None when Redis is unreachable (logged once per cooldown, not
        retried for :data:`DOWN_COOLDOWN_S`) or was within the cooldown."""
        if time.monotonic() < self.down_until:
            return None
        try:
            return await call()
        except UNREACHABLE as err:
            self.down_until = time.monotonic() + DOWN_COOLDOWN_S
            log.warning("fleet_redis_unreachable", what=what, error=f"{type(err).__name__}: {err}")
            return None

    def subscriber(self) -> aioredis.Redis:
        """A client for the notification subscription: no read timeout (it waits for
        messages), the connect timeout of the others."""
        kw: dict[str, Any] = {
            "decode_responses": True,
            "socket_connect_timeout": self.timeout_s,
            "client_name": f"turnstile-changes-{self.instance}",  # CLIENT LIST names the instance
        }
        return aioredis.Redis.from_url(self.url, health_check_interval=5, **kw)

    async def aclose(self) -> None:
        """Close the client."""
        await self.client.aclose()
