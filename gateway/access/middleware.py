"""Virtual keys on the endpoints that are not turns: ``GET /v1/models``, token counts, stored
responses, the session API...

Turns are judged by the access layer (:mod:`gateway.layers.access`); :class:`KeyCheck`
judges every other HTTP request the same way (:meth:`gateway.access.identity.Identity.admit`),
except those that judge callers themselves or need none: ``/health``, ``/admin`` (the admin
key), ``/mcp``, ``/sse`` and ``/messages/`` (virtual keys, then ``mcp.clients``), ``/metrics``
(the admin key or a virtual key) and ``/ui`` (the console: the admin key's log-in). Gemini's
``?key=`` counts as ``x-goog-api-key``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.access.identity import Identity, may_hold_key
from gateway.errors import TurnstileError

EXEMPT = ("/health", "/admin/", "/mcp", "/sse", "/messages/", "/metrics", "/ui")
"""Path prefixes :class:`KeyCheck` leaves to their own checks."""


def caller_headers(scope: Scope) -> Headers:
    """The request's headers, with Gemini's ``?key=`` as ``x-goog-api-key`` when that header
    is absent."""
    headers = Headers(scope=scope)
    if "x-goog-api-key" in headers or b"key=" not in scope.get("query_string", b""):
        return headers
    keys = parse_qs(scope["query_string"].decode("latin-1")).get("key")
    if not keys:
        return headers
    mutable = MutableHeaders(raw=list(headers.raw))
    mutable["x-goog-api-key"] = keys[0]
    return Headers(raw=mutable.raw)


class KeyCheck:
    """ASGI middleware: a non-turn request whose caller's key is refused gets the refusal
    rendered by ``refuse(path, error) -> (status, JSON body)`` (the path's dialect)."""

    def __init__(self, app: ASGIApp, refuse: Callable[[str, TurnstileError], tuple[int, bytes]]) -> None:
        self.app = app
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        identity: Identity | None = None
        if scope["type"] == "http" and not scope["path"].startswith(EXEMPT):
            gw: Any = getattr(scope["app"].state, "gateway", None)
            identity = gw.identity if gw is not None else None
        if identity is not None:
            headers = caller_headers(scope)
            if identity.required or may_hold_key(headers):
                try:
                    await identity.admit(headers)
                except TurnstileError as err:
                    status, body = self.refuse(scope["path"], err)
                    await send(
                        {
                            "type": "http.response.start",
                            "status": status,
                            "headers": [
                                (b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"www-authenticate", b"Bearer"),
                            ],
                        }
                    )
                    await send({"type": "http.response.body", "body": body})
                    return
        await self.app(scope, receive, send)
