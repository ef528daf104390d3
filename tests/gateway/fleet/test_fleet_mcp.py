"""MCP servers added through the admin API on one instance, on every instance
(:mod:`gateway.fleet.mcp`): two registries with stand-in upstreams, two links on one prefix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fleet_support import until

from gateway.fleet.bus import ChangeBus
from gateway.fleet.link import RedisLink
from gateway.fleet.mcp import SharedMcp
from mcp_servers.config import McpConfig, McpServerSpec
from mcp_servers.registry import McpRegistry
from mcp_servers.store import McpStore


class _Upstream:
    def __init__(self, spec: McpServerSpec, **_: Any) -> None:
        self.spec, self.id = spec, spec.id

    def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass


async def _instance(make: Callable[[], RedisLink], home: Path) -> tuple[McpRegistry, SharedMcp, ChangeBus]:
    home.mkdir()
    cfg = McpConfig.model_validate({"servers": [], "admin_servers": {"commands": ["x"]}})
    store = McpStore(home / "db.sqlite")
    registry = McpRegistry(cfg, store=store, read_env=lambda _: None, upstream_factory=_Upstream)
    await registry.start()
    link = make()
    bus = ChangeBus(link)
    await bus.start()
    shared = SharedMcp(link, bus, registry)
    await shared.start()
    return registry, shared, bus


def _spec(sid: str) -> McpServerSpec:
    return McpServerSpec.model_validate({"id": sid, "transport": {"type": "stdio", "command": "x"}})


async def test_a_server_registered_on_one_instance_is_listed_by_the_others(links, tmp_path: Path) -> None:
    one, _, one_bus = await _instance(links, tmp_path / "one")
    other, _, other_bus = await _instance(links, tmp_path / "other")
    try:
        await one.put_server(_spec("tickets"))
        took = await until(lambda: other.admin_spec("tickets") is not None)
        assert took < 1.0
        late, _, late_bus = await _instance(links, tmp_path / "late")  # loads what is shared
        assert late.admin_spec("tickets") == _spec("tickets")
        await other.delete_server("tickets")
        await until(lambda: one.admin_spec("tickets") is None and late.admin_spec("tickets") is None)
        await late_bus.close()
        await late.close()
    finally:
        for reg, bus in ((one, one_bus), (other, other_bus)):
            await bus.close()
            await reg.close()
