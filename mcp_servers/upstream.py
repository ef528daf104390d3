"""Supervision of one upstream MCP server: one ``mcp`` SDK ``Client``, kept alive.

Each :class:`Upstream` runs a supervisor task that owns the ``Client`` (entered and left in that
one task, as anyio requires):

* connect (``mode="auto"``: ``server/discover`` for 2026-07-28 servers, the ``initialize``
  handshake for older ones), read every page of ``tools/list``, hand the tools to the registry;
* every ``health_interval_s`` re-read the tool list (a health check that also notices a changed
  list; ``ping`` is gone from protocol 2026-07-28);
* when the connection dies (a stdio child exits: ``MCPError(CONNECTION_CLOSED)`` at once; an HTTP
  client that lost its connection stays dead for good in mcp 2.3) or a health check fails, leave
  the ``Client`` (the SDK closes stdin, waits 2 s, then kills the child's process tree: no child
  outlives it) and build a new one after a backoff that doubles up to ``backoff_max_s``.

While an upstream is not ``ready`` its tools are withdrawn from the registry and a call fails at
once with :class:`UpstreamUnavailable` naming the server; other upstreams are untouched.
A call has its own timeout; cancelling it (timeout, or the caller went away) makes the SDK send
``notifications/cancelled`` upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Literal, TypeVar

import structlog
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from mcp.types import (
    CONNECTION_CLOSED,
    CallToolResult,
    Implementation,
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ServerCapabilities,
    Tool,
    ToolListChangedNotification,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_servers.config import WORKSPACE_PLACEHOLDER, HttpTransport, McpServerSpec, StdioTransport

log = structlog.get_logger("turnstile.mcp.upstream")

State = Literal["starting", "ready", "restarting", "unavailable", "stopped", "disabled"]
"""``unavailable``: the server cannot be launched here (its command is missing); it is retried
with the largest backoff, in case the command is installed later."""
_MAX_PAGES = 100


class UpstreamUnavailable(Exception):
    """The upstream is not connected (starting, restarting after a crash, or disabled)."""

    def __init__(self, server: str, state: str, last_error: str | None) -> None:
        why = f": {last_error}" if last_error else ""
        super().__init__(f"MCP server {server!r} is unavailable ({state}{why})")
        self.server = server


class UpstreamCallFailed(Exception):
    """A call did not complete: the connection died mid-call or the call timed out."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"MCP server {server!r}: {message}")
        self.server = server


class CommandNotFound(Exception):
    """The stdio server's command is neither on ``PATH`` nor beside the gateway's Python."""

    def __init__(self, server: str, command: str) -> None:
        super().__init__(
            f"command {command!r} of MCP server {server!r} was not found on PATH; install it or set "
            f"enabled: false on the server"
        )


def resolve_command(command: str) -> str | None:
    """The executable to run for ``command``: itself when it contains a path separator and
    exists, else ``shutil.which(command)``, else the file of that name beside
    ``sys.executable`` (the gateway's own environment's scripts); None when none exists."""
    if os.sep in command:
        return command if os.path.exists(command) else None
    found = shutil.which(command)
    if found:
        return found
    beside = Path(sys.executable).parent / command
    return str(beside) if beside.exists() else None


def expand_workspace(value: str, workspace_roots: list[str]) -> str:
    """``value`` with ``${workspace}`` replaced by the first workspace root (absolute)."""
    if WORKSPACE_PLACEHOLDER not in value:
        return value
    if not workspace_roots:
        raise ValueError(f"{value!r} uses {WORKSPACE_PLACEHOLDER} but mcp.workspace_roots is empty")
    return value.replace(WORKSPACE_PLACEHOLDER, workspace_roots[0])


EnvReader = Callable[[str], str | None]
ToolsCallback = Callable[[str, list[Tool] | None], None]
ListsCallback = Callable[[str, str], None]
"""``(server id, kind)`` with kind ``resources`` or ``prompts``: that upstream's list changed."""
T = TypeVar("T")


def build_target(
    spec: McpServerSpec, read_env: EnvReader, stack: AsyncExitStack, workspace_roots: list[str] | None = None
) -> Any:
    """What ``mcp.Client`` connects to for ``spec``: ``StdioServerParameters`` (the child gets the
    SDK's minimal safe environment, the allow-listed variables and ``env``; ``${workspace}`` in
    ``args``/``cwd`` expanded; raises :class:`CommandNotFound`), or a streamable HTTP
    transport whose ``httpx2`` client carries the configured headers read from the environment
    (registered on ``stack`` so it is closed with the connection)."""
    t = spec.transport
    if isinstance(t, StdioTransport):
        env = {name: value for name in t.env_passthrough if (value := read_env(name)) is not None}
        env.update(t.env)
        command = resolve_command(t.command)
        if command is None:
            raise CommandNotFound(spec.id, t.command)
        roots = workspace_roots or []
        args = [expand_workspace(a, roots) for a in t.args]
        cwd = expand_workspace(t.cwd, roots) if t.cwd else None
        return StdioServerParameters(command=command, args=args, cwd=cwd, env=env or None)
    assert isinstance(t, HttpTransport)
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {h: value for h, var in t.headers_env.items() if (value := read_env(var)) is not None}
    http = create_mcp_http_client(headers=headers or None)
    stack.push_async_callback(http.aclose)
    return streamable_http_client(t.url, http_client=http)


class Upstream:
    """One supervised upstream server (see the module docstring)."""

    def __init__(
        self,
        spec: McpServerSpec,
        *,
        read_env: EnvReader,
        on_tools: ToolsCallback,
        backoff_s: float = 0.5,
        backoff_max_s: float = 30.0,
        health_interval_s: float = 30.0,
        connect_timeout_s: float = 30.0,
        workspace_roots: list[str] | None = None,
        on_lists_changed: ListsCallback | None = None,
    ) -> None:
        self.spec = spec
        self._on_lists_changed = on_lists_changed
        self._workspace_roots = list(workspace_roots or [])
        self.id = spec.id
        self._read_env = read_env
        self._on_tools = on_tools
        self._backoff_s = backoff_s
        self._backoff_max_s = backoff_max_s
        self._health_interval_s = health_interval_s
        self._connect_timeout_s = spec.connect_timeout_s or connect_timeout_s
        self.state: State = "disabled" if not spec.enabled else "starting"
        self.last_error: str | None = None
        self.restarts = 0
        self.since = time.time()
        self.protocol_version: str | None = None
        self.server_info: Implementation | None = None
        self.tool_count = 0
        self._client: Client | None = None
        self._dead = asyncio.Event()
        self._stopping = False
        self._stop_requested = asyncio.Event()
        self._relist = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the supervisor task (no-op for a disabled server)."""
        if self.spec.enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._supervise(), name=f"mcp-upstream-{self.id}"
            )

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Leave the client (the stdio child is terminated and reaped) and end the supervisor."""
        self._stopping = True
        self._stop_requested.set()
        self._dead.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                await asyncio.wait_for(task, timeout_s)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self.state != "disabled":
            self._set_state("stopped")

    async def wait_ready(self, timeout_s: float) -> bool:
        """True once the upstream is ready (tools listed), False after ``timeout_s``."""
        try:
            await asyncio.wait_for(self._ready.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    def _set_state(self, state: State, error: str | None = None) -> None:
        if state != self.state:
            log.info("mcp_upstream_state", server=self.id, state=state, error=error)
            self.since = time.time()
        self.state = state
        if error is not None:
            self.last_error = error
        if state == "ready":
            self._ready.set()
        else:
            self._ready.clear()

    async def _supervise(self) -> None:
        delay = self._backoff_s
        while not self._stopping:
            began = time.monotonic()
            missing = False
            try:
                await self._connect_and_serve()
            except asyncio.CancelledError:
                raise
            except CommandNotFound as err:
                missing = True
                self.last_error = str(err)
                delay = self._backoff_max_s
                log.warning("mcp_upstream_unavailable", server=self.id, error=self.last_error)
            except BaseException as err:
                self.last_error = _describe(err)
                log.warning("mcp_upstream_failed", server=self.id, error=self.last_error)
            self._client = None
            self._on_tools(self.id, None)
            self.tool_count = 0
            if self._stopping:
                break
            self._set_state("unavailable" if missing else "restarting")
            if time.monotonic() - began > self._health_interval_s:
                delay = self._backoff_s  # it ran for a while: start the backoff over
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop_requested.wait(), delay)
            delay = min(delay * 2, self._backoff_max_s)
            self.restarts += 1

    async def _connect_and_serve(self) -> None:
        async with AsyncExitStack() as stack:
            target = build_target(self.spec, self._read_env, stack, self._workspace_roots)
            client = Client(target, cache=None, read_timeout_seconds=None, message_handler=self._on_message)
            async with asyncio.timeout(self._connect_timeout_s):
                await stack.enter_async_context(client)
                tools = await self._list_tools(client)
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                listener = asyncio.get_running_loop().create_task(self._listen(client))
                stack.callback(listener.cancel)
            self.protocol_version = client.protocol_version
            self.server_info = client.server_info
            self._client = client
            self._dead.clear()
            self.tool_count = len(tools)
            self._on_tools(self.id, tools)
            self._set_state("ready")
            while not self._stopping:
                dead = asyncio.ensure_future(self._dead.wait())
                relist = asyncio.ensure_future(self._relist.wait())
                await asyncio.wait(
                    {dead, relist}, timeout=self._health_interval_s, return_when="FIRST_COMPLETED"
                )
                dead.cancel()
                relist.cancel()
                if self._dead.is_set():
                    if not self._stopping:
                        raise UpstreamCallFailed(self.id, self.last_error or "connection lost")
                    break
                self._relist.clear()
                async with asyncio.timeout(self._connect_timeout_s):
                    fresh = await self._list_tools(client)
                if [t.model_dump() for t in fresh] != [t.model_dump() for t in tools]:
                    tools = fresh
                    self.tool_count = len(tools)
                    self._on_tools(self.id, tools)
            self._client = None

    async def _on_message(self, message: Any) -> None:
        """Change notifications of a handshake-era upstream (2026-07-28 ones come through
        :meth:`_listen`): a tool list change re-reads the tools; a resource or prompt list
        change is passed on to the registry."""
        self._changed(message)

    def _changed(self, event: Any) -> None:
        kind = None
        if isinstance(event, (ToolListChangedNotification, ToolsListChanged)):
            self._relist.set()
        elif isinstance(event, (ResourceListChangedNotification, ResourcesListChanged)):
            kind = "resources"
        elif isinstance(event, (PromptListChangedNotification, PromptsListChanged)):
            kind = "prompts"
        if kind is not None and self._on_lists_changed is not None:
            self._on_lists_changed(self.id, kind)

    async def _listen(self, client: Client) -> None:
        """Follow a 2026-07-28 upstream's ``subscriptions/listen`` stream (when it serves one)."""
        try:
            async with client.listen(
                tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
            ) as sub:
                async for event in sub:
                    self._changed(event)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # no listen support, or the stream dropped: polling still runs
            log.info("mcp_upstream_listen_ended", server=self.id, error=_describe(err))

    @staticmethod
    async def _list_tools(client: Client) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    # ------------------------------------------------------------------ calls

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout_s: float | None = None,
        progress_callback: Any = None,
    ) -> CallToolResult:
        """Call ``name`` (the original tool name) with ``arguments``.

        Raises :class:`UpstreamUnavailable` when the upstream is not ready,
        :class:`UpstreamCallFailed` on timeout (``timeout_s``, default the server's
        ``call_timeout_s``; the upstream stays up and is told the call was cancelled) or when
        the connection died mid-call (the supervisor restarts it). An ``MCPError`` the upstream
        answered with (bad arguments, unknown tool) propagates unchanged.
        """
        client = self._client
        if client is None or self.state != "ready":
            raise UpstreamUnavailable(self.id, self.state, self.last_error)
        limit = timeout_s if timeout_s is not None else self.spec.call_timeout_s
        try:
            async with asyncio.timeout(limit):
                return await client.call_tool(name, arguments, progress_callback=progress_callback)
        except TimeoutError:
            raise UpstreamCallFailed(self.id, f"tool {name!r} did not answer within {limit:g} s") from None
        except MCPError as err:
            if err.code != CONNECTION_CLOSED:
                raise
            self._connection_lost(f"connection closed during tools/call {name!r}")
            raise UpstreamCallFailed(self.id, f"the server's connection closed during tool {name!r}") from err
        except (asyncio.CancelledError, RuntimeError):
            raise
        except Exception as err:  # transport failure (HTTP connection dropped, broken pipe)
            self._connection_lost(_describe(err))
            raise UpstreamCallFailed(self.id, f"tool {name!r} failed in transport: {_describe(err)}") from err

    def capabilities(self) -> ServerCapabilities | None:
        """The connected upstream's capabilities, or None while it is not ready."""
        client = self._client
        if client is None or self.state != "ready":
            return None
        return client.server_capabilities

    async def request(
        self, what: str, call: Callable[[Client], Awaitable[T]], timeout_s: float | None = None
    ) -> T:
        """Run ``call(client)`` (a resources/prompts request; ``what`` names it in errors) with
        the server's call timeout. Raises like :meth:`call_tool`."""
        client = self._client
        if client is None or self.state != "ready":
            raise UpstreamUnavailable(self.id, self.state, self.last_error)
        limit = timeout_s if timeout_s is not None else self.spec.call_timeout_s
        try:
            async with asyncio.timeout(limit):
                return await call(client)
        except TimeoutError:
            raise UpstreamCallFailed(self.id, f"{what} did not answer within {limit:g} s") from None
        except MCPError as err:
            if err.code != CONNECTION_CLOSED:
                raise
            self._connection_lost(f"connection closed during {what}")
            raise UpstreamCallFailed(self.id, f"the server's connection closed during {what}") from err

    def _connection_lost(self, why: str) -> None:
        self.last_error = why
        self._client = None
        self._set_state("restarting", why)
        self._dead.set()

    def status(self) -> dict[str, Any]:
        """``{id, transport, enabled, state, tools, restarts, last_error, since, protocol_version,
        server_name}`` for ``GET /health`` and ``turnstile mcp status``."""
        return {
            "id": self.id,
            "transport": self.spec.transport.type,
            "enabled": self.spec.enabled,
            "state": self.state,
            "tools": self.tool_count,
            "restarts": self.restarts,
            "last_error": self.last_error,
            "since": round(self.since, 3),
            "protocol_version": self.protocol_version,
            "server_name": self.server_info.name if self.server_info else None,
        }


def _describe(err: BaseException) -> str:
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in err.exceptions)
    text = str(err) or type(err).__name__
    return f"{type(err).__name__}: {text}"[:500]
