"""Supervision of one upstream MCP server: one ``mcp`` SDK ``Client``, kept alive.

Each :class:`Upstream` runs a supervisor task that owns the ``Client`` (entered and left in that
one task, as anyio requires):

* connect (``mode="auto"``: ``server/discover`` for 2026-07-28 servers, the ``initialize``
  handshake for older ones), read every page of ``tools/list``, hand the tools to the registry;
* every ``health_interval_s`` re-read the tool list (a health check that also notices a changed
  list; ``ping`` is gone from protocol 2026-07-28);
* when the connection dies (a stdio child exits: ``MCPError(CONNECTION_CLOSED)`` at once; an HTTP
  client that lost its connection stays dead for good in mcp 2.3), the stdio transport judges it
  broken (:mod:`mcp_servers.stdio_transport`: junk on stdout, a refused oversize message it
  cannot attribute) or a health check fails, leave the ``Client`` (the stdio server and every
  descendant of it are ended) and build a new one after a backoff that doubles up to
  ``backoff_max_s``;
* when a call times out the connection may be wedged (a server that stopped reading, a stuck
  transport): the upstream turns ``degraded`` and its tool list is read within
  ``probe_timeout_s``; an answer makes it ``ready`` again, none restarts it. A call arriving
  while it is ``degraded`` waits for that verdict (at most ``probe_timeout_s``), so it either
  runs on a live connection or fails fast naming the server.

While an upstream is not ``ready`` its tools are withdrawn from the registry and a call fails at
once with :class:`UpstreamUnavailable` naming the server; other upstreams are untouched.
A call has its own timeout; cancelling it (timeout, or the caller went away) makes the SDK send
``notifications/cancelled`` upstream.

The upstream's log messages, sampling and elicitation requests made while serving a call go
back to that call's caller (:mod:`mcp_servers.relay`); its ``resources/updated`` notifications
for resources the gateway watches go to the registry (``on_resource_updated``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, Literal, TypeVar, cast

import structlog
from mcp import Client, StdioServerParameters
from mcp.client.auth import OAuthFlowError
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.types import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitRequest,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    Implementation,
    InputRequest,
    InputRequiredResult,
    InputResponse,
    InputResponses,
    LoggingMessageNotificationParams,
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    ServerCapabilities,
    Tool,
    ToolListChangedNotification,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_servers.config import HttpTransport, McpServerSpec, StdioTransport
from mcp_servers.relay import CURRENT, Channel, stamp_caller_capabilities, upstream_meta
from mcp_servers.stdio_stderr import StderrLimits
from mcp_servers.stdio_transport import WireStats, stdio_transport, wire_fault
from mcp_servers.targets import CommandNotFound, EnvReader, build_target
from mcp_servers.upstream_oauth import (
    AuthorizationPrompt,
    Delegation,
    OAuthKeyMissing,
    TokenVault,
    build_auth,
)

log = structlog.get_logger("turnstile.mcp.upstream")

State = Literal["starting", "ready", "degraded", "restarting", "unavailable", "stopped", "disabled"]
"""``unavailable``: the server cannot be launched here (its command is missing); it is retried
with the largest backoff, in case the command is installed later. ``degraded``: a call timed
out and a liveness probe is deciding between ``ready`` and ``restarting``."""
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


ToolsCallback = Callable[[str, list[Tool] | None], None]
ListsCallback = Callable[[str, str], None]
"""``(server id, kind)`` with kind ``resources`` or ``prompts``: that upstream's list changed."""
UpdatedCallback = Callable[[str, str], None]
"""``(server id, original resource URI)``: that upstream said the resource changed."""
T = TypeVar("T")


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
        probe_timeout_s: float = 5.0,
        workspace_roots: list[str] | None = None,
        on_lists_changed: ListsCallback | None = None,
        on_resource_updated: UpdatedCallback | None = None,
        oauth_vault: TokenVault | None = None,
    ) -> None:
        self.spec = spec
        self._oauth_vault = oauth_vault
        oauth = spec.transport.oauth if isinstance(spec.transport, HttpTransport) else None
        self.prompt = (
            AuthorizationPrompt(spec.id, self._authorizing)
            if oauth is not None and oauth.grant == "authorization_code"
            else None
        )
        """The authorization-code grant's wait for a person (None for other servers)."""
        self._connect_deadline: asyncio.Timeout | None = None
        self._oauth_provider: Any = None
        self.delegation = (
            Delegation(spec.id, oauth, read_env)
            if oauth is not None and oauth.token_exchange is not None
            else None
        )
        """Per-user delegation (RFC 8693) when ``oauth.token_exchange`` is set."""
        self._on_lists_changed = on_lists_changed
        self._on_resource_updated = on_resource_updated
        self._inflight: dict[int, Channel | None] = {}
        self._call_seq = 0
        self._watched: set[str] = set()
        self._listener: asyncio.Task[None] | None = None
        self._workspace_roots = list(workspace_roots or [])
        self.id = spec.id
        self._read_env = read_env
        self._on_tools = on_tools
        self._backoff_s = backoff_s
        self._backoff_max_s = backoff_max_s
        self._health_interval_s = health_interval_s
        self._connect_timeout_s = spec.connect_timeout_s or connect_timeout_s
        self._probe_timeout_s = probe_timeout_s
        self.state: State = "disabled" if not spec.enabled else "starting"
        self.reason: str | None = None
        """Why the upstream is in its state (None when ``ready``)."""
        self.last_error: str | None = None
        self.last_ok: float | None = None
        """When the upstream last answered anything (epoch seconds)."""
        self.consecutive_failures = 0
        """Calls and probes that failed (timeout, transport, refused message) since the last answer."""
        self.wire = WireStats()
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
        self._probe = asyncio.Event()
        self._state_changed = asyncio.Event()
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
            self._state_changed.set()
            self._state_changed = asyncio.Event()
        self.state = state
        if error is not None:
            self.last_error = error
        healthy = state in ("ready", "stopped", "disabled")
        self.reason = None if healthy else (error or self.last_error)
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
        if not self._stopping:
            self._dead.clear()  # before connecting: the transport may judge this connection lost at once
        async with AsyncExitStack() as stack:
            target = build_target(self.spec, self._read_env, stack, self._workspace_roots, self._auth())
            if isinstance(target, StdioServerParameters) and sys.platform != "win32":
                target = stdio_transport(
                    target,
                    server_id=self.id,
                    max_message_bytes=self.spec.max_message_bytes,
                    max_junk_lines=self.spec.max_junk_lines,
                    stats=self.wire,
                    on_lost=self._connection_lost,
                    stderr_limits=StderrLimits.of(self.spec),
                )
            client = Client(
                target,
                mode=self.spec.protocol,
                cache=None,
                read_timeout_seconds=None,
                message_handler=self._on_message,
                logging_callback=self._on_log,
                elicitation_callback=self._on_elicit,
                sampling_callback=self._on_sample,
            )
            async with asyncio.timeout(self._connect_timeout_s) as deadline:
                self._connect_deadline = deadline  # suspended while a person authorizes (OAuth)
                await stack.enter_async_context(client)
                tools = await self._list_tools(client)
            self._connect_deadline = None
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                stamp_caller_capabilities(client.session)  # the upstream sees the caller's capabilities
                self._restart_listener(client)
                stack.callback(self._stop_listener)
            else:
                for uri in sorted(self._watched):
                    await self._subscribe_legacy(client, uri, True)
            self.protocol_version = client.protocol_version
            self.server_info = client.server_info
            if self._dead.is_set() and not self._stopping:
                raise UpstreamCallFailed(self.id, self.last_error or "connection lost")
            self._client = client
            self.tool_count = len(tools)
            self._on_tools(self.id, tools)
            self._answered()
            self._set_state("ready")
            while not self._stopping:
                waits = [asyncio.ensure_future(e.wait()) for e in (self._dead, self._relist, self._probe)]
                await asyncio.wait(waits, timeout=self._health_interval_s, return_when="FIRST_COMPLETED")
                for w in waits:
                    w.cancel()
                if self._dead.is_set():
                    if not self._stopping:
                        raise UpstreamCallFailed(self.id, self.last_error or "connection lost")
                    break
                fresh = await self._check(client)
                if [t.model_dump() for t in fresh] != [t.model_dump() for t in tools]:
                    tools = fresh
                    self.tool_count = len(tools)
                    self._on_tools(self.id, tools)
            self._client = None

    def _auth(self) -> Any:
        """The OAuth of an HTTP upstream with ``transport.oauth`` (None otherwise). Raises
        :class:`mcp_servers.upstream_oauth.OAuthKeyMissing` without the encryption key."""
        t = self.spec.transport
        if not isinstance(t, HttpTransport) or t.oauth is None:
            return None
        if self._oauth_vault is None:
            raise OAuthKeyMissing(self.id, "mcp.token_key_env")
        self._oauth_provider = build_auth(
            self.id, t.url, t.oauth, self._read_env, self._oauth_vault, self.prompt
        )
        return self._oauth_provider

    def _authorizing(self, waiting: bool) -> None:
        """The authorization-code grant started (``waiting``) or ended waiting for a person:
        the start-up timeout is suspended meanwhile, and the reason names the URL to open."""
        deadline = self._connect_deadline
        if waiting:
            if deadline is not None:
                deadline.reschedule(None)
            self.reason = "waiting for OAuth authorization: an admin opens oauth.authorization_url"
        elif deadline is not None:
            deadline.reschedule(asyncio.get_running_loop().time() + self._connect_timeout_s)

    async def _check(self, client: Client) -> list[Tool]:
        """Re-read the tool list: a health check (``connect_timeout_s``), or after a call timed
        out a liveness probe (``probe_timeout_s``). Raises :class:`UpstreamCallFailed` when it
        gets no answer in time; an answer makes a ``degraded`` upstream ``ready`` again."""
        probing = self._probe.is_set() or self.state == "degraded"
        self._relist.clear()
        self._probe.clear()
        limit = self._probe_timeout_s if probing else self._connect_timeout_s
        try:
            async with asyncio.timeout(limit):
                tools = await self._list_tools(client)
        except TimeoutError:
            self.consecutive_failures += 1
            after = f" after {self.reason}" if probing and self.reason else ""
            why = f"tools/list did not answer within {limit:g} s{after}: the connection is wedged"
            self._connection_lost(why)  # restarting from now, not once the old server is stopped
            raise UpstreamCallFailed(self.id, why) from None
        self._answered()
        return tools

    def _answered(self) -> None:
        """The upstream answered (a result or an error of its own): it is alive."""
        self.last_ok = time.time()
        self.consecutive_failures = 0
        if self.state == "degraded":
            self._set_state("ready")

    def _suspect(self, why: str) -> None:
        """A call got no answer: mark the upstream ``degraded`` and have it probed."""
        self.consecutive_failures += 1
        if self.state == "ready":
            self._set_state("degraded", why)
        self._probe.set()

    async def _connected(self) -> Client:
        """The client to send a request on. While ``degraded``, wait for the probe's verdict
        (bounded); raises :class:`UpstreamUnavailable` unless the upstream is ``ready``."""
        if self.state == "degraded":
            changed = self._state_changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), self._probe_timeout_s + 1.0)
        client = self._client
        if client is None or self.state != "ready":
            raise UpstreamUnavailable(self.id, self.state, self.reason or self.last_error)
        return client

    async def _on_message(self, message: Any) -> None:
        """Change notifications of a handshake-era upstream (2026-07-28 ones come through
        :meth:`_listen`): a tool list change re-reads the tools; a resource or prompt list
        change is passed on to the registry. An exception from the transport (the child
        exited, the stream broke) marks the connection dead at once, so the supervisor restarts
        it without waiting for the next health check."""
        if isinstance(message, Exception):
            self.last_error = _describe(message)
            self._dead.set()
            return
        if (
            isinstance(message, ResourceUpdatedNotification)
            and self.protocol_version in MODERN_PROTOCOL_VERSIONS
        ):
            return  # the listen stream's events are teed here too: :meth:`_listen` passes them on
        self._changed(message)

    def _changed(self, event: Any) -> None:
        kind = None
        if isinstance(event, (ResourceUpdatedNotification, ResourceUpdated)):
            uri = str(event.params.uri if isinstance(event, ResourceUpdatedNotification) else event.uri)
            if self._on_resource_updated is not None:
                self._on_resource_updated(self.id, uri)
        elif isinstance(event, (ToolListChangedNotification, ToolsListChanged)):
            self._relist.set()
        elif isinstance(event, (ResourceListChangedNotification, ResourcesListChanged)):
            kind = "resources"
        elif isinstance(event, (PromptListChangedNotification, PromptsListChanged)):
            kind = "prompts"
        if kind is not None and self._on_lists_changed is not None:
            self._on_lists_changed(self.id, kind)

    def _restart_listener(self, client: Client) -> asyncio.Event:
        self._stop_listener()
        acked = asyncio.Event()
        self._listener = asyncio.get_running_loop().create_task(
            self._listen(client, sorted(self._watched), acked)
        )
        return acked

    def _stop_listener(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            self._listener = None

    async def watch_resource(self, uri: str, on: bool) -> None:
        """Start (``on``) or stop following changes of the upstream resource ``uri``: a
        ``resources/subscribe`` to a handshake-era upstream that offers subscriptions, a new
        ``subscriptions/listen`` filter for a 2026-07-28 one. Kept across reconnects."""
        if on == (uri in self._watched):
            return
        (self._watched.add if on else self._watched.discard)(uri)
        client = self._client
        if client is None or self.state != "ready":
            return
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            acked = self._restart_listener(client)
            with contextlib.suppress(TimeoutError):  # a server without listen never acks
                await asyncio.wait_for(acked.wait(), self._connect_timeout_s)
        else:
            await self._subscribe_legacy(client, uri, on)

    async def _subscribe_legacy(self, client: Client, uri: str, on: bool) -> None:
        caps = client.server_capabilities
        if caps is None or caps.resources is None or not caps.resources.subscribe:
            return  # no subscriptions offered: unsolicited resources/updated are still relayed
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                async with asyncio.timeout(self._connect_timeout_s):
                    if on:
                        await client.subscribe_resource(uri)
                    else:
                        await client.unsubscribe_resource(uri)
        except (MCPError, TimeoutError) as err:
            log.info("mcp_upstream_subscribe_failed", server=self.id, uri=uri, error=_describe(err))

    async def _listen(
        self, client: Client, resources: list[str] | None = None, acked: asyncio.Event | None = None
    ) -> None:
        """Follow a 2026-07-28 upstream's ``subscriptions/listen`` stream (when it serves one)."""
        try:
            async with client.listen(
                tools_list_changed=True,
                prompts_list_changed=True,
                resources_list_changed=True,
                resource_subscriptions=resources or (),
            ) as sub:
                if acked is not None:
                    acked.set()
                async for event in sub:
                    self._changed(event)
        except asyncio.CancelledError:
            raise
        except MCPError as err:
            if err.code == METHOD_NOT_FOUND:  # a server without subscriptions: polling covers it
                log.debug("mcp_upstream_listen_unsupported", server=self.id)
            else:
                log.info("mcp_upstream_listen_ended", server=self.id, error=_describe(err))
        except Exception as err:  # the stream dropped: polling still runs
            log.info("mcp_upstream_listen_ended", server=self.id, error=_describe(err))
        finally:
            if acked is not None:
                acked.set()  # never keep a watch_resource waiting on a stream that failed

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

    # ------------------------------------------------------------------ relay (mcp_servers.relay)

    def _attributed(self, wants_logs: bool) -> Channel | None:
        """The one in-flight call an unattributed upstream message belongs to, or None."""
        calls = list(self._inflight.values())
        if wants_logs and self.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # 2026-07-28: only calls that opted in to logging can cause a log message
            calls = [c for c in calls if c is not None and c.log_level is not None]
        return calls[0] if len(calls) == 1 else None

    async def _on_log(self, params: LoggingMessageNotificationParams) -> None:
        channel = CURRENT.get() or self._attributed(True)
        if channel is None:
            log.debug("mcp_upstream_log_dropped", server=self.id, calls=len(self._inflight))
            return
        await channel.log(params)

    async def _relay(self, request: InputRequest) -> InputResponse | ErrorData:
        channel = CURRENT.get() or self._attributed(False)
        if channel is None:
            return ErrorData(
                code=INVALID_REQUEST,
                message=f"the gateway cannot tell which of {len(self._inflight)} calls in flight to MCP "
                f"server {self.id!r} this {request.method} request belongs to",
            )
        return await channel.ask(request)

    async def _on_elicit(self, context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        return cast(ElicitResult | ErrorData, await self._relay(ElicitRequest(params=params)))

    async def _on_sample(
        self, context: Any, params: CreateMessageRequestParams
    ) -> CreateMessageResult | CreateMessageResultWithTools | ErrorData:
        answer = await self._relay(CreateMessageRequest(params=params))
        return cast(CreateMessageResult | CreateMessageResultWithTools | ErrorData, answer)

    # ------------------------------------------------------------------ calls

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        timeout_s: float | None = None,
        progress_callback: Any = None,
        channel: Channel | None = None,
        pass_input_required: bool = False,
        input_responses: InputResponses | None = None,
        request_state: str | None = None,
        subject_token: str | None = None,
    ) -> CallToolResult | InputRequiredResult:
        """Call ``name`` (the original tool name) with ``arguments``.

        ``subject_token``: the caller's access token (a JWT it presented to ``/mcp``); with
        ``oauth.token_exchange`` the call is made for that user with a token exchanged for it
        (:meth:`call_delegated`), never with ``subject_token`` itself.

        ``channel`` is the way back to the caller (:mod:`mcp_servers.relay`): the upstream's
        log messages, sampling and elicitation requests during the call go there, and a
        2026-07-28 upstream's ``InputRequiredResult`` rounds are run here through it. With
        ``pass_input_required`` (a 2026-07-28 caller) one round is made and an
        ``InputRequiredResult`` is returned as it is; ``input_responses``/``request_state``
        are the caller's answers to the previous one.

        Raises :class:`UpstreamUnavailable` when the upstream is not ready,
        :class:`UpstreamCallFailed` on timeout (``timeout_s``, default the server's
        ``call_timeout_s``; the upstream stays up and is told the call was cancelled) or when
        the connection died mid-call (the supervisor restarts it). An ``MCPError`` the upstream
        answered with (bad arguments, unknown tool, a refused input request) propagates unchanged.
        """
        if self.delegation is not None:
            exchange = self.delegation.oauth.token_exchange
            if subject_token is not None or (exchange is not None and exchange.required):
                return await self.call_delegated(name, arguments, subject_token, timeout_s)
        client = await self._connected()
        limit = timeout_s if timeout_s is not None else self.spec.call_timeout_s
        self._call_seq += 1
        key = self._call_seq
        self._inflight[key] = channel
        token = CURRENT.set(channel)
        meta = cast(Any, upstream_meta(channel))
        try:
            async with asyncio.timeout(limit):
                if pass_input_required:
                    answer: CallToolResult | InputRequiredResult = await client.session.call_tool(
                        name,
                        arguments,
                        progress_callback=progress_callback,
                        input_responses=input_responses,
                        request_state=request_state,
                        meta=meta,
                        allow_input_required=True,
                    )
                else:
                    answer = await client.call_tool(
                        name, arguments, progress_callback=progress_callback, meta=meta
                    )
        except TimeoutError:
            self._suspect(f"tool {name!r} did not answer within {limit:g} s")
            raise UpstreamCallFailed(self.id, f"tool {name!r} did not answer within {limit:g} s") from None
        except MCPError as err:
            raise self._call_error(f"tool {name!r}", f"tools/call {name!r}", err) from err
        except (asyncio.CancelledError, RuntimeError):
            raise
        except Exception as err:  # transport failure (HTTP connection dropped, broken pipe)
            self.consecutive_failures += 1
            self._connection_lost(_describe(err))
            raise UpstreamCallFailed(self.id, f"tool {name!r} failed in transport: {_describe(err)}") from err
        else:
            self._answered()
            return answer
        finally:
            CURRENT.reset(token)
            del self._inflight[key]

    async def call_delegated(
        self, name: str, arguments: dict[str, Any] | None, subject_token: str | None, timeout_s: float | None
    ) -> CallToolResult:
        """One call for one user (RFC 8693 delegation): the caller's token exchanged at the
        upstream's authorization server, the call made on a connection of its own carrying the
        exchanged token. No relay of upstream questions on this path. Raises
        :class:`UpstreamCallFailed` (no caller token where ``token_exchange.required``, the
        exchange refused, timeout, transport) and ``MCPError`` as :meth:`call_tool`."""
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert self.delegation is not None and isinstance(self.spec.transport, HttpTransport)
        if subject_token is None:
            raise UpstreamCallFailed(
                self.id, "it acts for the calling user and the caller presented no user token"
            )
        await self._connected()  # the gateway's own sign-in discovered the authorization server
        limit = timeout_s if timeout_s is not None else self.spec.call_timeout_s
        try:
            async with asyncio.timeout(limit):
                token = await self.delegation.token_for(subject_token, self._oauth_provider)
                http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
                async with (
                    http,
                    Client(
                        streamable_http_client(self.spec.transport.url, http_client=http),
                        mode=self.spec.protocol,
                        cache=None,
                    ) as client,
                ):
                    return await client.call_tool(name, arguments)
        except TimeoutError:
            raise UpstreamCallFailed(self.id, f"tool {name!r} did not answer within {limit:g} s") from None
        except MCPError as err:
            raise self._call_error(f"tool {name!r}", f"tools/call {name!r}", err) from err
        except OAuthFlowError as err:
            raise UpstreamCallFailed(
                self.id, f"the token exchange for the calling user failed: {err}"
            ) from err
        except Exception as err:
            raise UpstreamCallFailed(
                self.id, f"tool {name!r} for the calling user failed: {_describe(err)}"
            ) from err

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
        client = await self._connected()
        limit = timeout_s if timeout_s is not None else self.spec.call_timeout_s
        try:
            async with asyncio.timeout(limit):
                answer = await call(client)
        except TimeoutError:
            self._suspect(f"{what} did not answer within {limit:g} s")
            raise UpstreamCallFailed(self.id, f"{what} did not answer within {limit:g} s") from None
        except MCPError as err:
            raise self._call_error(what, what, err) from err
        self._answered()
        return answer

    def _call_error(self, what: str, method: str, err: MCPError) -> Exception:
        """What a request that ended with ``err`` raises: the error itself when the upstream
        answered with it; :class:`UpstreamCallFailed` when the transport refused the answer
        (:func:`mcp_servers.stdio_transport.wire_fault`) or the connection closed (then the
        supervisor restarts it)."""
        if wire_fault(err) is not None:
            self.consecutive_failures += 1
            return UpstreamCallFailed(self.id, f"{what} {err.message}")
        if err.code != CONNECTION_CLOSED:
            self._answered()
            return err
        self.consecutive_failures += 1
        known = self._dead.is_set() and self.reason
        self._connection_lost(f"connection closed during {method}")
        why = f": {self.reason}" if known else ""
        return UpstreamCallFailed(self.id, f"the server's connection closed during {what}{why}")

    def _connection_lost(self, why: str) -> None:
        """The connection is gone or judged broken: restart it (an earlier reason is kept)."""
        if self._dead.is_set() and self.state == "restarting":
            return
        self.last_error = why
        self._client = None
        self._set_state("restarting", why)
        self._dead.set()

    def status(self) -> dict[str, Any]:
        """``{id, transport, enabled, state, reason, tools, restarts, last_error, since, last_ok,
        consecutive_failures, protocol_version, server_name}`` (times in epoch seconds) and, for
        stdio, ``wire: {junk_lines, oversize_messages, last_fault}``, for ``GET /health`` and
        ``turnstile mcp status``. ``reason`` says why the state is not ``ready``."""
        out: dict[str, Any] = {
            "id": self.id,
            "transport": self.spec.transport.type,
            "enabled": self.spec.enabled,
            "state": self.state,
            "reason": self.reason,
            "tools": self.tool_count,
            "restarts": self.restarts,
            "last_error": self.last_error,
            "since": round(self.since, 3),
            "last_ok": round(self.last_ok, 3) if self.last_ok is not None else None,
            "consecutive_failures": self.consecutive_failures,
            "protocol_version": self.protocol_version,
            "server_name": self.server_info.name if self.server_info else None,
        }
        if isinstance(self.spec.transport, StdioTransport):
            out["wire"] = dataclasses.asdict(self.wire)
        elif self.spec.transport.oauth is not None:
            # the authorization URL itself only on the admin API (mcp_servers.http_api): its
            # state would let anyone who saw it bind the server to their own account
            out["oauth"] = {
                "grant": self.spec.transport.oauth.grant,
                "waiting_for_authorization": self.prompt is not None and self.prompt.url is not None,
            }
        return out


def _describe(err: BaseException) -> str:
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in err.exceptions)
    text = str(err) or type(err).__name__
    return f"{type(err).__name__}: {text}"[:500]
