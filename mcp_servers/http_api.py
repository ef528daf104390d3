"""HTTP side of the MCP registry, mounted in the gateway's Starlette app.

Routes
------
* ``/mcp`` (GET, POST, DELETE): the MCP endpoint, streamable HTTP, legacy and 2026-07-28
  clients (:mod:`mcp_servers.endpoint`).
* ``GET /sse`` and ``POST /messages/?session_id=...``: the same endpoint over the legacy
  HTTP+SSE transport of MCP 2024-11-05 (:mod:`mcp_servers.legacy_sse`).
* ``POST /admin/mcp/servers``: add or replace a server (body: a ``McpServerSpec`` as JSON;
  ``?wait_s=N`` waits up to N s, at most 60, for it to be ready). 201 created, 200 replaced,
  400 invalid (each error with its key path) or using what ``mcp.admin_servers`` does not
  allow (each field and value named), 409 when the id is defined in the config file.
* ``GET /admin/mcp/servers`` and ``GET /admin/mcp/servers/{id}``: specs, source and status
  (with ``pending_tools``: tools that appeared or changed after registration, awaiting review).
* ``POST /admin/mcp/servers/{id}/tools/accept``: accept pending tools (body ``{"tools":
  [names]}``; no body, or no names: all of them). 200 with the accepted tools, 400 naming
  tools that are not pending, 404 unknown server.
* ``DELETE /admin/mcp/servers/{id}``: 204, 404 unknown, 409 defined in the config file.
* ``GET /.well-known/oauth-protected-resource`` and ``.../oauth-protected-resource/mcp``: the
  RFC 9728 metadata of ``/mcp`` when ``mcp.authorization`` is on (404 otherwise); then ``/mcp``
  and ``/v1/mcp/tools`` take bearer JWTs of the issuer, virtual keys and client keys, and a
  401/403 carries ``WWW-Authenticate: Bearer resource_metadata="..."``
  (:mod:`mcp_servers.oauth_resource`).
* ``GET /mcp/oauth/callback``: the ``redirect_uri`` of upstreams signing in with the OAuth
  authorization-code grant (:mod:`mcp_servers.upstream_oauth`).
* ``GET /v1/mcp/tools?format=openai|anthropic|gemini``: the available registered tools in that
  provider's tool format (:mod:`gateway.providers.tool_formats`), under their exposed names;
  400 for an unknown format or more tools than the provider takes.

The official MCP Registry API (``GET /v0.1/servers...``) is :mod:`mcp_servers.registry_api`.

The admin routes need the admin key — the value of the environment variable named by
``admin_key_env`` (in the gateway: ``access.admin_key_env``, the one admin key of every admin
API) — as ``Authorization: Bearer <key>``, ``x-api-key`` or ``x-admin-key``
(:func:`mcp_servers.clients.is_admin_key`); with that variable unset they answer 403. Wrong
admin keys count per client address with every other admin surface's
(:mod:`gateway.access.guessing`: 429 with ``retry-after`` past the limit).

:func:`open_mcp` makes the runtime (store, registry, endpoint, session manager) for the app's
lifespan; everything lives on ``app.state.mcp``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import orjson
import structlog
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from gateway.access.guessing import TooManyKeyGuesses, check_admin_key
from mcp_servers.admin_policy import AdminPolicyViolation
from mcp_servers.clients import (
    CALLER,
    STATE_KEY,
    SUBJECT_TOKEN_KEY,
    KeyAuth,
    Visibility,
    admit,
    bearer,
)
from mcp_servers.config import McpConfig, McpServerSpec
from mcp_servers.endpoint import McpEndpoint
from mcp_servers.legacy_sse import MESSAGES_PATH, LegacySse
from mcp_servers.oauth_resource import (
    WELL_KNOWN,
    OAuthResource,
    admit_or_refuse,
    challenge,
    looks_like_jwt,
    resource_url,
    step_up,
)
from mcp_servers.registry import McpRegistry, RegistryConflict
from mcp_servers.store import McpStore
from mcp_servers.upstream import EnvReader

log = structlog.get_logger("turnstile.mcp.http")


@dataclass
class McpRuntime:
    """What the lifespan keeps on ``app.state.mcp``."""

    config: McpConfig
    registry: McpRegistry
    endpoint: McpEndpoint
    session_manager: StreamableHTTPSessionManager
    read_env: EnvReader
    legacy_sse: LegacySse
    keys: KeyAuth | None = None
    """The gateway's virtual keys (:data:`mcp_servers.clients.KeyAuth`), judged before ``mcp.clients``."""
    oauth: OAuthResource | None = None
    """``/mcp`` as an OAuth protected resource (``mcp.authorization``); None: off."""


@asynccontextmanager
async def open_mcp(
    config: McpConfig,
    *,
    db_path: str,
    read_env: EnvReader,
    security: TransportSecuritySettings | None = None,
    version: str = "0.1.0",
    keys: KeyAuth | None = None,
) -> AsyncIterator[McpRuntime]:
    """Start the registry (upstreams connect in the background), the ``/mcp`` session
    manager and the legacy SSE transport; on exit end every SSE session and stop the others
    (every stdio child is terminated and reaped).

    ``security`` is the DNS-rebinding protection of ``/mcp`` and the SSE transport alike (the
    ``Host``/``Origin`` lists the gateway's model API checks too:
    :func:`gateway.browser_guard.mcp_security`); None checks nothing.
    """
    registry = McpRegistry(config, store=McpStore(db_path), read_env=read_env)
    shared = read_env(config.state_key_env) if config.state_key_env else None
    endpoint = McpEndpoint(
        registry,
        version=version,
        workspace_roots=config.resolved_workspace_roots(),
        state_secret=shared.encode() if shared else None,
    )
    if config.authorization is not None and config.authorization.resource is None and security is None:
        from gateway.errors import ConfigError

        raise ConfigError(
            "mcp.authorization.resource is unset and the gateway listens on a non-loopback address without "
            "server.allowed_hosts: the audience tokens must carry would come from the request's Host header. "
            "Set mcp.authorization.resource (this gateway's /mcp URL) or server.allowed_hosts."
        )
    manager = StreamableHTTPSessionManager(app=endpoint.server, security_settings=security)
    oauth = OAuthResource(config.authorization) if config.authorization is not None else None
    legacy = LegacySse(endpoint.server, config, read_env, security, keys, oauth)
    await registry.start()
    try:
        async with manager.run():
            try:
                yield McpRuntime(config, registry, endpoint, manager, read_env, legacy, keys, oauth)
            finally:
                legacy.close()
    finally:
        await registry.close()


class McpAsgi:
    """ASGI app for ``/mcp``: hands the request to the running session manager."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        runtime: McpRuntime | None = getattr(scope["app"].state, "mcp", None)
        if runtime is None:
            response = _json({"error": {"message": "the MCP endpoint is not running"}}, 503)
            await response(scope, receive, send)
            return
        visibility = await _caller(runtime, scope)
        if isinstance(visibility, Response):
            await visibility(scope, receive, send)
            return
        scope.setdefault("state", {})[STATE_KEY] = visibility
        headers = Headers(scope=scope)
        jwt = bearer(headers)
        if runtime.oauth is not None and looks_like_jwt(jwt):
            scope["state"][SUBJECT_TOKEN_KEY] = jwt  # for per-user delegation (token exchange) only
            tool = (headers.get("mcp-name") or "").strip()
            if (headers.get("mcp-method") or "").strip() == "tools/call" and tool:
                refused = step_up(
                    runtime.oauth, jwt, visibility, tool, runtime.registry.lookup(tool) is not None
                )
                if refused is not None:
                    resource = resource_url(runtime.oauth.config, str(Request(scope).base_url))
                    response = _json({"error": refused.error, "error_description": refused.description}, 403)
                    response.headers["WWW-Authenticate"] = challenge(resource, refused)
                    await response(scope, receive, send)
                    return
        scope["headers"] = trimmed_mcp_headers(scope["headers"])
        token = CALLER.set(visibility)  # for the SDK's Mcp-Param-* check (McpEndpoint.visible_input_schema)
        try:
            await runtime.session_manager.handle_request(scope, receive, send)
        finally:
            CALLER.reset(token)


def trimmed_mcp_headers(raw: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``raw`` ASGI headers with the optional whitespace around ``Mcp-*`` values removed (RFC
    9110 §5.5: it is not part of the value), which the MCP SDK's ``Mcp-Method``/``Mcp-Name``/
    ``Mcp-Param-*`` checks compare as they come."""
    return [(k, v.strip(b" \t") if k[:4].lower() == b"mcp-" else v) for k, v in raw]


class LegacySseAsgi:
    """ASGI app for ``GET /sse`` (``post=False``) or ``POST /messages/`` (``post=True``): hands
    the request to the running :class:`~mcp_servers.legacy_sse.LegacySse`."""

    def __init__(self, *, post: bool) -> None:
        self.post = post

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        runtime: McpRuntime | None = getattr(scope["app"].state, "mcp", None)
        if runtime is None:
            response = _json({"error": {"message": "the MCP endpoint is not running"}}, 503)
            await response(scope, receive, send)
        elif self.post:
            await runtime.legacy_sse.post_message(scope, receive, send)
        else:
            await runtime.legacy_sse.open_stream(scope, receive, send)


async def _caller(runtime: McpRuntime, scope: Scope) -> Visibility | Response:
    """The visibility of the caller of ``/mcp`` or ``/v1/mcp/tools``, or the 401/403 to answer:
    with ``mcp.authorization`` on, :func:`mcp_servers.oauth_resource.judge` (a JWT, a virtual
    key or a client key; the refusal's ``WWW-Authenticate`` names the resource metadata), else
    :func:`mcp_servers.clients.admit`."""
    headers = Headers(scope=scope)
    if runtime.oauth is None:
        found = await admit(runtime.config, runtime.read_env, headers, runtime.keys)
        return _unauthenticated() if found is None else found
    base_url = str(Request(scope).base_url)
    return await admit_or_refuse(
        runtime.oauth, runtime.config, runtime.read_env, headers, runtime.keys, base_url
    )


async def resource_metadata(request: Request) -> Response:
    """``GET /.well-known/oauth-protected-resource[/mcp]``: the RFC 9728 metadata of ``/mcp``;
    404 when ``mcp.authorization`` is off."""
    runtime: McpRuntime | None = getattr(request.app.state, "mcp", None)
    if runtime is None or runtime.oauth is None:
        return _error("this gateway's MCP endpoint is not an OAuth protected resource", 404, "not_found")
    resource = resource_url(runtime.oauth.config, str(request.base_url))
    response = _json(runtime.oauth.metadata(resource))
    response.headers["access-control-allow-origin"] = "*"
    return response


async def oauth_callback(request: Request) -> Response:
    """``GET /mcp/oauth/callback?code=...&state=...``: the redirect of an upstream's
    authorization server after an admin authorized the gateway (the ``redirect_uri`` of an
    ``authorization_code`` upstream); the flow waiting with that ``state`` goes on. 400 for an
    error redirect or a state no flow waits for."""
    runtime: McpRuntime | None = getattr(request.app.state, "mcp", None)
    if runtime is None:
        return _error("the MCP registry is not running", 503, "unavailable")
    q = request.query_params
    if q.get("error"):
        log.warning("mcp_oauth_authorization_refused", error=q.get("error"), state=q.get("state"))
        for status in runtime.registry.status()["servers"]:
            prompt = getattr(runtime.registry.upstream(status["id"]), "prompt", None)
            if prompt is not None:
                prompt.refuse(q.get("state", ""), str(q.get("error")))
        return _error(
            f"the authorization server answered {q.get('error')}: {q.get('error_description', '')}",
            400,
            "invalid_request",
        )
    code, state = q.get("code", ""), q.get("state", "")
    for status in runtime.registry.status()["servers"]:
        up = runtime.registry.upstream(status["id"])
        prompt = getattr(up, "prompt", None)
        if prompt is not None and code and prompt.complete(code, state, q.get("iss")):
            return _json({"server": status["id"], "authorized": True})
    return _error("no OAuth authorization of this gateway waits for this state", 400, "invalid_request")


def _unauthenticated() -> Response:
    response = _error(
        "this gateway's MCP endpoint needs a client API key (Authorization: Bearer <key>)",
        401,
        "authentication",
    )
    response.headers["WWW-Authenticate"] = "Bearer"
    return response


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def _error(message: str, status: int, kind: str, details: Any = None) -> Response:
    err: dict[str, Any] = {"message": message, "type": kind}
    if details is not None:
        err["details"] = details
    return _json({"error": err}, status)


async def _admin(request: Request) -> tuple[McpRuntime | None, Response | None]:
    runtime: McpRuntime | None = getattr(request.app.state, "mcp", None)
    if runtime is None:
        return None, _error("the MCP registry is not running", 503, "unavailable")
    env = runtime.config.admin_key_env
    key = runtime.read_env(env) if env else None
    if not key:
        return None, _error(
            f"the admin API is disabled: set the environment variable {env}"
            if env
            else "the admin API is disabled: no admin key is configured (access.admin_key_env)",
            403,
            "permission",
        )
    try:
        admitted = await check_admin_key(request, key)  # wrong keys counted per address
    except TooManyKeyGuesses as err:
        response = _error(err.message, 429, "rate_limit")
        response.headers["retry-after"] = str(int(err.retry_after_s))
        return None, response
    if not admitted:
        return None, _error("admin key missing or wrong (Authorization: Bearer <key>)", 401, "authentication")
    return runtime, None


async def post_server(request: Request) -> Response:
    """Add or replace one server (see the module docstring)."""
    runtime, denied = await _admin(request)
    if runtime is None:
        assert denied is not None
        return denied
    body = await request.body()
    try:
        spec = McpServerSpec.model_validate_json(body)
    except ValidationError as err:
        details = [{"loc": ".".join(str(p) for p in e["loc"]), "msg": e["msg"]} for e in err.errors()]
        return _error(
            "invalid MCP server spec: " + "; ".join(f"{d['loc']}: {d['msg']}" for d in details),
            400,
            "invalid_request",
            details,
        )
    try:
        replaced = await runtime.registry.put_server(spec)
    except RegistryConflict as err:
        return _error(str(err), 409, "conflict")
    except AdminPolicyViolation as err:
        details = [{"loc": v.field, "value": v.value, "msg": v.message} for v in err.violations]
        return _error(str(err), 400, "invalid_request", details)
    wait = request.query_params.get("wait_s")
    if wait:
        try:
            seconds = min(60.0, max(0.0, float(wait)))
        except ValueError:
            return _error("wait_s must be a number of seconds", 400, "invalid_request")
        up = runtime.registry.upstream(spec.id)
        if up is not None and spec.enabled:
            await up.wait_ready(seconds)
    entry = next(s for s in runtime.registry.servers() if s["spec"]["id"] == spec.id)
    return _json(entry, 200 if replaced else 201)


def _with_authorization_url(runtime: McpRuntime, entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` (a server of the admin API) with ``status.oauth.authorization_url`` when its
    OAuth sign-in waits for an admin (never on ``GET /health``)."""
    oauth = entry.get("status", {}).get("oauth")
    if isinstance(oauth, dict):
        prompt = getattr(runtime.registry.upstream(entry["spec"]["id"]), "prompt", None)
        oauth["authorization_url"] = prompt.url if prompt is not None else None
    return entry


async def list_servers(request: Request) -> Response:
    """Every server with its source and status."""
    runtime, denied = await _admin(request)
    if runtime is None:
        assert denied is not None
        return denied
    return _json({"servers": [_with_authorization_url(runtime, e) for e in runtime.registry.servers()]})


async def get_server(request: Request) -> Response:
    """One server."""
    runtime, denied = await _admin(request)
    if runtime is None:
        assert denied is not None
        return denied
    sid = request.path_params["server_id"]
    for entry in runtime.registry.servers():
        if entry["spec"]["id"] == sid:
            return _json(_with_authorization_url(runtime, entry))
    return _error(f"no MCP server {sid!r}", 404, "not_found")


async def accept_tools(request: Request) -> Response:
    """Accept tools of one server that await review (see the module docstring)."""
    runtime, denied = await _admin(request)
    if runtime is None:
        assert denied is not None
        return denied
    sid = request.path_params["server_id"]
    body = await request.body()
    names: list[str] | None = None
    if body.strip():
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError as err:
            return _error(f"the body is not JSON: {err}", 400, "invalid_request")
        raw = parsed.get("tools") if isinstance(parsed, dict) else None
        if raw is not None and not (isinstance(raw, list) and all(isinstance(n, str) for n in raw)):
            return _error("tools: expected a list of tool names", 400, "invalid_request")
        if not isinstance(parsed, dict) or set(parsed) - {"tools"}:
            return _error('the body must be {"tools": [names]} (no other field)', 400, "invalid_request")
        names = raw
    try:
        accepted = await runtime.registry.accept_tools(sid, names)
    except KeyError:
        return _error(f"no MCP server {sid!r}", 404, "not_found")
    except ValueError as err:
        return _error(str(err), 400, "invalid_request")
    return _json({"server": sid, "accepted": accepted, "status": runtime.registry.server_status(sid)})


async def delete_server(request: Request) -> Response:
    """Remove one admin server."""
    runtime, denied = await _admin(request)
    if runtime is None:
        assert denied is not None
        return denied
    sid = request.path_params["server_id"]
    try:
        removed = await runtime.registry.delete_server(sid)
    except RegistryConflict as err:
        return _error(str(err), 409, "conflict")
    if not removed:
        return _error(f"no MCP server {sid!r}", 404, "not_found")
    return Response(status_code=204)


async def model_tools(request: Request) -> Response:
    """The registry's tools for a model request, in the asked provider format."""
    from gateway.errors import InvalidRequest
    from gateway.providers.tool_formats import render_tools
    from gateway.schema import ToolDefinition

    runtime: McpRuntime | None = getattr(request.app.state, "mcp", None)
    if runtime is None:
        return _error("the MCP registry is not running", 503, "unavailable")
    visibility = await _caller(runtime, request.scope)
    if isinstance(visibility, Response):
        return visibility
    fmt = request.query_params.get("format", "openai")
    defs = [
        ToolDefinition(name=t.exposed, description=t.tool.description, parameters=dict(t.tool.input_schema))
        for t in runtime.registry.tools()
        if t.trust.tier != "deny" and visibility.allows(t.exposed)
    ]
    try:
        tools = render_tools(defs, fmt)
    except InvalidRequest as err:
        return _error(err.message, 400, "invalid_request")
    return _json({"format": fmt, "tools": tools})


def routes() -> list[BaseRoute]:
    """The routes above, for ``gateway.server.create_app``."""
    return [
        Route("/mcp", McpAsgi(), methods=["GET", "POST", "DELETE"]),
        Route("/sse", LegacySseAsgi(post=False), methods=["GET"]),
        Route(MESSAGES_PATH, LegacySseAsgi(post=True), methods=["POST"]),
        Route(MESSAGES_PATH.rstrip("/"), LegacySseAsgi(post=True), methods=["POST"]),
        Route("/admin/mcp/servers", post_server, methods=["POST"]),
        Route("/admin/mcp/servers", list_servers, methods=["GET"]),
        Route("/admin/mcp/servers/{server_id}", get_server, methods=["GET"]),
        Route("/admin/mcp/servers/{server_id}", delete_server, methods=["DELETE"]),
        Route("/admin/mcp/servers/{server_id}/tools/accept", accept_tools, methods=["POST"]),
        Route("/v1/mcp/tools", model_tools, methods=["GET"]),
        Route(WELL_KNOWN, resource_metadata, methods=["GET"]),
        Route("/mcp/oauth/callback", oauth_callback, methods=["GET"]),
        Route(WELL_KNOWN + "/mcp", resource_metadata, methods=["GET"]),
    ]
