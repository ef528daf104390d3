"""Resources and prompts of every registered server behind ``/mcp``, paginated with composite
cursors, and list-changed propagation to the gateway's clients.

Naming (``mcp.namespaced`` on, the default):

* a resource URI ``U`` of server ``S`` is exposed as ``turnstile://S/U`` (templates likewise:
  ``turnstile://S/file:///{path}``), so a URI a client expands from a template maps back too;
  :func:`split_uri` undoes it;
* a prompt ``P`` of server ``S`` is exposed as ``S__P`` under the same rule as tools
  (:func:`mcp_servers.naming.exposed_name`: ``^[a-zA-Z0-9_-]{1,64}$``, hashed suffix when
  changed) and looked up by that name only.

With namespacing off, URIs and prompt names pass unchanged; a read or get is routed to the
server that listed it, else tried on each server offering resources/prompts in id order.

Lists are not cached: each page is read from the upstreams in server-id order. The cursor the
gateway hands out is composite, ``base64url({"k": kind, "s": server, "c": upstream cursor})``:
where to resume, which server and that server's own cursor. A server that is down or fails is
skipped (its items are simply absent). A page holds at least ``page_size`` items unless the
end is reached (upstream pages are never split).

Resource contents and prompt messages enter a model's context: results carry
``_meta["io.turnstile/origin"] = {"server", "untrusted": true}`` and the gateway's serverInfo.

Each caller sees only what its client may see (:mod:`mcp_servers.clients`): prompts by its
globs, resources and templates of the servers it may see; everything else is answered as if it
did not exist (absent from lists, the "unknown" error on a read or get, an empty completion, a
subscription that never fires).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import structlog
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
)
from mcp.types import (
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SERVER_INFO_META_KEY,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    Prompt,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_servers.clients import Visibility, from_request
from mcp_servers.naming import SEPARATOR, exposed_name
from mcp_servers.registry import McpRegistry
from mcp_servers.relay import caller_capabilities, missing_capabilities
from mcp_servers.request_state import binding
from mcp_servers.scoped_bus import ScopedBus
from mcp_servers.upstream import Upstream, UpstreamCallFailed, UpstreamUnavailable

log = structlog.get_logger("turnstile.mcp.aggregate")

URI_PREFIX = "turnstile://"
ORIGIN_META_KEY = "io.turnstile/origin"
DEFAULT_PAGE_SIZE = 100
_MAX_UPSTREAM_PAGES = 100


def namespace_uri(server: str, uri: str) -> str:
    """``turnstile://<server>/<uri>``: the exposed form of an upstream resource URI or template."""
    return f"{URI_PREFIX}{server}/{uri}"


def split_uri(exposed: str) -> tuple[str, str] | None:
    """(server, original URI) of an exposed URI, or None when it is not one."""
    if not exposed.startswith(URI_PREFIX):
        return None
    server, sep, uri = exposed[len(URI_PREFIX) :].partition("/")
    return (server, uri) if sep and server and uri else None


def encode_cursor(
    kind: str, server: str | None, upstream: str | None = None, after: list[str] | None = None
) -> str:
    """An opaque composite cursor (see the module docstring)."""
    body = {"k": kind, "s": server, "c": upstream, "a": after}
    return base64.urlsafe_b64encode(orjson.dumps(body)).decode().rstrip("=")


def decode_cursor(kind: str, cursor: str | None) -> dict[str, Any]:
    """The fields of a cursor from :func:`encode_cursor` (``{}`` for None). Raises ``MCPError``
    ``-32602`` for a cursor this gateway did not make for ``kind``."""
    if not cursor:
        return {}
    try:
        body = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error, orjson.JSONDecodeError):
        body = None
    if not isinstance(body, dict) or body.get("k") != kind:
        raise MCPError(INVALID_PARAMS, f"invalid cursor for {kind}/list")
    return body


def _origin(server: str) -> dict[str, Any]:
    return {ORIGIN_META_KEY: {"server": server, "untrusted": True}}


class Aggregator:
    """The resources/prompts handlers and the change notifier of one gateway endpoint."""

    def __init__(
        self, registry: McpRegistry, *, name: str, version: str, page_size: int = DEFAULT_PAGE_SIZE
    ) -> None:
        self.registry = registry
        self.namespaced = registry.config.namespaced
        self.page_size = page_size
        self.states: Any = None
        """The endpoint's :class:`mcp_servers.request_state.SealedStates` (``prompts/get`` rounds)."""
        self._server_info = {"name": name, "version": version}
        self._prompt_names: dict[str, tuple[str, str]] = {}  # exposed -> (server, prompt)
        self._uri_owner: dict[str, str] = {}  # non-namespaced: uri -> server that listed it
        # exposed URI -> legacy connections subscribed to it, each with its caller's visibility
        self._subscribers: dict[str, weakref.WeakKeyDictionary[Any, Visibility]] = {}
        self.bus = ScopedBus(self.sees_server)
        self._legacy_sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        self._pending: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        registry.on_list_change(self._list_changed)
        registry.on_resource_updated(self._resource_updated)

    # ------------------------------------------------------------------ change propagation

    def track(self, ctx: ServerRequestContext[Any]) -> None:
        """Remember a handshake-era client's session so list changes reach it."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # the per-request session is short-lived; its connection (which owns the
            # standalone SSE stream) lives as long as the client's session
            connection = getattr(ctx.session, "_connection", None)
            if connection is not None:
                self._legacy_sessions.add(connection)

    def _list_changed(self, kind: str) -> None:
        if kind in self._pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._pending.add(kind)
        task = loop.create_task(self._broadcast(kind))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _broadcast(self, kind: str) -> None:
        """Tell every client: ``subscriptions/listen`` streams (2026-07-28) through the bus, and
        handshake-era sessions by ``notifications/<kind>/list_changed``."""
        await asyncio.sleep(0)  # coalesce the burst of one registry change
        self._pending.discard(kind)
        event: ServerEvent = (
            ToolsListChanged()
            if kind == "tools"
            else ResourcesListChanged()
            if kind == "resources"
            else PromptsListChanged()
        )
        await self.bus.publish(event)
        for session in list(self._legacy_sessions):
            send = {
                "tools": session.send_tool_list_changed,
                "resources": session.send_resource_list_changed,
                "prompts": session.send_prompt_list_changed,
            }[kind]
            try:
                await send()
            except Exception as err:  # a closed session: forget it
                log.debug("mcp_notify_failed", kind=kind, error=str(err))
                self._legacy_sessions.discard(session)

    # ------------------------------------------------------------------ visibility

    def visibility(self, ctx: ServerRequestContext[Any]) -> Visibility:
        """The caller's visibility (stored on the request by the ``/mcp`` app)."""
        return from_request(self.registry.config, ctx.request)

    def sees_server(self, visible: Visibility, server: str) -> bool:
        """Whether ``visible`` may see ``server``'s resources
        (:meth:`mcp_servers.clients.Visibility.sees_server` over its registered tools)."""
        if visible.client is None:
            return True
        tools = [t.exposed for t in self.registry.tools(include_unavailable=True) if t.server == server]
        return visible.sees_server(server, tools)

    # ------------------------------------------------------------------ paging

    def _servers_with(self, capability: str, visible: Visibility | None = None) -> list[tuple[str, Upstream]]:
        """The (id, upstream) of the servers offering ``capability`` (those ``visible`` may
        see, when given), in id order."""
        out = []
        for sid in self.registry.server_ids():
            if visible is not None and not self.sees_server(visible, sid):
                continue
            up = self.registry.upstream(sid)
            caps = up.capabilities() if up is not None else None
            if up is not None and caps is not None and getattr(caps, capability) is not None:
                out.append((sid, up))
        return out

    async def _page(
        self,
        kind: str,
        capability: str,
        cursor: str | None,
        fetch: Callable[[Client, str | None], Awaitable[tuple[list[Any], str | None]]],
        rewrite: Callable[[str, Any], Any],
        keep_server: Callable[[str], bool] = lambda _: True,
        keep_item: Callable[[Any], bool] = lambda _: True,
    ) -> tuple[list[Any], str | None]:
        """One page of ``kind`` over the servers ``keep_server`` allows, of the (rewritten)
        items ``keep_item`` allows."""
        start = decode_cursor(kind, cursor)
        start_server = start.get("s") or ""
        servers = [(sid, up) for sid, up in self._servers_with(capability) if sid >= start_server]
        servers = [(sid, up) for sid, up in servers if keep_server(sid)]
        items: list[Any] = []
        for i, (sid, up) in enumerate(servers):
            upstream_cursor = start.get("c") if sid == start_server else None
            for _ in range(_MAX_UPSTREAM_PAGES):
                try:
                    got, nxt = await up.request(
                        f"{kind}/list",
                        lambda c, cur=upstream_cursor: fetch(c, cur),  # type: ignore[misc]
                    )
                except (UpstreamUnavailable, UpstreamCallFailed, MCPError) as err:
                    log.warning("mcp_list_failed", server=sid, kind=kind, error=str(err))
                    break
                items.extend(kept for item in got if keep_item(kept := rewrite(sid, item)))
                if not nxt:
                    break
                if len(items) >= self.page_size:
                    return items, encode_cursor(kind, sid, nxt)
                upstream_cursor = nxt
            if len(items) >= self.page_size and i + 1 < len(servers):
                return items, encode_cursor(kind, servers[i + 1][0])
        return items, None

    # ------------------------------------------------------------------ resources

    def _resource(self, sid: str, r: Resource) -> Resource:
        if not self.namespaced:
            self._uri_owner.setdefault(r.uri, sid)
            return r
        return r.model_copy(update={"uri": namespace_uri(sid, r.uri)})

    def _template(self, sid: str, t: ResourceTemplate) -> ResourceTemplate:
        if not self.namespaced:
            return t
        return t.model_copy(update={"uri_template": namespace_uri(sid, t.uri_template)})

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        """``resources/list`` over every server the caller may see (composite cursor)."""
        self.track(ctx)
        visible = self.visibility(ctx)

        async def fetch(c: Client, cur: str | None) -> tuple[list[Any], str | None]:
            page = await c.list_resources(cursor=cur)
            return list(page.resources), page.next_cursor

        items, nxt = await self._page(
            "resources",
            "resources",
            params.cursor if params else None,
            fetch,
            self._resource,
            keep_server=lambda sid: self.sees_server(visible, sid),
        )
        return ListResourcesResult(resources=items, next_cursor=nxt)

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        """``resources/templates/list`` over every server the caller may see (composite cursor)."""
        self.track(ctx)
        visible = self.visibility(ctx)

        async def fetch(c: Client, cur: str | None) -> tuple[list[Any], str | None]:
            page = await c.list_resource_templates(cursor=cur)
            return list(page.resource_templates), page.next_cursor

        items, nxt = await self._page(
            "resource_templates",
            "resources",
            params.cursor if params else None,
            fetch,
            self._template,
            keep_server=lambda sid: self.sees_server(visible, sid),
        )
        return ListResourceTemplatesResult(resource_templates=items, next_cursor=nxt)

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        """``resources/read``: mapped back to (server, original URI); the contents' URIs are
        exposed again and the result marked untrusted. Unknown URI, or one of a server the
        caller may not see: ``-32602``."""
        self.track(ctx)
        visible = self.visibility(ctx)
        uri = str(params.uri)
        if self.namespaced:
            pair = split_uri(uri)
            up = self.registry.upstream(pair[0]) if pair else None
            if pair is None or up is None or not self.sees_server(visible, pair[0]):
                raise MCPError(INVALID_PARAMS, f"unknown resource {uri!r}: not exposed by this gateway")
            candidates = [(pair[0], up, pair[1])]
        else:
            owner = self._uri_owner.get(uri)
            servers = self._servers_with("resources", visible)
            servers.sort(key=lambda s: s[0] != owner)
            candidates = [(sid, up, uri) for sid, up in servers]
        last: Exception | None = None
        for sid, up, original in candidates:
            try:
                result = await up.request("resources/read", lambda c, u=original: c.read_resource(u))  # type: ignore[misc]
            except (UpstreamUnavailable, UpstreamCallFailed) as err:
                last = MCPError(INVALID_PARAMS if len(candidates) > 1 else -32603, str(err))
                continue
            except MCPError as err:
                last = err
                continue
            contents = [
                c.model_copy(update={"uri": namespace_uri(sid, c.uri)}) if self.namespaced else c
                for c in result.contents
            ]
            meta = {**(result.meta or {}), SERVER_INFO_META_KEY: self._server_info, **_origin(sid)}
            return ReadResourceResult(contents=contents, _meta=meta)
        if last is None:
            raise MCPError(INVALID_PARAMS, f"unknown resource {uri!r}: no server offers resources")
        raise last

    def _owners(self, uri: str, visible: Visibility) -> list[tuple[Upstream, str]]:
        """The upstream(s) and original URI an exposed resource URI may belong to, among the
        servers ``visible`` may see."""
        if self.namespaced:
            pair = split_uri(uri)
            up = self.registry.upstream(pair[0]) if pair else None
            if pair is None or up is None or not self.sees_server(visible, pair[0]):
                return []
            return [(up, pair[1])]
        owner = self._uri_owner.get(uri)
        if (
            owner is not None
            and (up := self.registry.upstream(owner)) is not None
            and self.sees_server(visible, owner)
        ):
            return [(up, uri)]
        return [(up, uri) for _, up in self._servers_with("resources", visible)]

    async def subscribe(self, ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
        """``resources/subscribe`` (handshake era): the caller's connection is told of every
        ``notifications/resources/updated`` for that URI from then on, of a server it may see;
        the gateway follows the resource upstream
        (:meth:`mcp_servers.upstream.Upstream.watch_resource`)."""
        self.track(ctx)
        visible = self.visibility(ctx)
        uri = str(params.uri)
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None:
            self._subscribers.setdefault(uri, weakref.WeakKeyDictionary())[connection] = visible
        for up, original in self._owners(uri, visible):
            await up.watch_resource(original, True)
        return EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        """``resources/unsubscribe``: the caller's connection is no longer told; the gateway
        stops following the resource when nobody is subscribed."""
        uri = str(params.uri)
        subscribers = self._subscribers.get(uri)
        connection = getattr(ctx.session, "_connection", None)
        if subscribers is not None and connection is not None:
            subscribers.pop(connection, None)
        if not self._subscribers.get(uri):
            self._subscribers.pop(uri, None)
            for up, original in self._owners(uri, self.visibility(ctx)):
                await up.watch_resource(original, False)
        return EmptyResult()

    def _resource_updated(self, server: str, original: str) -> None:
        """Registry callback: pass an upstream's ``resources/updated`` on, under the exposed URI."""
        uri = namespace_uri(server, original) if self.namespaced else original
        try:
            task = asyncio.get_running_loop().create_task(self._send_updated(server, uri))
        except RuntimeError:
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_updated(self, server: str, uri: str) -> None:
        """Tell the subscribers of ``uri`` (a resource of ``server``) that may see ``server``."""
        await self.bus.publish_update(server, uri)  # subscriptions/listen streams filter by URI
        for connection, visible in list(self._subscribers.get(uri, {}).items()):
            if not self.sees_server(visible, server):
                continue
            try:
                await connection.send_resource_updated(uri)
            except Exception as err:  # a closed session: forget it
                log.debug("mcp_notify_failed", kind="resource_updated", error=str(err))
                self._subscribers.get(uri, {}).pop(connection, None)

    async def complete(self, ctx: ServerRequestContext[Any], params: CompleteRequestParams) -> CompleteResult:
        """``completion/complete`` for a prompt (by exposed name) or resource template (by
        exposed URI template), routed to its server with the original name/template. A server
        that offers no completions, and a prompt or template the caller may not see, yield an
        empty list."""
        ref = params.ref
        visible = self.visibility(ctx)
        empty = CompleteResult(completion=Completion(values=[]))
        routed: list[tuple[str, PromptReference | ResourceTemplateReference]]
        if isinstance(ref, PromptReference):
            candidates = self._resolve_prompt(ref.name) if visible.allows(ref.name) else []
            routed = [(sid, PromptReference(type="ref/prompt", name=name)) for sid, name in candidates]
        else:
            uri = ref.uri
            pair = split_uri(uri) if self.namespaced else None
            if self.namespaced and pair is None:
                return empty
            targets = [pair] if pair else [(sid, uri) for sid, _ in self._servers_with("resources")]
            targets = [(sid, u) for sid, u in targets if self.sees_server(visible, sid)]
            routed = [(sid, ResourceTemplateReference(type="ref/resource", uri=u)) for sid, u in targets]
        args = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context is not None else None
        for sid, upstream_ref in routed:
            up = self.registry.upstream(sid)
            caps = up.capabilities() if up is not None else None
            if up is None or caps is None or caps.completions is None:
                continue
            try:
                return await up.request(
                    "completion/complete",
                    lambda c, r=upstream_ref: c.complete(r, args, context),  # type: ignore[misc]
                )
            except (UpstreamUnavailable, UpstreamCallFailed, MCPError) as err:
                log.info("mcp_complete_failed", server=sid, error=str(err))
        return empty

    # ------------------------------------------------------------------ prompts

    def _prompt(self, sid: str, p: Prompt) -> Prompt:
        if not self.namespaced:
            self._prompt_names.setdefault(p.name, (sid, p.name))
            return p
        name = exposed_name(sid, p.name)
        self._prompt_names[name] = (sid, p.name)
        return p.model_copy(update={"name": name})

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        """``prompts/list`` over every server, the prompts the caller may see (composite cursor)."""
        self.track(ctx)
        visible = self.visibility(ctx)

        async def fetch(c: Client, cur: str | None) -> tuple[list[Any], str | None]:
            page = await c.list_prompts(cursor=cur)
            return list(page.prompts), page.next_cursor

        cursor = params.cursor if params else None
        items, nxt = await self._page(
            "prompts", "prompts", cursor, fetch, self._prompt, keep_item=lambda p: visible.allows(p.name)
        )
        return ListPromptsResult(prompts=items, next_cursor=nxt)

    def _resolve_prompt(self, name: str) -> list[tuple[str, str]]:
        known = self._prompt_names.get(name)
        if known is not None:
            return [known]
        if self.namespaced:
            server, sep, prompt = name.partition(SEPARATOR)
            if sep and self.registry.upstream(server) is not None and exposed_name(server, prompt) == name:
                return [(server, prompt)]
            return []
        return [(sid, name) for sid, _ in self._servers_with("prompts")]

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: GetPromptRequestParams
    ) -> GetPromptResult | InputRequiredResult:
        """``prompts/get`` routed to (server, original name); the result marked untrusted.
        Unknown name, or one the caller may not see: ``-32602``. For a 2026-07-28 caller an
        upstream's ``InputRequiredResult`` is passed on as for ``tools/call`` (its state sealed
        in the gateway's, bound to prompt, arguments and caller; ``-32021`` for a request the
        caller has no capability for; a tampered state ``-32602``) and the retry's answers go
        upstream; for a handshake-era caller the SDK runs the rounds."""
        self.track(ctx)
        visible = self.visibility(ctx)
        candidates = self._resolve_prompt(params.name) if visible.allows(params.name) else []
        if not candidates:
            raise MCPError(INVALID_PARAMS, f"unknown prompt {params.name!r}: not exposed by this gateway")
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and self.states is not None
        bound = binding(f"prompt:{params.name}", dict(params.arguments or {}), visible.client)
        responses, upstream_state = None, None
        if modern and params.request_state:
            sealed = self.states.unseal(bound, params.request_state)
            if sealed is None and self.states.forged(params.request_state):
                raise MCPError(INVALID_PARAMS, "requestState failed the gateway's integrity check")
            if sealed is not None:
                upstream_state, responses = sealed.get("u") or None, params.input_responses
        last: Exception | None = None
        for sid, original in candidates:
            up = self.registry.upstream(sid)
            if up is None:
                continue

            def get(c: Client, n: str = original) -> Awaitable[Any]:
                if not modern:
                    return c.get_prompt(n, params.arguments)
                return c.session.get_prompt(
                    n,
                    params.arguments,
                    input_responses=responses,
                    request_state=upstream_state,
                    allow_input_required=True,
                )

            try:
                result = await up.request("prompts/get", get)
            except (UpstreamUnavailable, UpstreamCallFailed, MCPError) as err:
                last = err if isinstance(err, MCPError) else MCPError(-32603, str(err))
                continue
            if isinstance(result, InputRequiredResult):
                requests = dict(result.input_requests or {})
                missing = missing_capabilities(
                    requests, caller_capabilities(ctx.session.client_capabilities, True)
                )
                if missing:
                    raise MCPError(
                        MISSING_REQUIRED_CLIENT_CAPABILITY,
                        f"prompt {params.name!r} needs the client capabilities {sorted(missing)}",
                        {"requiredCapabilities": missing},
                    )
                state = self.states.seal(bound, {"u": result.request_state or ""})
                return InputRequiredResult(input_requests=requests or None, request_state=state)
            meta = {**(result.meta or {}), SERVER_INFO_META_KEY: self._server_info, **_origin(sid)}
            return GetPromptResult(description=result.description, messages=result.messages, _meta=meta)
        raise last or MCPError(INVALID_PARAMS, f"unknown prompt {params.name!r}")
