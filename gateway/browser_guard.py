"""Web pages cannot use a gateway that serves clients without a key: DNS rebinding and
cross-site requests refused by ``Host``, ``Origin`` and ``Content-Type``.

A gateway on loopback without client keys spends the provider keys for any local process —
and, unguarded, for any web page its user opens: the page can ``POST`` to
``http://127.0.0.1:4000/v1/chat/completions`` (a "simple" cross-origin request needs no
permission from the server: ``text/plain`` or a form, no preflight), or rebind a name of its own
to 127.0.0.1 and read the answers as same-origin. SDKs and CLIs send no ``Origin`` and a JSON
``Content-Type``, browsers always send ``Origin`` on a cross-origin ``POST``, and a rebound page
sends its own name as ``Host``. So :class:`BrowserGuard`, installed when clients need no key
(``access.auth`` not ``required``):

* **Host**: on a request that arrived on a loopback address, ``Host`` must be a loopback name
  or address (``localhost``, ``127.0.0.0/8``, ``[::1]``; any port) or one of
  ``server.allowed_hosts`` (``name`` for any port, or ``name:port``); elsewhere it is checked
  only when ``server.allowed_hosts`` is set. Else 421 (every path but the MCP transports',
  which check it themselves with the same list).
* **Origin**: a request carrying an ``Origin`` (a browser's) is refused 403 unless it is one of
  ``server.allowed_origins`` (``scheme://host[:port]``) — except on the console ``/ui`` (its
  own CSRF rules: :mod:`gateway.console.login`) and the MCP transports.
* **Content-Type**: a ``POST`` must say JSON (``application/json`` or ``application/*+json``),
  else 415; not the console's forms nor the MCP transports (the MCP SDK requires JSON itself).

The MCP transports (``/mcp``, ``/sse``, ``/messages/``) get the same host list and allowed
origins through :func:`mcp_security` (the MCP SDK's ``TransportSecuritySettings``), which allows
loopback origins too (a local MCP inspector is a web page). In-process test clients (an ASGI
``server`` that is not an IP address) and Unix sockets are not checked: no browser reaches them.
A refusal is one log line and an error in the path's dialect; it is not a turn (no transcript
row: a page could fill the transcript).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.config import GatewayConfig
from gateway.errors import TurnstileError
from gateway.exposure import is_loopback, send_json

log = structlog.get_logger("turnstile.exposure")

MCP_PATHS = ("/mcp", "/sse", "/messages/")
"""The MCP transports: their own Host/Origin checks (:func:`mcp_security`)."""
CONSOLE = "/ui"
LOOPBACK_HOST_PATTERNS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGIN_PATTERNS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")


class ForeignHost(TurnstileError):
    """``Host`` names neither this machine nor a name in ``server.allowed_hosts`` (HTTP 421): a
    page of another site reached the gateway through a name it rebound."""

    status = 421
    kind = "permission"


class ForeignOrigin(TurnstileError):
    """The request came from a web page whose origin is not in ``server.allowed_origins``
    (HTTP 403)."""

    status = 403
    kind = "permission"


class NotJson(TurnstileError):
    """A ``POST`` whose ``Content-Type`` is not JSON (HTTP 415)."""

    status = 415
    kind = "invalid_request"


def _split_host(host: str) -> str:
    """The name of a ``Host`` value, without its port (``[::1]:4000`` -> ``[::1]``)."""
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def host_allowed(host: str | None, allowed: frozenset[str], loopback: bool) -> bool:
    """Whether a ``Host`` value is acceptable: a loopback name (when ``loopback``: the request
    arrived on a loopback address) or a name (any port) or ``name:port`` of ``allowed``
    (lower case). No ``Host`` at all is acceptable: every browser sends one, so a request
    without it (HTTP/1.0, a raw ASGI caller) is no rebound page."""
    if not host:
        return True
    host = host.lower()
    name = _split_host(host)
    if loopback and is_loopback(name):
        return True
    return name in allowed or host in allowed


def _arrived_on(local: object) -> bool | None:
    """For an ASGI ``server`` host: True a loopback IP, False another IP, None not an IP (an
    in-process test client's name, a Unix socket): not checked."""
    if local is None:
        return None
    text = str(local).strip("[]")
    try:
        ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    return is_loopback(text)


def _is_json(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))


_API, _CONSOLE, _MCP = range(3)
MAX_VERDICTS = 1024
"""Verdicts remembered (by local address, Host, Origin, Content-Type, method and kind of path);
past it they are forgotten at once and made again."""


class BrowserGuard:
    """ASGI middleware of the module docstring; ``refuse(path, error) -> (status, JSON body)``
    renders a refusal in the path's dialect. Per request: one pass over the headers and one
    dict lookup — the verdict for a combination of the values it reads is made once."""

    def __init__(
        self, app: ASGIApp, config: GatewayConfig, refuse: Callable[[str, TurnstileError], tuple[int, bytes]]
    ) -> None:
        self.app = app
        self.refuse = refuse
        self.hosts = frozenset(h.lower() for h in config.server.allowed_hosts)
        self.origins = frozenset(o.lower().rstrip("/") for o in config.server.allowed_origins)
        self._verdicts: dict[tuple[Any, ...], TurnstileError | None] = {}

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """The inner app's coroutine for a request that passes (no coroutine of its own: the
        pass-through costs one header pass and one dict lookup), else the refusal's."""
        if scope["type"] != "http":
            return self.app(scope, receive, send)
        headers = dict(scope["headers"])  # a browser sends each of these once
        host = headers.get(b"host")
        origin = headers.get(b"origin")
        content_type = headers.get(b"content-type")
        server = scope.get("server")
        path: str = scope["path"]
        kind = _MCP if path.startswith(MCP_PATHS) else _CONSOLE if path.startswith(CONSOLE) else _API
        key = (server[0] if server else None, host, origin, content_type, scope["method"], kind)
        try:
            err = self._verdicts[key]
        except KeyError:
            if len(self._verdicts) >= MAX_VERDICTS:
                self._verdicts.clear()
            err = self._verdicts[key] = self._judge(*key)
        if err is None:
            return self.app(scope, receive, send)
        return self._refuse(scope, send, err, host, origin)

    async def _refuse(
        self, scope: Scope, send: Send, err: TurnstileError, host: bytes | None, origin: bytes | None
    ) -> None:
        path = scope["path"]
        status, body = self.refuse(path, err)
        log.warning(
            "browser_request_refused",
            path=path,
            reason=type(err).__name__,
            host=host.decode("latin-1") if host else None,
            origin=origin.decode("latin-1") if origin else None,
            client=(scope.get("client") or ("?",))[0],
        )
        await send_json(send, status, body)

    def _judge(
        self,
        local: object,
        host: bytes | None,
        origin: bytes | None,
        content_type: bytes | None,
        method: str,
        kind: int,
    ) -> TurnstileError | None:
        """The refusal of a request with these values (see the module docstring), or None."""
        loopback = _arrived_on(local)
        if loopback is None or kind == _MCP:  # in process, a Unix socket; the MCP transports' own checks
            return None
        named = host.decode("latin-1") if host is not None else None
        if (loopback or self.hosts) and not host_allowed(named, self.hosts, loopback):
            return ForeignHost(
                f"Host {named or '(none)'!r} is not this gateway's: a web page may have rebound its name "
                "to this address; add the name to server.allowed_hosts if it is yours",
                param="Host",
            )
        if kind == _CONSOLE:  # the console's own CSRF rules
            return None
        if origin is not None and origin.decode("latin-1").lower().rstrip("/") not in self.origins:
            return ForeignOrigin(
                f"requests from web pages are refused (Origin {origin.decode('latin-1')!r}): this gateway "
                "spends its provider keys for clients without a key; allow the origin in "
                "server.allowed_origins, or require keys (access.auth: required)",
                param="Origin",
            )
        if method == "POST" and not _is_json(content_type):
            got = content_type.decode("latin-1") if content_type else "none"
            return NotJson(f"Content-Type must be application/json (got {got!r})", param="Content-Type")
        return None


def mcp_security(config: GatewayConfig) -> TransportSecuritySettings | None:
    """The MCP transports' DNS-rebinding protection (the MCP SDK's settings): on a loopback
    listening address (``server.host``), or with ``server.allowed_hosts`` set, ``Host`` must be
    a loopback one (on loopback) or an allowed one, and ``Origin`` a loopback one or one of
    ``server.allowed_origins``; None (unchecked) otherwise."""
    loopback = is_loopback(config.server.host)
    extra = config.server.allowed_hosts
    if not loopback and not extra:
        return None
    hosts = list(LOOPBACK_HOST_PATTERNS) if loopback else []
    for h in extra:
        hosts += [h] if _split_host(h) != h else [h, f"{h}:*"]
    origins = [*LOOPBACK_ORIGIN_PATTERNS, *config.server.allowed_origins]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )
