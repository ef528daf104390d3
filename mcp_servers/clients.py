"""Per-client visibility of MCP tools (``mcp.clients`` in the configuration).

A request to ``/mcp`` or ``/v1/mcp/tools`` is matched to a configured client by its API key
(``Authorization: Bearer <key>``, compared in constant time with the value of each client's
``key_env``). The client's tool globs decide which exposed tools it sees in ``tools/list`` and
may call; a call to any other tool is answered exactly like a call to a tool that does not
exist. With no clients configured, every caller sees every tool.

The key only authenticates the caller to the gateway: upstream requests are made by the
gateway's own ``Client`` per upstream, with the credentials of the upstream's config, and carry
nothing from the caller's HTTP request.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from mcp_servers.config import McpClient, McpConfig
from mcp_servers.upstream import EnvReader

STATE_KEY = "turnstile_mcp_client"


@dataclass(frozen=True)
class Visibility:
    """Which exposed tool names a caller may see: ``client`` None means everything."""

    client: str | None
    globs: tuple[str, ...] = ("*",)

    def allows(self, exposed: str) -> bool:
        """Whether ``exposed`` matches one of the globs."""
        return any(fnmatchcase(exposed, g) for g in self.globs)


EVERYTHING = Visibility(None)
NOTHING = Visibility("<unauthenticated>", ())


def bearer(headers: Any) -> str:
    """The bearer token of ``Authorization`` (empty when absent)."""
    given = headers.get("authorization", "") or ""
    return given[7:].strip() if given.lower().startswith("bearer ") else ""


def authenticate(config: McpConfig, read_env: EnvReader, headers: Any) -> Visibility | None:
    """The caller's visibility: :data:`EVERYTHING` when no client is configured, the matching
    client's otherwise, None when clients are configured and the key matches none."""
    if not config.clients:
        return EVERYTHING
    token = bearer(headers).encode()
    match: McpClient | None = None
    for client in config.clients:
        key = read_env(client.key_env)
        if key and hmac.compare_digest(token, key.encode()) and match is None:
            match = client
    return Visibility(match.name, tuple(match.tools)) if match is not None else None


def from_request(config: McpConfig, request: Any) -> Visibility:
    """The visibility stored on the request by the ``/mcp`` ASGI app (fails closed: nothing
    when clients are configured and the request carries none)."""
    state = getattr(request, "scope", {}).get("state") or {} if request is not None else {}
    found = state.get(STATE_KEY)
    if isinstance(found, Visibility):
        return found
    return EVERYTHING if not config.clients else NOTHING
