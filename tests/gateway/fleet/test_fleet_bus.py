"""Change notifications (:mod:`gateway.fleet.bus`): every instance hears a change, the CLI's
too, and a subscription made again after a loss runs the resync handlers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fleet_support import REDIS_URL, until

from gateway.config import RedisConfig
from gateway.fleet.bus import RESYNC, ChangeBus, announce
from gateway.fleet.link import RedisLink


async def test_a_change_published_by_one_instance_or_the_cli_reaches_every_instance(links) -> None:
    heard: list[tuple[str, Any]] = []
    buses = [ChangeBus(links()) for _ in range(2)]
    for n, bus in enumerate(buses):
        bus.on("access", lambda m, n=n: heard.append((f"bus{n}", m["what"])))
        await bus.start()
    try:
        assert await buses[0].publish("access", what="keys revoke")
        await until(lambda: len(heard) == 2)
        prefix = buses[0].link.prefix
        assert await announce(RedisConfig(url=REDIS_URL, prefix=prefix), "access", what="teams update")
        await until(lambda: len(heard) == 4)
        assert sorted(heard) == [
            ("bus0", "keys revoke"),
            ("bus0", "teams update"),
            ("bus1", "keys revoke"),
            ("bus1", "teams update"),
        ]
    finally:
        for bus in buses:
            await bus.close()


async def test_no_redis_url_announces_nothing() -> None:
    assert not await announce(RedisConfig(), "access", what="keys revoke")


async def test_a_subscription_lost_and_made_again_runs_the_resync_handlers(
    links: Callable[[], RedisLink],
) -> None:
    bus = ChangeBus(links())
    resyncs: list[dict[str, Any]] = []
    bus.on(RESYNC, resyncs.append)
    await bus.start()
    try:
        import redis.asyncio as aioredis

        admin = aioredis.Redis.from_url(REDIS_URL)
        name = f"turnstile-changes-{bus.link.instance}"
        for entry in await admin.client_list():  # drop this bus's subscriber connection
            if entry.get("name") == name:
                await admin.client_kill_filter(_id=entry["id"])
        await admin.aclose()
        await until(lambda: len(resyncs) >= 1, timeout_s=3.0)
    finally:
        await bus.close()
