"""Per-client visibility of MCP tools, prompts and resources (``mcp.clients`` in the
configuration).

A caller is matched to a configured client by the API key it presents, wherever its SDK puts
it: ``Authorization: Bearer <key>`` (OpenAI SDK, MCP clients), ``x-api-key`` (Anthropic SDK),
``x-goog-api-key`` (Google's SDK). Each presented key is compared in constant time with the
value of every client's ``key_env``. With no clients configured, every caller sees everything.
The client's globs (``fnmatch`` over exposed names) decide what it sees:

* **tools**: the exposed tools it sees and may call on every path that lists or runs a tool:
  ``/mcp`` and its legacy SSE twin ``/sse`` (``tools/list``, ``tools/call``),
  ``GET /v1/mcp/tools`` and the server-side tool loop of chat requests;
* **prompts**: exposed like tools (``<server>__<prompt>``) and filtered by the same globs on
  ``/mcp`` (``prompts/list``, ``prompts/get``, completions of a prompt's arguments);
* **resources** (and resource templates) belong to a server: a client sees those of server
  ``S`` (``resources/list``, ``resources/templates/list``, ``resources/read``, subscriptions
  and their updates, completions of a template) when it may see the *server*
  (:meth:`Visibility.sees_server`): one of its globs covers every name of ``S`` (it matches
  the text ``S__*`` itself: ``*``, ``S__*``, ``S*``), or allows one of ``S``'s registered tools
  (available or not). With ``mcp.namespaced`` off only the second rule, or ``*``, can hold.

Anything hidden is answered exactly like something that does not exist (the same error text,
the same empty list). That includes the MCP SDK's own check of a ``tools/call``'s
``Mcp-Param-*`` headers against the tool's input schema, which runs before the gateway's
handler sees the call and knows only the tool's name: the ``/mcp`` app puts the caller in
:data:`CALLER` for it, and a hidden tool has no schema there (:func:`current_caller`).

Virtual keys (``tsk-...``, :mod:`gateway.access`), when the gateway reads them, come first:
a caller presenting one is judged by it alone (:data:`KeyAuth`, :func:`admit`), and its
allowed MCP servers and tools replace this map; a caller presenting none falls back to
``mcp.clients`` (unless the gateway requires virtual keys).

The key only authenticates the caller to the gateway: upstream requests are made by the
gateway's own ``Client`` per upstream, with the credentials of the upstream's config, and carry
nothing from the caller's HTTP request.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from mcp_servers.config import McpClient, McpConfig
from mcp_servers.naming import SEPARATOR

if TYPE_CHECKING:
    from mcp_servers.upstream import EnvReader

STATE_KEY = "turnstile_mcp_client"
SUBJECT_TOKEN_KEY = "turnstile_mcp_subject_token"
"""Where the ``/mcp`` app leaves the caller's bearer JWT in the request's state: only for an
upstream's per-user delegation (RFC 8693 token exchange), never sent upstream itself."""


def subject_token(request: Any) -> str | None:
    """The caller's bearer JWT the ``/mcp`` app left on ``request`` (None: none)."""
    state = getattr(request, "scope", {}).get("state") or {} if request is not None else {}
    found = state.get(SUBJECT_TOKEN_KEY)
    return found if isinstance(found, str) else None


UNAUTHENTICATED = "<unauthenticated>"
KEY_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")
"""Where a caller's key may be: OpenAI's and MCP's bearer token, Anthropic's and Google's key
headers (the first one that matches a client wins, in this order)."""


@dataclass(frozen=True)
class Visibility:
    """Which exposed names (tools, prompts) a caller may see: ``client`` None means everything;
    :data:`NOTHING` (client :data:`UNAUTHENTICATED`) is a caller whose key matched no client."""

    client: str | None
    globs: tuple[str, ...] = ("*",)

    def allows(self, exposed: str) -> bool:
        """Whether ``exposed`` matches one of the globs."""
        return self.client is None or any(fnmatchcase(exposed, g) for g in self.globs)

    def sees_server(self, server: str, tool_names: Iterable[str]) -> bool:
        """Whether the caller may see ``server``'s resources: always when ``client`` is None;
        else when a glob matches the text ``<server>__*`` itself (it covers every name of the
        server) or allows one of ``tool_names`` (the exposed names of the server's tools)."""
        if self.client is None:
            return True
        whole = f"{server}{SEPARATOR}*"
        return any(fnmatchcase(whole, g) for g in self.globs) or any(self.allows(n) for n in tool_names)

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


ADMIN_KEY_HEADERS = ("authorization", "x-api-key", "x-admin-key")
"""Where the admin key may be presented: ``Authorization: Bearer``, ``x-api-key`` (the
Anthropic SDK's header) or ``x-admin-key``."""


def is_admin_key(headers: Any, expected: str | None) -> bool:
    """Whether a request presents the admin key ``expected`` (None or empty: no admin key is
    configured, nobody is the admin) in any of :data:`ADMIN_KEY_HEADERS`; each value is
    compared in constant time (the admin key is a plaintext secret)."""
    if not expected:
        return False
    want = expected.encode()
    found = False
    for given in (bearer(headers), *((headers.get(n, "") or "").strip() for n in ADMIN_KEY_HEADERS[1:])):
        if given and hmac.compare_digest(given.encode(), want):
            found = True
    return found


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


KeyAuth = Callable[[Any], Awaitable["Visibility | None"]]
"""The gateway's virtual keys (:meth:`gateway.access.identity.Identity.mcp_visibility`):
``await keys(headers)`` is the visibility of the caller's virtual key, None when it presents
none and keys are optional; raises :class:`gateway.errors.AuthenticationRequired` for a key
refused (unknown, revoked, expired, disabled) or missing where keys are required."""


async def admit(
    config: McpConfig, read_env: EnvReader, headers: Any, keys: KeyAuth | None
) -> Visibility | None:
    """The caller's visibility on ``/mcp``, ``/sse`` and ``/v1/mcp/tools``: its virtual key's
    when ``keys`` judges it by one, else :func:`authenticate`'s; None: refused (401)."""
    if keys is not None:
        from gateway.errors import AuthenticationRequired

        try:
            found = await keys(headers)
        except AuthenticationRequired:
            return None
        if found is not None:
            return found
    return authenticate(config, read_env, headers)


def caller(config: McpConfig, read_env: EnvReader, headers: Any) -> Visibility:
    """The visibility of a chat turn's caller (for the server-side tool loop): as
    :func:`authenticate`, with :data:`NOTHING` for a key that matches no client."""
    found = authenticate(config, read_env, headers)
    return NOTHING if found is None else found


CALLER: ContextVar[Visibility | None] = ContextVar("turnstile_mcp_caller", default=None)
"""The visibility of the ``/mcp`` request being handled, set by its ASGI app around the MCP
SDK's handling (for hooks the SDK calls without the request: its ``Mcp-Param-*`` check); on the
legacy SSE transport, the session's (:mod:`mcp_servers.legacy_sse`)."""


def current_caller(config: McpConfig) -> Visibility:
    """The visibility in :data:`CALLER` (fails closed: nothing when clients are configured
    and no ``/mcp`` request set one)."""
    found = CALLER.get()
    if found is not None:
        return found
    return EVERYTHING if not config.clients else NOTHING


def from_request(config: McpConfig, request: Any) -> Visibility:
    """The visibility stored on the request by the ``/mcp`` ASGI app (fails closed: nothing
    when clients are configured and the request carries none)."""
    state = getattr(request, "scope", {}).get("state") or {} if request is not None else {}
    found = state.get(STATE_KEY)
    if isinstance(found, Visibility):
        return found
    return EVERYTHING if not config.clients else NOTHING
