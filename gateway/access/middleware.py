"""Virtual keys on the endpoints that are not turns: ``GET /v1/models``, token counts, stored
responses, the session API, ``/metrics``...

Turns are judged by the access layer (:mod:`gateway.layers.access`); :class:`KeyCheck`
judges every other HTTP request the same way (:func:`judge`, then
:meth:`gateway.access.identity.Identity.admit`), except those that judge callers themselves or
need none: ``/health``, ``/.well-known/`` (public metadata), ``/admin`` (the admin key),
``/mcp``, ``/sse`` and ``/messages/`` (JWTs, virtual keys, then ``mcp.clients``) and ``/ui``
(the console: the admin key's log-in). Gemini's ``?key=`` counts as ``x-goog-api-key``.

A request presenting the admin key (``access.admin_key_env``;
:func:`mcp_servers.clients.is_admin_key`) passes as the admin, whatever ``access.auth`` says:
it reads ``/metrics`` where keys are required, every model, and every session and stored
response. What was decided is left in the request's ``scope["state"]``
(:data:`gateway.sessions.owners.STATE_PRINCIPAL`: the caller's principal or None,
:data:`~gateway.sessions.owners.STATE_ADMIN`), where the endpoints read their caller. With an
admin key configured, a presented key that is refused counts as a wrong admin key against the
client address (:mod:`gateway.access.guessing`: 429 with ``retry-after`` past the limit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.access.guessing import KeyGuesses, client_address
from gateway.access.identity import Identity, may_hold_key
from gateway.errors import AuthenticationRequired, TurnstileError
from gateway.sessions.owners import STATE_ADMIN, STATE_PRINCIPAL
from mcp_servers.clients import is_admin_key, presented_keys

EXEMPT = ("/health", "/admin/", "/mcp", "/sse", "/messages/", "/ui", "/.well-known/", "/v0.1/")
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


async def judge(scope: Scope) -> None:
    """Decide who the caller of the HTTP request ``scope`` is and leave it in
    ``scope["state"]`` (see the module docstring): the admin when it presents the admin key,
    else its virtual key's principal (None: anonymous, or keys off). Raises the identity's
    :class:`gateway.errors.AuthenticationRequired` for a missing key where keys are required
    and for a refused one."""
    state = scope.get("state")
    if state is None:
        state = scope["state"] = {}
    app_state = scope["app"].state
    headers = caller_headers(scope)
    state[STATE_PRINCIPAL] = None
    admin_key = getattr(app_state, "admin_key", None)
    guesses: KeyGuesses | None = getattr(app_state, "key_guesses", None) if admin_key else None
    keyed = guesses is not None and bool(presented_keys(headers))
    if keyed:  # an address past its wrong keys is refused before any key is compared
        assert guesses is not None
        await guesses.check(client_address(scope), scope["path"], getattr(app_state, "access", None))
    if is_admin_key(headers, admin_key):
        if guesses is not None:
            guesses.succeeded(client_address(scope))
        state[STATE_ADMIN] = True
        return
    gw: Any = getattr(app_state, "gateway", None)
    identity: Identity | None = getattr(gw, "identity", None)
    if identity is not None and (identity.required or may_hold_key(headers)):
        try:
            state[STATE_PRINCIPAL] = await identity.admit(headers, request_id=state.get("request_id"))
        except AuthenticationRequired:
            if keyed:  # neither the admin key nor a key of a caller: a wrong key, counted
                assert guesses is not None
                await guesses.failed(client_address(scope), scope["path"], getattr(app_state, "access", None))
            raise


def judged(scope: Scope) -> bool:
    """Whether :func:`judge` ran for ``scope`` (a request :class:`KeyCheck` saw)."""
    state = scope.get("state")
    return state is not None and STATE_PRINCIPAL in state


class KeyCheck:
    """ASGI middleware: a non-turn request whose caller's key is refused gets the refusal
    rendered by ``refuse(path, error) -> (status, JSON body)`` (the path's dialect)."""

    def __init__(self, app: ASGIApp, refuse: Callable[[str, TurnstileError], tuple[int, bytes]]) -> None:
        self.app = app
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith(EXEMPT):
            try:
                await judge(scope)
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
                            *_retry_after(err),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _retry_after(err: TurnstileError) -> list[tuple[bytes, bytes]]:
    """The ``retry-after`` header of a refusal that has one (too many wrong admin keys)."""
    wait = getattr(err, "retry_after_s", None)
    return [(b"retry-after", str(int(wait)).encode())] if wait is not None else []
