"""Change notifications between instances: one Redis pub/sub channel (``<prefix>changes``).

A change made on one instance — a key or team changed through the admin API, an MCP server
added or removed, a deployment's health — is published as one JSON message ``{"t": topic,
"from": instance, ...}``; every instance (the publisher too) hands it to the handlers of its
topic. Delivery takes one Redis round trip (well under the second the instances promise).

Pub/sub delivers only to connected subscribers: a message sent while an instance's
subscription was down is lost to it. So when the subscription is made again after a loss, the
``resync`` handlers run (each reloads what it keeps from Redis or drops its caches), and what
is never reloaded is bounded by its own TTL (key lookups: ``access.cache_ttl_s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import structlog

from gateway.config import RedisConfig
from gateway.fleet.link import UNREACHABLE, RedisLink

log = structlog.get_logger("turnstile.fleet")

Handler = Callable[[dict[str, Any]], Awaitable[None] | None]
"""Called with the message (a dict with at least ``t`` and ``from``)."""

RESUBSCRIBE_S = 0.5
"""Pause before the subscription is tried again after it was lost (seconds)."""

RESYNC = "resync"
"""The pseudo-topic whose handlers run when the subscription is back after a loss."""


class ChangeBus:
    """Publish and hear change notifications over ``link`` (see the module docstring)."""

    def __init__(self, link: RedisLink) -> None:
        self.link = link
        self._handlers: dict[str, list[Handler]] = {}
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self.received = 0

    def on(self, topic: str, handler: Handler) -> None:
        """Hand every message of ``topic`` (or :data:`RESYNC`) to ``handler``."""
        self._handlers.setdefault(topic, []).append(handler)

    async def publish(self, topic: str, **data: Any) -> bool:
        """Send one message of ``topic`` with ``data``; False when Redis was unreachable
        (logged; the change is in force here and reaches the others by their TTLs or resync)."""
        body = orjson.dumps({"t": topic, "from": self.link.instance, **data})
        done = await self.link.run(
            f"publish {topic}", lambda: self.link.client.publish(self.link.channel, body)
        )
        return done is not None

    async def start(self, timeout_s: float = 5.0) -> None:
        """Subscribe (in a task of its own, made again after a loss); returns once subscribed
        or after ``timeout_s`` (Redis down at start: the task keeps trying)."""
        self._task = asyncio.create_task(self._listen())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout_s)

    async def close(self) -> None:
        """Stop listening."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _listen(self) -> None:
        lost = False
        while True:
            client = self.link.subscriber()
            pubsub = client.pubsub()
            try:
                await pubsub.subscribe(self.link.channel)
                self._ready.set()
                if lost:
                    log.info("fleet_resubscribed")
                    await self._deliver({"t": RESYNC, "from": self.link.instance})
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        await self._hear(message["data"])
                lost = True  # the subscription ended: what was sent meanwhile is missed
            except UNREACHABLE as err:
                if not lost:
                    log.warning("fleet_subscription_lost", error=f"{type(err).__name__}: {err}")
                lost = True
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                with contextlib.suppress(Exception):
                    await client.aclose()
            await asyncio.sleep(RESUBSCRIBE_S)  # pace of reconnection attempts while Redis is away

    async def _hear(self, raw: str | bytes) -> None:
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError:
            log.error("fleet_message_unreadable", data=str(raw)[:200])
            return
        if isinstance(message, dict) and isinstance(message.get("t"), str):
            self.received += 1
            await self._deliver(message)

    async def _deliver(self, message: dict[str, Any]) -> None:
        for handler in self._handlers.get(message["t"], ()):
            try:
                out = handler(message)
                if inspect.isawaitable(out):
                    await out
            except Exception:
                log.exception("fleet_handler_failed", topic=message["t"])


async def announce(config: RedisConfig, topic: str, **data: Any) -> bool:
    """Publish one change from outside a running gateway (the ``turnstile keys``/``teams``
    CLI) on ``config``'s channel; False when ``redis.url`` is not set or Redis is unreachable
    (the instances then see the change within ``access.cache_ttl_s``)."""
    link = RedisLink.from_config(config)
    if link is None:
        return False
    try:
        return await ChangeBus(link).publish(topic, **data)
    finally:
        await link.aclose()
