"""The central MCP registry: registered servers, their supervised upstreams and their tools.

Servers come from the ``mcp`` section of the configuration file (source ``config``) and from
the admin API (source ``admin``, persisted in the embedded store and reloaded at start-up).
Adding, replacing or removing one server starts or stops only that server's upstream: the other
servers' sessions are not touched (hot reload).

Every tool an upstream lists is registered under its exposed name
(:class:`mcp_servers.naming.ToolNameTable`: ``<server>__<tool>``, within
``^[a-zA-Z0-9_-]{1,64}$``, deterministic, injective) with its trust classification
(:mod:`mcp_servers.trust`), decided here, at registration. Tools filtered out by the server's
allow/deny lists or classified ``deny`` are never exposed. While an upstream is down its tools
stay known but are marked unavailable: they leave ``tools/list`` and a call names the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import structlog
from mcp.types import Tool

from gateway.errors import ConfigError
from mcp_servers.config import McpConfig, McpServerSpec
from mcp_servers.naming import ToolNameTable
from mcp_servers.store import McpStore
from mcp_servers.trust import Classification, classify
from mcp_servers.upstream import EnvReader, Upstream

log = structlog.get_logger("turnstile.mcp.registry")

Source = Literal["config", "admin"]


@dataclass(frozen=True)
class RegisteredTool:
    """One exposed tool: its upstream ``server`` and original ``name``, the ``exposed`` name,
    the upstream definition and its trust classification."""

    server: str
    name: str
    exposed: str
    tool: Tool
    trust: Classification
    available: bool = True


class RegistryConflict(Exception):
    """An admin change the registry refuses (e.g. replacing a server defined in the config file)."""


class McpRegistry:
    """Servers, upstreams and tools (see the module docstring). Made in the app's lifespan."""

    def __init__(
        self,
        config: McpConfig,
        *,
        store: McpStore,
        read_env: EnvReader,
        upstream_factory: Callable[..., Upstream] = Upstream,
    ) -> None:
        self.config = config
        self.store = store
        self._read_env = read_env
        self._factory = upstream_factory
        self._specs: dict[str, tuple[McpServerSpec, Source]] = {}
        self._upstreams: dict[str, Upstream] = {}
        self._names = ToolNameTable(namespaced=config.namespaced)
        self._tools: dict[str, RegisteredTool] = {}  # exposed name -> tool
        self._problems: dict[str, list[str]] = {}  # server -> registration problems
        self._listeners: list[Callable[[], None]] = []
        self._list_listeners: list[Callable[[str], None]] = []
        self._updated_listeners: list[Callable[[str, str], None]] = []
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Register the config servers, then the persisted admin servers (an admin row whose id
        is now defined in the config file is ignored, with a warning), and start them. Missing
        workspace roots are made first when ``create_workspace`` is on."""
        if self.config.create_workspace:
            for root in self.config.resolved_workspace_roots():
                Path(root).mkdir(parents=True, exist_ok=True)
        for spec in self.config.servers:
            self._specs[spec.id] = (spec, "config")
        for spec in await self.store.load_servers():
            if spec.id in self._specs:
                log.warning("mcp_admin_server_shadowed", server=spec.id)
                continue
            self._specs[spec.id] = (spec, "admin")
        for spec, _ in self._specs.values():
            self._start_upstream(spec)

    async def close(self) -> None:
        """Stop every upstream (children terminated and reaped) and close the store."""
        ups = list(self._upstreams.values())
        self._upstreams.clear()
        await asyncio.gather(*(u.stop() for u in ups), return_exceptions=True)
        self.store.close()

    def _start_upstream(self, spec: McpServerSpec) -> None:
        up = self._factory(
            spec,
            read_env=self._read_env,
            on_tools=self._on_tools,
            backoff_s=self.config.restart_backoff_s,
            backoff_max_s=self.config.restart_backoff_max_s,
            health_interval_s=self.config.health_interval_s,
            connect_timeout_s=self.config.connect_timeout_s,
            probe_timeout_s=self.config.probe_timeout_s,
            workspace_roots=self.config.resolved_workspace_roots(),
            on_lists_changed=self._on_lists_changed,
            on_resource_updated=self._on_resource_updated,
        )
        self._upstreams[spec.id] = up
        up.start()

    async def wait_ready(self, timeout_s: float = 30.0) -> dict[str, bool]:
        """Wait until every enabled upstream is ready or ``timeout_s`` passed; server -> ready."""
        ups = [u for u in self._upstreams.values() if u.spec.enabled]
        results = await asyncio.gather(*(u.wait_ready(timeout_s) for u in ups))
        return {u.id: ok for u, ok in zip(ups, results, strict=True)}

    # ------------------------------------------------------------------ admin changes

    async def put_server(self, spec: McpServerSpec) -> bool:
        """Add or replace an admin server: persisted, then its upstream (re)started; the other
        upstreams keep running. Returns True when it replaced one. Raises
        :class:`RegistryConflict` for an id defined in the configuration file."""
        async with self._lock:
            current = self._specs.get(spec.id)
            if current is not None and current[1] == "config":
                raise RegistryConflict(
                    f"MCP server {spec.id!r} is defined in the configuration file; change it there"
                )
            await self.store.save_server(spec)
            old = self._upstreams.pop(spec.id, None)
            if old is not None:
                await old.stop()
            self._drop_tools(spec.id)
            self._specs[spec.id] = (spec, "admin")
            self._start_upstream(spec)
            self._changed()
            return current is not None

    async def delete_server(self, server_id: str) -> bool:
        """Remove an admin server and stop its upstream. False when unknown; raises
        :class:`RegistryConflict` for a server defined in the configuration file."""
        async with self._lock:
            current = self._specs.get(server_id)
            if current is None:
                return False
            if current[1] == "config":
                raise RegistryConflict(
                    f"MCP server {server_id!r} is defined in the configuration file; remove it there"
                )
            await self.store.delete_server(server_id)
            del self._specs[server_id]
            up = self._upstreams.pop(server_id, None)
            if up is not None:
                await up.stop()
            self._drop_tools(server_id)
            self._changed()
            return True

    def servers(self) -> list[dict[str, Any]]:
        """Every registered server: its spec (as JSON-ready dict), source and status."""
        out = []
        for sid, (spec, source) in sorted(self._specs.items()):
            entry: dict[str, Any] = {"spec": spec.model_dump(mode="json"), "source": source}
            entry["status"] = self.server_status(sid)
            out.append(entry)
        return out

    def server_status(self, server_id: str) -> dict[str, Any]:
        """Status of one server (state, tool counts, restarts, last error, problems)."""
        up = self._upstreams.get(server_id)
        spec = self._specs[server_id][0]
        status = (
            up.status() if up is not None else {"id": server_id, "state": "stopped", "enabled": spec.enabled}
        )
        mine = [t for t in self._tools.values() if t.server == server_id]
        status["exposed_tools"] = len(mine)
        status["available_tools"] = sum(t.available for t in mine)
        status["problems"] = list(self._problems.get(server_id, []))
        return status

    def status(self) -> dict[str, Any]:
        """``{"servers": [...], "unavailable_tools": [...]}`` for ``GET /health``."""
        return {
            "servers": [self.server_status(sid) for sid in sorted(self._specs)],
            "unavailable_tools": sorted(t.exposed for t in self._tools.values() if not t.available),
        }

    # ------------------------------------------------------------------ tools

    def _on_tools(self, server_id: str, tools: list[Tool] | None) -> None:
        """Upstream callback: a fresh tool list (re-register, re-classify) or None (down)."""
        entry = self._specs.get(server_id)
        if entry is None:
            return
        if tools is None:
            for name, t in list(self._tools.items()):
                if t.server == server_id and t.available:
                    self._tools[name] = RegisteredTool(t.server, t.name, t.exposed, t.tool, t.trust, False)
            self._changed()
            return
        spec = entry[0]
        self._drop_tools(server_id)
        problems: list[str] = []
        for tool in tools:
            if not spec.tool_allowed(tool.name):
                continue
            trust = classify(tool, spec.trust.get(tool.name))
            if trust.tier == "deny":
                continue
            try:
                exposed = self._names.register(server_id, tool.name)
            except ConfigError as err:
                problems.append(err.message)
                log.error("mcp_tool_not_registered", server=server_id, tool=tool.name, error=err.message)
                continue
            self._tools[exposed] = RegisteredTool(server_id, tool.name, exposed, tool, trust)
        self._problems[server_id] = problems
        self._changed()

    def _drop_tools(self, server_id: str) -> None:
        self._names.unregister_server(server_id)
        for name in [n for n, t in self._tools.items() if t.server == server_id]:
            del self._tools[name]
        self._problems.pop(server_id, None)

    def tools(self, *, include_unavailable: bool = False) -> list[RegisteredTool]:
        """Registered tools in (server, original name) order; only available ones by default."""
        out = [t for t in self._tools.values() if include_unavailable or t.available]
        return sorted(out, key=lambda t: (t.server, t.name))

    def lookup(self, exposed: str) -> RegisteredTool | None:
        """The tool exposed as ``exposed`` (available or not), or None."""
        return self._tools.get(exposed)

    def input_schema(self, exposed: str) -> dict[str, Any] | None:
        """The upstream input schema of ``exposed`` (for the endpoint's argument checks)."""
        t = self._tools.get(exposed)
        return dict(t.tool.input_schema) if t is not None else None

    def server_ids(self) -> list[str]:
        """Every registered server id, sorted."""
        return sorted(self._specs)

    def spec(self, server_id: str) -> McpServerSpec | None:
        """The spec of a registered server."""
        entry = self._specs.get(server_id)
        return entry[0] if entry else None

    def upstream(self, server_id: str) -> Upstream | None:
        """The supervised upstream of ``server_id``."""
        return self._upstreams.get(server_id)

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` whenever the set or availability of tools changes."""
        self._listeners.append(listener)

    def on_list_change(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(kind)`` (``tools``, ``resources`` or ``prompts``) whenever the
        aggregated list of that kind may have changed: an upstream said so, came up, went down,
        or a server was added or removed."""
        self._list_listeners.append(listener)

    def on_resource_updated(self, listener: Callable[[str, str], None]) -> None:
        """Call ``listener(server id, original URI)`` when an upstream says a resource changed."""
        self._updated_listeners.append(listener)

    def _on_resource_updated(self, server_id: str, uri: str) -> None:
        if server_id not in self._specs:
            return
        for listener in self._updated_listeners:
            try:
                listener(server_id, uri)
            except Exception:
                log.exception("mcp_listener_failed")

    def _on_lists_changed(self, server_id: str, kind: str) -> None:
        if server_id in self._specs:
            self._notify(kind)

    def _notify(self, kind: str) -> None:
        for listener in self._list_listeners:
            try:
                listener(kind)
            except Exception:
                log.exception("mcp_listener_failed")

    def _changed(self) -> None:
        for listener in self._listeners:
            try:
                listener()
            except Exception:
                log.exception("mcp_listener_failed")
        for kind in ("tools", "resources", "prompts"):
            self._notify(kind)
