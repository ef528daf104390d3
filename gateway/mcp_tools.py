"""The MCP tools a turn offers: those of the MCP servers its request names or its model alias
attaches, that the caller may see, under their exposed names (``<server>__<tool>``).

The guards layer attaches them (:func:`offer`) before validation, so that a ``tool_choice``
naming one of them, or ``required`` with only MCP tools, is valid; the tool loop layer
(:mod:`gateway.layers.tool_loop`) runs the turn's loop when ``turn.loop_tools`` is set.
"""

from __future__ import annotations

from typing import Any

from gateway.errors import AuthenticationRequired, InvalidRequest, PermissionDenied
from gateway.schema import Request, ToolDefinition
from gateway.turn import Gateway, Turn
from mcp_servers.clients import EVERYTHING, Visibility
from mcp_servers.tool_search import scoped

_ALIAS_SERVERS: dict[int, tuple[Any, dict[str, list[str]]]] = {}


def _alias_servers(config: Any) -> dict[str, list[str]]:
    """Alias name -> its MCP server ids (aliases without servers left out), made once per
    configuration object (kept referenced, so its id cannot be reused while cached)."""
    hit = _ALIAS_SERVERS.get(id(config))
    if hit is None or hit[0] is not config:
        if len(_ALIAS_SERVERS) > 64:  # bounded: one config per gateway; tests make many
            _ALIAS_SERVERS.clear()
        by_alias: dict[str, list[str]] = {}
        for alias in config.models:
            if alias.mcp_servers:
                by_alias.setdefault(alias.name, []).extend(alias.mcp_servers)
        hit = _ALIAS_SERVERS[id(config)] = (config, by_alias)
    return hit[1]


def servers_for(gw: Gateway, request: Request) -> list[str]:
    """MCP server ids of a turn: those the request names, then its alias's, without repeats."""
    extra = _alias_servers(gw.config).get(request.model)
    if not extra:
        return list(request.mcp_servers)
    ids = list(request.mcp_servers)
    ids += [s for s in dict.fromkeys(extra) if s not in ids]
    return ids


def active(gw: Gateway, request: Request) -> bool:
    """Whether the turn runs the server-side tool loop (it has MCP servers attached)."""
    return bool(servers_for(gw, request))


def attach_tools(
    gw: Gateway, request: Request, visibility: Visibility = EVERYTHING
) -> tuple[Request, frozenset[str], Visibility]:
    """``request`` with the available tools of its MCP servers that ``visibility`` (the caller's
    ``mcp.clients`` entry) may see added (exposed names), the set of those names, and the
    visibility the turn's calls run with: ``visibility`` itself, or, when ``mcp.tool_search``
    applies to the caller (:mod:`mcp_servers.tool_search`), the meta-tools (search, describe,
    call) added instead of the tools, and ``visibility`` narrowed to the turn's servers.

    Raises :class:`AuthenticationRequired` (401) when clients are configured and the caller's
    key matches none; :class:`PermissionDenied` (403, naming the server) for a server none of
    whose known tools the caller may see; :class:`InvalidRequest` (``param="tools"``) for a
    server that is not registered (the message lists the registered servers the caller may
    see), when the MCP registry is not running, or when an exposed name clashes with a tool the
    client defined."""
    ids = servers_for(gw, request)
    runtime = gw.mcp
    if runtime is None:
        raise InvalidRequest(
            "tools: MCP servers were named, and this gateway's MCP registry is not running", param="tools"
        )
    if not visibility.authenticated:
        raise AuthenticationRequired(
            f"this request attaches MCP servers ({', '.join(ids)}), and this gateway shows MCP tools only "
            "to its configured clients: send a client key (Authorization: Bearer <key>, x-api-key or "
            "x-goog-api-key)",
            param="tools",
        )
    registry = runtime.registry
    known = registry.tools(include_unavailable=True)
    defs: list[ToolDefinition] = []
    for sid in ids:
        if registry.spec(sid) is None:
            seen = sorted({t.server for t in known if visibility.allows(t.exposed)})
            if visibility.client is None:
                seen = registry.server_ids()
            raise InvalidRequest(
                f"tools: MCP server {sid!r} is not registered (registered: {', '.join(seen) or 'none'})",
                param="tools",
            )
        mine = [t for t in known if t.server == sid]
        if mine and not any(visibility.allows(t.exposed) for t in mine):
            raise PermissionDenied(
                f"tools: MCP server {sid!r} is not available to client {visibility.client!r}: its key may "
                "see none of that server's tools",
                param="tools",
            )
        for t in mine:
            if t.available and visibility.allows(t.exposed):
                defs.append(
                    ToolDefinition(
                        name=t.exposed, description=t.tool.description, parameters=dict(t.tool.input_schema)
                    )
                )
    if gw.config.mcp.tool_search.enabled and runtime.endpoint.search.applies(visibility, len(defs)):
        search = runtime.endpoint.search  # mcp.tool_search: meta-tools over these servers
        visibility = scoped(registry, visibility, ids)
        defs = [
            ToolDefinition(name=m.name, description=m.description, parameters=dict(m.input_schema))
            for m in search.meta_tools(visibility)
        ]
    client = {t.name for t in request.tools}
    clash = sorted(client & {d.name for d in defs})
    if clash:
        raise InvalidRequest(
            f"tools: {', '.join(clash)} is both a client tool and an MCP tool of this turn", param="tools"
        )
    names = frozenset(d.name for d in defs)
    return request.model_copy(update={"tools": [*request.tools, *defs]}), names, visibility


def offer(gw: Gateway, turn: Turn) -> Request:
    """The turn's request as the guards and the model see it: for a turn with MCP servers
    attached, ``turn.request`` with their tools added (:func:`attach_tools`, for the caller's
    ``turn.mcp_visibility``) and ``turn.loop_tools`` set to their names, so that validation (a
    ``tool_choice`` naming an MCP tool) counts them as offered; any other turn's request as it
    is (``turn.loop_tools`` stays None). Raises as :func:`attach_tools`."""
    request = turn.request
    if not request.mcp_servers and request.model not in _alias_servers(gw.config):
        return request
    prepared, turn.loop_tools, turn.mcp_visibility = attach_tools(gw, request, turn.mcp_visibility)
    return prepared
