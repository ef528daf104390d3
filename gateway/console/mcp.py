"""``GET /ui/mcp``: the registered MCP servers (state, why it is not ready, restarts, last
error, tools pending review) and each one's tools with their trust tier and why
(:mod:`mcp_servers.trust`: decided at registration from the tool's annotations or the admin's
override), as the MCP registry (:mod:`mcp_servers.registry`) holds them now.

A server's transport is shown by kind and what it runs or where it points (an HTTP URL without
its query string); the environment variables it names are shown by name, never by value.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from starlette.requests import Request
from starlette.responses import Response

from gateway.console.web import render


def transport_line(spec: dict[str, Any]) -> str:
    """What a server runs (``command args``) or where it is (its URL, query and fragment left
    out: they may hold a token)."""
    transport = spec.get("transport") or {}
    if transport.get("type") == "stdio":
        return " ".join([str(transport.get("command", "")), *map(str, transport.get("args", []))])
    url = str(transport.get("url", ""))
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def server_rows(registry: Any) -> list[dict[str, Any]]:
    """One row per registered server: id, source (config or admin), transport, status, the
    environment variable names it uses, and its tools (exposed and original name, tier, why,
    read-only / destructive / open-world hints as judged, available, review state)."""
    tools: dict[str, list[Any]] = {}
    for t in registry.tools(include_unavailable=True):
        tools.setdefault(t.server, []).append(t)
    out = []
    for server in registry.servers():
        spec = server["spec"]
        transport = spec.get("transport") or {}
        env_names = sorted(
            {
                *transport.get("env_passthrough", []),
                *transport.get("env", {}),
                *transport.get("headers_env", {}).values(),
            }
        )
        out.append(
            {
                "id": spec["id"],
                "source": server["source"],
                "kind": transport.get("type"),
                "transport": transport_line(spec),
                "description": spec.get("description"),
                "env_names": env_names,
                "status": server["status"],
                "tools": [
                    {
                        "exposed": t.exposed,
                        "name": t.name,
                        "tier": t.trust.tier,
                        "reason": t.trust.reason,
                        "read_only": t.trust.read_only,
                        "destructive": t.trust.destructive,
                        "open_world": t.trust.open_world,
                        "path_args": list(t.trust.path_args),
                        "available": t.available,
                        "review": t.review,
                        "description": t.tool.description,
                    }
                    for t in tools.get(spec["id"], [])
                ],
            }
        )
    return out


async def mcp_page(request: Request) -> Response:
    """``GET /ui/mcp``."""
    mcp = getattr(request.app.state, "mcp", None)
    rows = server_rows(mcp.registry) if mcp is not None else []
    clients = [c.name for c in mcp.config.clients] if mcp is not None else []
    return render(
        request,
        "mcp.html",
        title="MCP servers",
        section="mcp",
        servers=rows,
        clients=clients,
        namespaced=mcp.config.namespaced if mcp is not None else True,
    )
