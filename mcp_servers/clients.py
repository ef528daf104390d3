"""Per-client visibility of MCP tools (``mcp.clients`` in the configuration).

A caller is matched to a configured client by the API key it presents, wherever its SDK puts
it: ``Authorization: Bearer <key>`` (OpenAI SDK, MCP clients), ``x-api-key`` (Anthropic SDK),
``x-goog-api-key`` (Google's SDK). Each presented key is compared in constant time with the
value of every client's ``key_env``. The client's tool globs decide which exposed tools it sees
and may call on every path that lists or runs a tool: ``/mcp`` (``tools/list``,
``tools/call``), ``GET /v1/mcp/tools`` and the server-side tool loop of chat requests. A call
to any other tool is answered exactly like a call to a tool that does not exist. With no
clients configured, every caller sees every tool.

The key only authenticates the caller to the gateway: upstream requests are made by the
gateway's own ``Client`` per upstream, with the credentials of the upstream's config, and carry
nothing from the caller's HTTP request.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from mcp_servers.config import McpClient, McpConfig

if TYPE_CHECKING:
    from mcp_servers.upstream import EnvReader

STATE_KEY = "turnstile_mcp_client"
UNAUTHENTICATED = "<unauthenticated>"
KEY_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")
"""Where a caller's key may be: OpenAI's and MCP's bearer token, Anthropic's and Google's key
headers (the first one that matches a client wins, in this order)."""


@dataclass(frozen=True)
class Visibility:
    """Which exposed tool names a caller may see: ``client`` None means everything;
    :data:`NOTHING` (client :data:`UNAUTHENTICATED`) is a caller whose key matched no client."""

    client: str | None
    globs: tuple[str, ...] = ("*",)

    def allows(self, exposed: str) -> bool:
        """Whether ``exposed`` matches one of the globs."""
        return self.client is None or any(fnmatchcase(exposed, g) for g in self.globs)

    @property
    def authenticated(self) -> bool:
        """False for a caller whose key matched no configured client."""
        return self.client != UNAUTHENTICATED


EVERYTHING = Visibility(None)
NOTHING = Visibility(UNAUTHENTICATED, ())


def bearer(headers: Any) -> str:
    """The bearer token of ``Authorization`` (empty when absent)."""
    given = headers.get("authorization", "") or ""
    return given[7:].strip() if given.lower().startswith("bearer ") else ""


def presented_keys(headers: Any) -> list[str]:
    """The non-empty keys a request presents, in :data:`KEY_HEADERS` order."""
    keys = [bearer(headers)]
    keys += [(headers.get(name, "") or "").strip() for name in KEY_HEADERS[1:]]
    return [k for k in keys if k]


def authenticate(config: McpConfig, read_env: EnvReader, headers: Any) -> Visibility | None:
    """The caller's visibility: :data:`EVERYTHING` when no client is configured, the matching
    client's otherwise, None when clients are configured and no presented key matches one.
    Every comparison is constant-time (``hmac.compare_digest``), and every configured key is
    compared whether or not an earlier one matched."""
    if not config.clients:
        return EVERYTHING
    keys = [(c, read_env(c.key_env)) for c in config.clients]
    for token in presented_keys(headers):
        given = token.encode()
        match: McpClient | None = None
        for client, key in keys:
            if key and hmac.compare_digest(given, key.encode()) and match is None:
                match = client
        if match is not None:
            return Visibility(match.name, tuple(match.tools))
    return None


def caller(config: McpConfig, read_env: EnvReader, headers: Any) -> Visibility:
    """The visibility of a chat turn's caller (for the server-side tool loop): as
    :func:`authenticate`, with :data:`NOTHING` for a key that matches no client."""
    found = authenticate(config, read_env, headers)
    return NOTHING if found is None else found


def from_request(config: McpConfig, request: Any) -> Visibility:
    """The visibility stored on the request by the ``/mcp`` ASGI app (fails closed: nothing
    when clients are configured and the request carries none)."""
    state = getattr(request, "scope", {}).get("state") or {} if request is not None else {}
    found = state.get(STATE_KEY)
    if isinstance(found, Visibility):
        return found
    return EVERYTHING if not config.clients else NOTHING
