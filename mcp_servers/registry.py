"""The central MCP registry: registered servers, their supervised upstreams and their tools.

Servers come from the ``mcp`` section of the configuration file (source ``config``) and from
the admin API (source ``admin``, persisted in the embedded store and reloaded at start-up).
Adding, replacing or removing one server starts or stops only that server's upstream: the other
servers' sessions are not touched (hot reload).

Every tool an upstream lists is registered under its exposed name
(:class:`mcp_servers.naming.ToolNameTable`: ``<server>__<tool>``, within
``^[a-zA-Z0-9_-]{1,64}$``, deterministic, injective) with its trust classification
(:mod:`mcp_servers.trust`) and a compiled validator of its input schema
(:mod:`mcp_servers.arguments`), both made here, at registration. Tools filtered out by the
server's allow/deny lists, classified ``deny`` or whose input schema is not a valid JSON Schema
are never exposed (the last two are reported as the server's problems). While an upstream is
down its tools stay known but are marked unavailable: they leave ``tools/list`` and a call
names the server.

Review of tools that appear later. A server's first tool list is accepted when the server is
registered: each tool's definition (name, title, description, schemas, annotations) is
fingerprinted and persisted (:class:`mcp_servers.store.McpStore`). A tool that a later list
adds, or whose definition changed since it was accepted (a list change, a reconnect, a restart
of the gateway with a new version of the server behind it), is classified from the worst case
(``confirm``, :func:`mcp_servers.trust.pending`) whatever it declares, until an admin accepts it
(:meth:`McpRegistry.accept_tools`, ``POST /admin/mcp/servers/{id}/tools/accept``); the
server's ``trust`` override still wins. A server whose transport (what runs) changed is a new
registration. Every registration, addition, change and acceptance is an audit row.

Several instances (``redis.url``, :mod:`gateway.fleet.mcp`): an admin change made here is
announced to the listeners of :meth:`McpRegistry.on_admin_change`, which keep it in Redis and
tell the other instances; those apply it with ``announce=False``.

Servers added through the admin API may use only what ``mcp.admin_servers`` allows
(:mod:`mcp_servers.admin_policy`): refused when posted, and not started at boot when a row
persisted earlier no longer fits (state ``blocked``, the reasons in its problems).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import os
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson
import structlog
from jsonschema.protocols import Validator
from mcp.types import Tool

from gateway.errors import ConfigError
from mcp_servers.admin_policy import AdminPolicyViolation, violations
from mcp_servers.arguments import InvalidSchema, compile_schema
from mcp_servers.config import HttpTransport, McpConfig, McpServerSpec, StdioTransport
from mcp_servers.naming import ToolNameTable
from mcp_servers.store import McpStore
from mcp_servers.targets import expand_workspace
from mcp_servers.trust import Classification, classify, pending
from mcp_servers.upstream import EnvReader, Upstream
from mcp_servers.upstream_oauth import TokenVault

log = structlog.get_logger("turnstile.mcp.registry")

Source = Literal["config", "admin"]


Review = Literal["added", "changed"]

AdminListener = Callable[[str, McpServerSpec | None], Coroutine[Any, Any, None]]
"""Awaited after an admin server was put (its spec) or removed (None) through this process."""


@dataclass(frozen=True)
class RegisteredTool:
    """One exposed tool: its upstream ``server`` and original ``name``, the ``exposed`` name,
    the upstream definition and its trust classification; ``validator`` checks call arguments
    against its input schema; ``path_base`` is where its server resolves relative paths (None:
    unknown); ``review`` is ``added``/``changed`` while it awaits an admin's acceptance;
    ``fingerprint`` identifies its definition (:func:`fingerprint`)."""

    server: str
    name: str
    exposed: str
    tool: Tool
    trust: Classification
    available: bool = True
    validator: Validator | None = None
    path_base: str | None = None
    review: Review | None = None
    fingerprint: str = ""


def fingerprint(tool: Tool) -> str:
    """sha256 (hex) of a tool's definition as listed: everything but ``_meta``, key-sorted."""
    body = tool.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"})
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def transport_fingerprint(spec: McpServerSpec) -> str:
    """sha256 (hex) of what runs for ``spec`` (its transport): a change is a new registration."""
    body = spec.transport.model_dump(mode="json")
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def path_base(spec: McpServerSpec, workspace_roots: list[str]) -> str | None:
    """The absolute directory ``spec``'s server resolves relative path arguments against: its
    ``relative_paths_base``, else its configured ``cwd`` (``${workspace}`` expanded; a relative
    one from the gateway's working directory, as the child is started); None for a stdio server
    without either (it runs wherever the gateway runs) and for every HTTP server."""
    t = spec.transport
    if not isinstance(t, StdioTransport):
        return None
    chosen = t.relative_paths_base or t.cwd
    if not chosen:
        return None
    try:
        return os.path.realpath(expand_workspace(chosen, workspace_roots))
    except ValueError:
        return None


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
        self.vault = TokenVault(store, read_env(config.token_key_env), config.token_key_env)
        """Upstream OAuth tokens, encrypted at rest (:mod:`mcp_servers.upstream_oauth`)."""
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
        self._baselines: dict[str, str] = {}  # server -> transport fingerprint of its registration
        self._accepted: dict[str, dict[str, str]] = {}  # server -> tool -> accepted fingerprint
        self._lists: dict[str, list[Tool]] = {}  # server -> its last tool list
        self._announced: dict[tuple[str, str], str] = {}  # (server, tool) -> last pending fingerprint audited
        self._blocked: dict[str, list[str]] = {}  # admin server -> why the policy keeps it stopped
        self._last_write: asyncio.Task[None] | None = None
        self._times: dict[str, tuple[float, float]] = {}  # server -> (registered, last changed), epoch s
        self._admin_listeners: list[AdminListener] = []

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Register the config servers, then the persisted admin servers (an admin row whose id
        is now defined in the config file is ignored, with a warning), and start them. Missing
        workspace roots are made first when ``create_workspace`` is on."""
        if self.config.create_workspace:
            for root in self.config.resolved_workspace_roots():
                Path(root).mkdir(parents=True, exist_ok=True)
        self._baselines, self._accepted = await self.store.load_baselines()
        for spec in self.config.servers:
            self._specs[spec.id] = (spec, "config")
        for spec in await self.store.load_servers():
            if spec.id in self._specs:
                log.warning("mcp_admin_server_shadowed", server=spec.id)
                continue
            self._specs[spec.id] = (spec, "admin")
            found = violations(spec, self.config.admin_servers)
            if found:
                self._blocked[spec.id] = [f"not started: {v.message}" for v in found]
                log.error("mcp_admin_server_blocked", server=spec.id, problems=[v.message for v in found])
        now = time.time()
        for spec, _ in self._specs.values():
            self._times[spec.id] = (now, now)
            if spec.id not in self._blocked:
                self._start_upstream(spec)

    async def close(self) -> None:
        """Stop every upstream (children terminated and reaped), finish pending store writes
        and close the store."""
        ups = list(self._upstreams.values())
        self._upstreams.clear()
        await asyncio.gather(*(u.stop() for u in ups), return_exceptions=True)
        if self._last_write is not None:
            with contextlib.suppress(Exception):
                await self._last_write
        self.store.close()

    def _persist(self, write: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task[None] | None:
        """Run the store write ``write()`` after the ones before it (in order, off the caller's
        path); a failure is logged, never raised to the caller."""
        before = self._last_write
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None

        async def run() -> None:
            if before is not None:
                with contextlib.suppress(Exception):
                    await before
            try:
                await write()
            except Exception:
                log.exception("mcp_store_write_failed")

        self._last_write = loop.create_task(run())
        return self._last_write

    def _start_upstream(self, spec: McpServerSpec) -> None:
        oauth = isinstance(spec.transport, HttpTransport) and spec.transport.oauth is not None
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
            **({"oauth_vault": self.vault} if oauth else {}),
        )
        self._upstreams[spec.id] = up
        up.start()

    async def wait_ready(self, timeout_s: float = 30.0) -> dict[str, bool]:
        """Wait until every enabled upstream is ready or ``timeout_s`` passed; server -> ready."""
        ups = [u for u in self._upstreams.values() if u.spec.enabled]
        results = await asyncio.gather(*(u.wait_ready(timeout_s) for u in ups))
        return {u.id: ok for u, ok in zip(ups, results, strict=True)}

    # ------------------------------------------------------------------ admin changes

    def on_admin_change(self, listener: AdminListener) -> None:
        """Await ``listener(server_id, spec or None)`` after each admin put or removal made with
        ``announce=True`` (the admin API's)."""
        self._admin_listeners.append(listener)

    async def _announce(self, server_id: str, spec: McpServerSpec | None) -> None:
        for listener in self._admin_listeners:
            try:
                await listener(server_id, spec)
            except Exception:
                log.exception("mcp_admin_change_listener_failed", server=server_id)

    def admin_spec(self, server_id: str) -> McpServerSpec | None:
        """The spec of admin server ``server_id``, or None (unknown or from the config file)."""
        current = self._specs.get(server_id)
        return current[0] if current is not None and current[1] == "admin" else None

    async def put_server(self, spec: McpServerSpec, *, announce: bool = True) -> bool:
        """Add or replace an admin server: persisted, then its upstream (re)started; the other
        upstreams keep running. Returns True when it replaced one. Raises
        :class:`RegistryConflict` for an id defined in the configuration file and
        :class:`~mcp_servers.admin_policy.AdminPolicyViolation` for a spec that uses what
        ``mcp.admin_servers`` does not allow (nothing is changed then). Replacing a server by
        one with the same transport keeps what was accepted of its tools; another transport is
        a new registration (its first tool list is accepted). ``announce``: tell the
        :meth:`on_admin_change` listeners (False for a change another instance made)."""
        replaced = await self._put(spec)
        if announce:
            await self._announce(spec.id, spec)
        return replaced

    async def _put(self, spec: McpServerSpec) -> bool:
        async with self._lock:
            current = self._specs.get(spec.id)
            if current is not None and current[1] == "config":
                raise RegistryConflict(
                    f"MCP server {spec.id!r} is defined in the configuration file; change it there"
                )
            found = violations(spec, self.config.admin_servers)
            if found:
                raise AdminPolicyViolation(spec.id, found)
            await self.store.save_server(spec)
            old = self._upstreams.pop(spec.id, None)
            if old is not None:
                await old.stop()
            self._drop_tools(spec.id)
            self._blocked.pop(spec.id, None)
            self._specs[spec.id] = (spec, "admin")
            now = time.time()
            self._times[spec.id] = (self._times.get(spec.id, (now, now))[0], now)
            self._start_upstream(spec)
            self._changed()
            return current is not None

    async def delete_server(self, server_id: str, *, announce: bool = True) -> bool:
        """Remove an admin server and stop its upstream. False when unknown; raises
        :class:`RegistryConflict` for a server defined in the configuration file.
        ``announce``: as for :meth:`put_server`."""
        removed = await self._delete(server_id)
        if removed and announce:
            await self._announce(server_id, None)
        return removed

    async def _delete(self, server_id: str) -> bool:
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
            self._times.pop(server_id, None)
            up = self._upstreams.pop(server_id, None)
            if up is not None:
                await up.stop()
            self._drop_tools(server_id)
            self._blocked.pop(server_id, None)
            self._lists.pop(server_id, None)
            self._baselines.pop(server_id, None)
            self._accepted.pop(server_id, None)
            for key in [k for k in self._announced if k[0] == server_id]:
                del self._announced[key]
            await self.store.forget_baseline(server_id)  # adding it again is a new registration
            await self.vault.forget(server_id)
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
        """Status of one server (state, tool counts, restarts, last error, problems, tools
        pending review). An admin server the policy keeps stopped is in state ``blocked``."""
        up = self._upstreams.get(server_id)
        spec = self._specs[server_id][0]
        status = (
            up.status() if up is not None else {"id": server_id, "state": "stopped", "enabled": spec.enabled}
        )
        if server_id in self._blocked:
            status.update(
                state="blocked", transport=spec.transport.type, last_error=self._blocked[server_id][0]
            )
        mine = [t for t in self._tools.values() if t.server == server_id]
        status["exposed_tools"] = len(mine)
        status["available_tools"] = sum(t.available for t in mine)
        status["problems"] = [*self._blocked.get(server_id, []), *self._problems.get(server_id, [])]
        status["pending_tools"] = [
            {"tool": t.name, "exposed": t.exposed, "change": t.review, "fingerprint": t.fingerprint}
            for t in sorted(mine, key=lambda t: t.name)
            if t.review is not None
        ]
        return status

    def status(self) -> dict[str, Any]:
        """``{"servers": [...], "unavailable_tools": [...]}`` for ``GET /health``."""
        return {
            "servers": [self.server_status(sid) for sid in sorted(self._specs)],
            "unavailable_tools": sorted(t.exposed for t in self._tools.values() if not t.available),
        }

    # ------------------------------------------------------------------ tools

    def _on_tools(self, server_id: str, tools: list[Tool] | None) -> None:
        """Upstream callback: a fresh tool list (re-register, re-classify) or None (down). The
        first list of a server not registered before (or whose transport changed) is accepted
        as its baseline."""
        entry = self._specs.get(server_id)
        if entry is None:
            return
        if tools is None:
            for name, t in list(self._tools.items()):
                if t.server == server_id and t.available:
                    self._tools[name] = dataclasses.replace(t, available=False)
            self._changed()
            return
        spec = entry[0]
        self._lists[server_id] = list(tools)
        transport = transport_fingerprint(spec)
        first = self._baselines.get(server_id) != transport
        if first:
            accepted = {t.name: fingerprint(t) for t in tools}
            self._baselines[server_id] = transport
            self._accepted[server_id] = accepted
            self._persist(lambda: self.store.save_baseline(server_id, transport, accepted))
        self._register(spec, tools, first=first)

    def _register(self, spec: McpServerSpec, tools: list[Tool], *, first: bool) -> None:
        """(Re)register every tool of ``tools`` for ``spec``: filter, classify (worst case
        while pending review), compile the input schema, name; audit what is new."""
        server_id = spec.id
        self._drop_tools(server_id)
        problems: list[str] = []
        base = path_base(spec, self.config.resolved_workspace_roots())
        accepted = self._accepted.get(server_id, {})
        for tool in tools:
            if not spec.tool_allowed(tool.name):
                continue
            override = spec.trust.get(tool.name)
            fp = fingerprint(tool)
            known = accepted.get(tool.name)
            review: Review | None = None if known == fp else "added" if known is None else "changed"
            trust = classify(tool, override) if review is None else pending(tool, review, override)
            if trust.tier == "deny":
                continue
            try:
                validator = compile_schema(dict(tool.input_schema or {}))
            except InvalidSchema as err:
                problems.append(f"tool {tool.name!r} is not exposed: its input schema is invalid: {err}")
                log.error("mcp_tool_schema_invalid", server=server_id, tool=tool.name, error=str(err))
                continue
            try:
                exposed = self._names.register(server_id, tool.name)
            except ConfigError as err:
                problems.append(err.message)
                log.error("mcp_tool_not_registered", server=server_id, tool=tool.name, error=err.message)
                continue
            t = RegisteredTool(server_id, tool.name, exposed, tool, trust, True, validator, base, review, fp)
            self._tools[exposed] = t
            if first:
                self._audit_tool(t, "registered", "in the server's first tool list: accepted at registration")
            elif review is not None and self._announced.get((server_id, tool.name)) != fp:
                self._announced[(server_id, tool.name)] = fp
                self._audit_tool(t, f"{review}_pending_review", trust.reason)
        self._problems[server_id] = problems
        self._changed()

    def _audit_tool(self, t: RegisteredTool, outcome: str, reason: str, client: str | None = None) -> None:
        entry = {
            "server": t.server,
            "tool": t.name,
            "exposed": t.exposed,
            "tier": t.trust.tier,
            "outcome": outcome,
            "reason": reason,
            "action": f"tool definition sha256:{t.fingerprint}",
            "client": client,
        }
        log.info("mcp_tool_review", **entry)
        self._persist(lambda: self.store.audit(entry))

    async def accept_tools(self, server_id: str, names: list[str] | None = None) -> list[dict[str, Any]]:
        """An admin accepts tools of ``server_id`` pending review (``names``: original tool
        names; None or empty: all of them): their current definitions are persisted as
        accepted, audited, and the tools re-classified from their own annotations (the
        server's ``trust`` overrides still win). Returns the accepted ``{tool, exposed,
        change, fingerprint}``. Raises ``KeyError`` for an unknown server and ``ValueError``
        naming tools that are not pending review."""
        async with self._lock:
            entry = self._specs.get(server_id)
            if entry is None:
                raise KeyError(server_id)
            pending_now = {p["tool"]: p for p in self.server_status(server_id)["pending_tools"]}
            if names:
                unknown = [n for n in names if n not in pending_now]
                if unknown:
                    raise ValueError(
                        f"not pending review on MCP server {server_id!r}: {', '.join(map(repr, unknown))} "
                        f"(pending: {', '.join(sorted(pending_now)) or 'none'})"
                    )
            chosen = [pending_now[n] for n in dict.fromkeys(names)] if names else list(pending_now.values())
            if not chosen:
                return []
            fps = {p["tool"]: p["fingerprint"] for p in chosen}
            self._accepted.setdefault(server_id, {}).update(fps)
            self._persist(lambda: self.store.save_accepted(server_id, fps))
            self._register(entry[0], self._lists.get(server_id, []), first=False)
            for p in chosen:
                t = self._tools.get(p["exposed"])
                if t is not None:
                    why = f"accepted by an admin ({p['change']} after registration)"
                    self._audit_tool(t, "accepted", why, "admin")
            if self._last_write is not None:  # persisted and audited before the admin is answered
                await self._last_write
            return chosen

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

    def times(self, server_id: str) -> tuple[float, float] | None:
        """When ``server_id`` was registered in this process (or added) and last changed
        (epoch seconds), or None for an unknown server."""
        return self._times.get(server_id)

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
