"""The shared state a gateway's configuration asks for: everything of :mod:`gateway.fleet`
when ``redis.url`` is set, nothing otherwise (each instance keeps its own state, as one
embedded gateway always did)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from gateway.fleet.bus import RESYNC, ChangeBus
from gateway.fleet.health import SharedHealth
from gateway.fleet.link import RedisLink
from gateway.fleet.mcp import SharedMcp
from gateway.fleet.memory import SharedMemory
from gateway.schema import Request
from gateway.turn import Gateway

log = structlog.get_logger("turnstile.fleet")


@dataclass
class Fleet:
    """What this instance shares (lives on ``gw.fleet``)."""

    link: RedisLink
    bus: ChangeBus
    health: SharedHealth
    memory: SharedMemory
    mcp: SharedMcp | None = None

    async def prefetch(self, request: Request) -> None:
        """The guards layer's one call: what ``request`` needs from the shared memories."""
        await self.memory.prefetch(request)

    async def remembered(self) -> None:
        """The attempt layer's one call: wait until what the memories just remembered is
        written (nothing to wait for: returns at once), so that a next request landing on
        another instance finds it."""
        await self.memory.written()

    async def access_changed(self, what: str) -> None:
        """A key or team changed here: every instance forgets its cached key lookups."""
        await self.bus.publish("access", what=what)

    async def close(self) -> None:
        """Stop listening and syncing; close the connection."""
        await self.bus.close()
        await self.health.close()
        await self.memory.close()
        await self.link.aclose()


async def open_fleet(gw: Gateway, registry: Any = None) -> Fleet | None:
    """Share ``gw``'s health board, memories, key lookups and (``registry``, an
    :class:`mcp_servers.registry.McpRegistry`) admin MCP servers through ``gw.config.redis``;
    None when ``redis.url`` is not set. Redis unreachable at start is logged, not raised: the
    instance starts with its own state and joins when Redis answers."""
    link = RedisLink.from_config(gw.config.redis)
    if link is None:
        return None
    from routers.engine import RoutingEngine

    if gw.routing is None:
        gw.routing = RoutingEngine(gw.config)
    bus = ChangeBus(link)
    board = gw.routing.health
    fleet = Fleet(
        link,
        bus,
        SharedHealth(link, bus, board, [d.name for d in gw.config.deployments]),
        SharedMemory(link, gw.thinking, gw.signers),
    )

    def forget(_message: dict[str, Any]) -> None:
        if gw.identity is not None:
            gw.identity.forget()

    bus.on("access", forget)
    bus.on(RESYNC, forget)
    await bus.start(timeout_s=gw.config.redis.timeout_s * 4)
    await fleet.health.start()
    fleet.memory.start()
    if registry is not None:
        fleet.mcp = SharedMcp(link, bus, registry)
        await fleet.mcp.start()
    log.info("fleet_joined", instance=link.instance, prefix=link.prefix)
    return fleet
