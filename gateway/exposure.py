"""Who may reach the gateway: anonymous clients only on a loopback address.

A gateway holds the operator's provider keys; served on an address other machines can reach,
with no client authentication, it spends them for anyone who can connect. So:

* at start (``turnstile serve``, and :func:`gateway.server.create_app` for the address it can
  see), a non-loopback listening address is refused unless clients must present a virtual
  key (``access.auth: required``, its default off loopback: :func:`client_auth_configured`)
  or the operator allows anonymous clients explicitly (``--allow-anonymous``,
  ``server.allow_anonymous``, ``TURNSTILE_ALLOW_ANONYMOUS``);
* while serving, :class:`LoopbackOnly` refuses (HTTP 403) a request that arrived on a
  non-loopback local address, for servers that bind an address the app factory never sees
  (``uvicorn --factory --host 0.0.0.0``: uvicorn passes no host to the factory).

Loopback means ``127.0.0.0/8``, ``::1`` (also IPv4-mapped ``::ffff:127.x.x.x``) and the name
``localhost``; ``0.0.0.0`` and ``::`` (every interface) are not loopback.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

import structlog
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.config import GatewayConfig, Settings, effective_auth
from gateway.errors import AnonymousExposure

log = structlog.get_logger("turnstile.exposure")

ALLOW_FLAG = "--allow-anonymous"


def client_auth_configured(config: GatewayConfig, host: str | None = None) -> bool:
    """Whether clients must authenticate with a virtual key (``access.auth`` is ``required``,
    explicitly or as the default for ``host``, the listening address; default:
    ``server.host``), so that a non-loopback address does not hand the provider keys to
    anyone. ``mcp.clients`` protects only ``/mcp`` and ``/v1/mcp/tools``, not the chat
    endpoints that spend the provider keys, so it does not count."""
    where = config.server.host if host is None else host
    return effective_auth(config, is_loopback(where)) == "required"


def is_loopback(host: str) -> bool:
    """True for a loopback listening address: ``localhost``, ``127.0.0.0/8``, ``::1`` (with or
    without brackets) and IPv4-mapped ``::ffff:127.x.x.x``. Every other name or address,
    including ``0.0.0.0`` and ``::`` (all interfaces), is not."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        addr = ipaddress.ip_address(name.split("%", 1)[0])  # drop an IPv6 zone id
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped.is_loopback
    return addr.is_loopback


def unusable_host(host: str, *, resolve: bool = True) -> str | None:
    """Why ``host`` (the listening address) cannot be listened on, in one line naming it, or
    None: empty, or with whitespace or control characters (a stray space from a shell or a
    YAML value), or, with ``resolve``, neither an IP address nor a name this machine resolves
    (``getaddrinfo``, as uvicorn will; a name is looked up, which may take a moment)."""
    where = "check --host, TURNSTILE_HOST or server.host"
    if not host or any(c.isspace() or not c.isprintable() for c in host):
        return f"cannot listen on host {host!r}: it is empty or has whitespace or control characters; {where}"
    if resolve:
        try:
            socket.getaddrinfo(host.strip("[]"), None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except (OSError, UnicodeError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            return (
                f"cannot listen on host {host!r}: not an IP address or a host name this machine "
                f"resolves ({reason}); {where}"
            )
    return None


def anonymous_allowed(config: GatewayConfig, settings: Settings, flag: bool = False) -> bool:
    """Whether the operator allowed anonymous clients on a non-loopback address: the
    ``--allow-anonymous`` ``flag``, ``TURNSTILE_ALLOW_ANONYMOUS`` (through ``settings``) or
    ``server.allow_anonymous`` in ``config``."""
    return flag or settings.allow_anonymous or config.server.allow_anonymous


def refusal(host: str) -> str:
    """The one line that says why serving on ``host`` is refused and the two ways out."""
    return (
        f"refusing to serve on {host}: it is not a loopback address and clients need no key "
        "(access.auth is not required), so anyone who can reach it could spend this gateway's "
        "provider keys; serve on 127.0.0.1, require virtual keys (access.auth: required, the "
        f"default off loopback), or pass {ALLOW_FLAG} (server.allow_anonymous: true, "
        "TURNSTILE_ALLOW_ANONYMOUS=1) to serve anonymous clients on purpose"
    )


def check_listen_address(host: str, config: GatewayConfig, settings: Settings, *, flag: bool = False) -> bool:
    """Judge serving on ``host`` (the listening address). Returns True when it serves
    anonymous clients beyond this machine because the operator allowed it (the caller warns:
    :func:`warn_anonymous`), False when it serves only this machine or clients authenticate.

    Raises :class:`gateway.errors.AnonymousExposure` (message: :func:`refusal`) for a
    non-loopback ``host`` without client authentication and without permission.
    """
    if is_loopback(host) or client_auth_configured(config, host):
        return False
    if not anonymous_allowed(config, settings, flag):
        raise AnonymousExposure(refusal(host), param="server.host")
    return True


def warn_anonymous(host: str) -> None:
    """Log, at start, that ``host`` serves anonymous clients beyond this machine."""
    log.warning(
        "serving_anonymous_clients",
        host=host,
        hint=f"no client authentication: anyone who can reach {host} spends the provider keys "
        f"({ALLOW_FLAG} or server.allow_anonymous allowed it)",
    )


def _local_host_is_loopback(host: str | None) -> bool:
    """Whether the host of an ASGI ``scope["server"]`` (the local address a request arrived
    on) is a loopback one. None (no ``server``: a Unix socket) and a value that is not an IP
    address (an in-process test client's ``testserver``) are local: no network peer can
    arrive there."""
    if host is None:
        return True
    host = str(host).strip("[]")
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return True
    return is_loopback(host)


class LoopbackOnly:
    """ASGI middleware: a request that arrived on a non-loopback local address is answered
    403 by ``refuse(path, address) -> (status, JSON body bytes)`` (the path's dialect) and
    logged; everything else passes. Installed when anonymous clients are not allowed beyond
    this machine; the verdict is cached per local address (one dict lookup per request)."""

    def __init__(self, app: ASGIApp, refuse: Callable[[str, str], tuple[int, bytes]]) -> None:
        self.app = app
        self.refuse = refuse
        self._verdicts: dict[str | None, bool] = {}  # local host -> loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            server = scope.get("server")
            host = server[0] if server else None
            ok = self._verdicts.get(host)
            if ok is None:
                ok = self._verdicts[host] = _local_host_is_loopback(host)
            if not ok:
                address = str(host)
                status, body = self.refuse(scope["path"], address)
                log.warning(
                    "anonymous_request_refused",
                    local_address=address,
                    path=scope["path"],
                    client=(scope.get("client") or ("?",))[0],
                )
                await send_json(send, status, body)
                return
        await self.app(scope, receive, send)


async def send_json(send: Send, status: int, body: bytes) -> None:
    """Answer an ASGI request with ``body`` (JSON bytes) and ``status``: a refusal written before
    any handler runs (the middlewares of this module and :mod:`gateway.browser_guard`)."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
