"""The official MCP Registry API over the registered servers, so that clients and tools that
read registries discover this gateway's (the modelcontextprotocol/registry OpenAPI,
``/v0.1``, server.json schema 2025-12-11):

* ``GET /v0.1/servers?cursor=&limit=&search=&updated_since=&version=``: ``{"servers":
  [ServerResponse], "metadata": {"nextCursor"?, "count"}}`` in name order; ``limit`` 1–100
  (default 30); ``search`` a case-insensitive substring of the name; ``updated_since`` an
  RFC 3339 time (entries changed at or after it); ``version`` ``latest`` or an exact version.
  The cursor is opaque (the last name handed out).
* ``GET /v0.1/servers/{serverName}/versions``: the server's versions (one: the registered one),
  as a ``ServerList``; 404 ``{"error": ...}`` for an unknown name.
* ``GET /v0.1/servers/{serverName}/versions/{version}`` (``latest`` allowed): one
  ``ServerResponse``; 404 for an unknown name or version. ``serverName`` is URL-encoded
  (``io.github.acme%2Fweather``).

A ``ServerResponse`` is ``{"server": ServerDetail, "_meta": {"io.modelcontextprotocol.registry/
official": {"status": "active", "publishedAt", "updatedAt", "isLatest": true},
"io.turnstile/gateway": {"id", "state", "tools"}}}``. ``server`` is the ``server.json`` the
server was added from (:mod:`mcp_servers.official`), else one made from the registration:
``name`` ``<mcp.registry_namespace>/<id>``, the version its upstream reports (``0.0.0`` before
it answered), its description. Either way ``remotes`` is this gateway's ``/mcp`` alone, where
the server's tools are reached as ``<id>__<tool>``: the upstream's own ``remotes`` and
``packages`` are left out (a client that followed them would go around the gateway's access
checks, trust tiers and guardrails), and nothing of its transport (a command, a URL, a
credential's variable) is shown. ``_meta`` lists only the tools the caller may see.

Callers are admitted as on ``/mcp`` and ``/v1/mcp/tools`` (a JWT of the configured issuer with
``mcp.authorization`` on, a virtual key, an ``mcp.clients`` key): each sees only the servers it
may see (:meth:`mcp_servers.clients.Visibility.sees_server`); a caller refused is answered as
there (401 with ``WWW-Authenticate``). Bad query parameters are 400 ``{"error": ...}`` naming the parameter.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from mcp_servers.clients import Visibility
from mcp_servers.http_api import _caller as caller_of
from mcp_servers.official import SCHEMA_URL
from mcp_servers.registry import McpRegistry

OFFICIAL = "io.modelcontextprotocol.registry/official"
GATEWAY = "io.turnstile/gateway"
DEFAULT_LIMIT = 30
MAX_LIMIT = 100
_DESCRIPTION_MAX = 100


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def _error(message: str, status: int) -> Response:
    return _json({"error": message}, status)


def _rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def entry(registry: McpRegistry, sid: str, mcp_url: str, visible: Visibility | None = None) -> dict[str, Any]:
    """The ``ServerResponse`` of registered server ``sid`` (see the module docstring), its tools
    those ``visible`` allows (all with None)."""
    spec = registry.spec(sid)
    assert spec is not None
    status = registry.server_status(sid)
    if spec.server_json is not None:
        server = {k: v for k, v in spec.server_json.items() if k not in ("remotes", "packages")}
    else:
        up = registry.upstream(sid)
        info = getattr(up, "server_info", None)
        version = getattr(info, "version", None) or "0.0.0"
        upstream_name = getattr(info, "name", None)
        description = spec.description or (f"MCP server {upstream_name}" if upstream_name else None)
        server = {
            "$schema": SCHEMA_URL,
            "name": f"{registry.config.registry_namespace}/{sid}",
            "description": (description or f"MCP server {sid} behind the Turnstile gateway")[
                :_DESCRIPTION_MAX
            ],
            "version": version,
        }
    server["remotes"] = [{"type": "streamable-http", "url": mcp_url}]
    registered, changed = registry.times(sid) or (0.0, 0.0)
    tools = sorted(
        t.exposed
        for t in registry.tools()
        if t.server == sid and (visible is None or visible.allows(t.exposed))
    )
    return {
        "server": server,
        "_meta": {
            OFFICIAL: {
                "status": "active",
                "publishedAt": _rfc3339(registered),
                "updatedAt": _rfc3339(changed),
                "isLatest": True,
            },
            GATEWAY: {"id": sid, "state": status.get("state"), "tools": tools},
        },
    }


def _visible(registry: McpRegistry, visible: Visibility, sid: str) -> bool:
    names = [t.exposed for t in registry.tools(include_unavailable=True) if t.server == sid]
    return visible.sees_server(sid, names)


def entries(registry: McpRegistry, visible: Visibility, mcp_url: str) -> list[dict[str, Any]]:
    """Every server ``visible`` may see, as ``ServerResponse`` entries in name order."""
    out = [
        entry(registry, sid, mcp_url, visible)
        for sid in registry.server_ids()
        if _visible(registry, visible, sid)
    ]
    return sorted(out, key=lambda e: e["server"]["name"])


def _cursor(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")


def _after(cursor: str) -> str | None:
    try:
        name = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return name or None


async def _admitted(request: Request) -> tuple[Any, Visibility] | Response:
    """``(runtime, the caller's visibility)``, or the refusal (503 no registry, 401 refused)."""
    runtime = getattr(request.app.state, "mcp", None)
    if runtime is None:
        return _error("the MCP registry is not running", 503)
    visible = await caller_of(runtime, request.scope)  # as on /mcp: a JWT with mcp.authorization on
    if isinstance(visible, Response):
        return visible
    return runtime, visible


def _mcp_url(request: Request) -> str:
    return str(request.base_url).rstrip("/") + "/mcp"


async def list_servers(request: Request) -> Response:
    """``GET /v0.1/servers`` (see the module docstring)."""
    admitted = await _admitted(request)
    if isinstance(admitted, Response):
        return admitted
    runtime, visible = admitted
    q = request.query_params
    limit = DEFAULT_LIMIT
    if "limit" in q:
        try:
            limit = int(q["limit"])
        except ValueError:
            limit = 0
        if not 1 <= limit <= MAX_LIMIT:
            return _error(f"limit: expected an integer from 1 to {MAX_LIMIT}, got {q['limit']!r}", 400)
    since: float | None = None
    if q.get("updated_since"):
        try:
            parsed = datetime.fromisoformat(q["updated_since"].replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is None or parsed.tzinfo is None:
            return _error(
                "updated_since: expected an RFC 3339 time such as 2025-08-07T13:15:04.280Z, "
                f"got {q['updated_since']!r}",
                400,
            )
        since = parsed.timestamp()
    after: str | None = None
    if q.get("cursor"):
        after = _after(q["cursor"])
        if after is None:
            return _error("cursor: not a cursor this registry handed out", 400)
    search = (q.get("search") or "").lower()
    version = q.get("version")
    found = []
    for e in entries(runtime.registry, visible, _mcp_url(request)):
        name = e["server"]["name"]
        if after is not None and name <= after:
            continue
        if search and search not in name.lower():
            continue
        if version and version != "latest" and e["server"].get("version") != version:
            continue
        if since is not None:
            changed = runtime.registry.times(e["_meta"][GATEWAY]["id"]) or (0.0, 0.0)
            if changed[1] < since:
                continue
        found.append(e)
    page = found[:limit]
    metadata: dict[str, Any] = {"count": len(page)}
    if len(found) > limit:
        metadata["nextCursor"] = _cursor(page[-1]["server"]["name"])
    return _json({"servers": page, "metadata": metadata})


def _named(request: Request, runtime: Any, visible: Visibility) -> dict[str, Any] | None:
    name = request.path_params["server_name"]
    for e in entries(runtime.registry, visible, _mcp_url(request)):
        if e["server"]["name"] == name:
            return e
    return None


async def server_versions(request: Request) -> Response:
    """``GET /v0.1/servers/{serverName}/versions``."""
    admitted = await _admitted(request)
    if isinstance(admitted, Response):
        return admitted
    runtime, visible = admitted
    found = _named(request, runtime, visible)
    if found is None:
        return _error("Server not found", 404)
    return _json({"servers": [found], "metadata": {"count": 1}})


async def server_version(request: Request) -> Response:
    """``GET /v0.1/servers/{serverName}/versions/{version}`` (``latest`` allowed)."""
    admitted = await _admitted(request)
    if isinstance(admitted, Response):
        return admitted
    runtime, visible = admitted
    found = _named(request, runtime, visible)
    if found is None:
        return _error("Server not found", 404)
    version = request.path_params["version"]
    if version != "latest" and found["server"].get("version") != version:
        return _error(
            f"Server version not found: {found['server']['name']} has version "
            f"{found['server'].get('version')}",
            404,
        )
    return _json(found)


def routes() -> list[BaseRoute]:
    """The ``/v0.1`` routes, for ``gateway.server.create_app`` (beside :mod:`mcp_servers.http_api`'s)."""
    return [
        Route("/v0.1/servers", list_servers, methods=["GET"]),
        Route("/v0.1/servers/{server_name:path}/versions", server_versions, methods=["GET"]),
        Route("/v0.1/servers/{server_name:path}/versions/{version}", server_version, methods=["GET"]),
    ]
