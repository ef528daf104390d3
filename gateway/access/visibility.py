"""The MCP tools a virtual key may see and run, as a :class:`mcp_servers.clients.Visibility`.

A key's (and its team's) ``mcp`` allow lists name servers (``time``) and tools
(``time.get_current_time``); MCP paths judge exposed names (``time__get_current_time``). The
exposed name is mapped back to its (server, tool) pair through the registry (``owner``:
:meth:`mcp_servers.registry.McpRegistry.lookup`), which also covers hashed long names and
``mcp.namespaced: false``; a name the registry does not hold (a prompt) is split at the
first ``__``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gateway.access.model import Principal
from mcp_servers.clients import Visibility
from mcp_servers.naming import SEPARATOR

Owner = Callable[[str], tuple[str, str] | None]
"""Exposed MCP name -> (server id, original tool name), or None when not a registered tool."""


@dataclass(frozen=True)
class KeyVisibility(Visibility):
    """The visibility of a key whose allow lists restrict MCP tools."""

    principal: Principal | None = None
    owner: Owner | None = None

    def _pair(self, exposed: str) -> tuple[str, str] | None:
        found = self.owner(exposed) if self.owner is not None else None
        if found is not None:
            return found
        server, sep, tool = exposed.partition(SEPARATOR)
        return (server, tool) if sep else None

    def allows(self, exposed: str) -> bool:
        """Whether the key and its team both allow the tool (or prompt) exposed as ``exposed``."""
        pair = self._pair(exposed)
        return pair is not None and self.principal is not None and self.principal.allows_tool(*pair)

    def sees_server(self, server: str, tool_names: Iterable[str]) -> bool:
        """Whether the key may see ``server``'s resources: it allows the whole server, or one
        of ``tool_names`` (the server's exposed tool names)."""
        p = self.principal
        return p is not None and (p.allows_server(server) or any(self.allows(n) for n in tool_names))


def key_visibility(principal: Principal, owner: Owner | None) -> Visibility:
    """What ``principal`` may see (client name: the key's id, for the MCP audit): every tool
    when neither its key nor its team restricts MCP tools, else a :class:`KeyVisibility`."""
    if not principal.mcp_restricted:
        return Visibility(principal.key_id)
    return KeyVisibility(principal.key_id, (), principal=principal, owner=owner)
