"""MCP servers added through the admin API, on every instance.

An instance that takes ``POST`` or ``DELETE /admin/mcp/servers`` keeps the spec in Redis (hash
``mcp:servers``, server id -> spec JSON; removed on delete) and publishes ``{"t": "mcp", "id":
...}`` before it answers; every other instance reads the spec and puts or removes the server in
its own registry (``announce=False``: its embedded store keeps it too), starting or stopping its
own upstream. An instance that starts, or whose subscription comes back after a loss, loads the
whole hash: servers it lacks or holds in another version are put, admin servers it took from
the hash and that left it are removed.
"""

from __future__ import annotations

import structlog
from pydantic import ValidationError

from gateway.fleet.bus import RESYNC, ChangeBus
from gateway.fleet.link import RedisLink
from mcp_servers.admin_policy import AdminPolicyViolation
from mcp_servers.config import McpServerSpec
from mcp_servers.registry import McpRegistry, RegistryConflict

log = structlog.get_logger("turnstile.fleet")


class SharedMcp:
    """Keeps ``registry``'s admin servers the same on every instance (module docstring)."""

    def __init__(self, link: RedisLink, bus: ChangeBus, registry: McpRegistry) -> None:
        self.link = link
        self.bus = bus
        self.registry = registry
        self.hash = link.key("mcp", "servers")
        self._adopted: set[str] = set()

    async def start(self) -> None:
        """Announce this registry's admin changes, hear the others', load the shared ones."""
        self.registry.on_admin_change(self._changed_here)
        self.bus.on("mcp", self._changed_there)
        self.bus.on(RESYNC, self._resync)
        await self.load()

    async def _changed_here(self, server_id: str, spec: McpServerSpec | None) -> None:
        client = self.link.client
        if spec is None:
            await self.link.run("mcp remove", lambda: client.hdel(self.hash, server_id))
        else:
            body = spec.model_dump_json()
            await self.link.run("mcp put", lambda: client.hset(self.hash, server_id, body))
        self._adopted.discard(server_id)
        await self.bus.publish("mcp", id=server_id)

    async def _changed_there(self, message: dict[str, object]) -> None:
        server_id = message.get("id")
        if message.get("from") == self.link.instance or not isinstance(server_id, str):
            return
        raw = await self.link.run("mcp read", lambda: self.link.client.hget(self.hash, server_id))
        await self._apply(server_id, raw)

    async def _apply(self, server_id: str | bytes, raw: str | bytes | None) -> None:
        server_id = server_id.decode() if isinstance(server_id, bytes) else server_id
        current = self.registry.admin_spec(server_id)
        try:
            if raw is None:
                if current is not None:
                    await self.registry.delete_server(server_id, announce=False)
                    log.info("mcp_server_removed_elsewhere", server=server_id)
                self._adopted.discard(server_id)
                return
            spec = McpServerSpec.model_validate_json(raw)
            if current != spec:
                await self.registry.put_server(spec, announce=False)
                log.info("mcp_server_put_elsewhere", server=server_id)
            self._adopted.add(server_id)
        except (ValidationError, RegistryConflict, AdminPolicyViolation) as err:
            log.error("mcp_shared_server_refused", server=server_id, error=str(err))

    async def _resync(self, _message: dict[str, object]) -> None:
        await self.load()

    async def load(self) -> None:
        """Apply the whole shared hash (module docstring)."""
        shared = await self.link.run("mcp load", lambda: self.link.client.hgetall(self.hash))
        if shared is None:
            return
        for server_id, raw in shared.items():
            await self._apply(server_id, raw)
        for server_id in sorted(self._adopted - set(shared)):
            await self._apply(server_id, None)
