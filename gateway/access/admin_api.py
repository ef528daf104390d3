"""The admin API of virtual keys and teams (JSON over HTTP).

Every request needs the admin key: the value of the environment variable named by
``access.admin_key_env`` (the one admin key, which governs the MCP registry's ``/admin/mcp/*``
too), presented as ``Authorization: Bearer <key>``, ``x-api-key`` or ``x-admin-key``
(:func:`mcp_servers.clients.is_admin_key`: compared in constant time; unlike a virtual key, it
is a stored plaintext secret). Without it, or with that variable unset or empty, every request
is a 401. Wrong admin keys are counted per client address (:mod:`gateway.access.guessing`:
logged, audited, then 429 with ``retry-after`` for a while).

* ``POST /admin/keys`` — make a key; the answer (201) holds ``secret``, the plaintext key,
  the only time it is shown: ``{"key": {...}, "secret": "tsk-..."}``.
* ``GET /admin/keys`` (``?team=<id or name>``) — ``{"data": [key, ...]}``, never a secret
  or a hash; ``GET /admin/keys/{id}`` — one key.
* ``PATCH /admin/keys/{id}`` — change fields (:data:`gateway.access.store.KEY_FIELDS`).
* ``DELETE /admin/keys/{id}`` — revoke it; ``POST /admin/keys/{id}/rotate`` — a new secret.
* ``POST /admin/teams``, ``GET /admin/teams``, ``GET``/``PATCH``/``DELETE /admin/teams/{id}``.
* ``GET /admin/audit`` (``?limit=``, default 100, at most 1000) — the newest audit events.

Errors: ``{"error": {"type", "message", "param"}}`` with the error's status (400 a field that
does not validate, 401, 404 an unknown id, 409 a conflict).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from gateway.access.guessing import TooManyKeyGuesses, check_admin_key
from gateway.access.store import AccessStore
from gateway.errors import AuthenticationRequired, InvalidRequest, TurnstileError

ACTOR = "admin-api"


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status, media_type="application/json")


def _error(err: TurnstileError) -> Response:
    response = _json({"error": {"type": err.kind, "message": err.message, "param": err.param}}, err.status)
    if err.status == 401:
        response.headers["www-authenticate"] = "Bearer"
    if isinstance(err, TooManyKeyGuesses):
        response.headers["retry-after"] = str(int(err.retry_after_s))
    return response


async def _check_admin(request: Request) -> None:
    """Raises :class:`AuthenticationRequired` unless the request presents the admin key
    (:class:`TooManyKeyGuesses` for an address that sent too many wrong ones)."""
    expected: str | None = getattr(request.app.state, "admin_key", None)
    if not expected:
        raise AuthenticationRequired(
            "the admin API is closed: no admin key is configured (access.admin_key_env names the "
            "environment variable that holds it)"
        )
    if not await check_admin_key(request, expected):
        raise AuthenticationRequired("the admin API needs the admin key (Authorization: Bearer <admin key>)")


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise InvalidRequest(f"the body is not JSON: {err}", param="body") from err
    if not isinstance(data, dict):
        raise InvalidRequest("the body must be a JSON object", param="body")
    return data


def _name(data: dict[str, Any]) -> str:
    """Pops and returns ``data``'s ``name``; the other fields are checked by the store."""
    for reserved in ("actor", "id", "hash", "prefix", "created_at", "updated_at", "revoked_at"):
        if reserved in data:
            raise InvalidRequest(f"{reserved}: set by the gateway, not by a request", param=reserved)
    name = data.pop("name", None)
    if not isinstance(name, str) or not name.strip():
        raise InvalidRequest("name: a non-empty string is required", param="name")
    return name.strip()


Handler = Callable[[Request, AccessStore], Awaitable[Response]]


def _admin(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` behind the admin key, its errors rendered; every change forgets the
    process's cached key lookups, and with ``redis.url`` every other instance's (a change
    notification, :mod:`gateway.fleet.bus`; without it they see it within
    ``access.cache_ttl_s``)."""

    async def endpoint(request: Request) -> Response:
        try:
            await _check_admin(request)
            store: AccessStore = request.app.state.access
            response = await handler(request, store)
        except TurnstileError as err:
            return _error(err)
        if request.method != "GET":
            gw = request.app.state.gateway
            if gw.identity is not None:
                gw.identity.forget()
            if gw.fleet is not None:  # every other instance forgets its cached lookups too
                await gw.fleet.access_changed(request.url.path)
        return response

    return endpoint


async def create_key(request: Request, store: AccessStore) -> Response:
    data = await _body(request)
    key, secret = await store.create_key(_name(data), actor=ACTOR, **data)
    return _json({"key": key.public(), "secret": secret}, 201)


async def list_keys(request: Request, store: AccessStore) -> Response:
    keys = await store.list_keys(request.query_params.get("team"))
    return _json({"data": [k.public() for k in keys]})


async def get_key(request: Request, store: AccessStore) -> Response:
    return _json((await store.get_key(request.path_params["key_id"])).public())


async def patch_key(request: Request, store: AccessStore) -> Response:
    key = await store.update_key(request.path_params["key_id"], await _body(request), actor=ACTOR)
    return _json(key.public())


async def revoke_key(request: Request, store: AccessStore) -> Response:
    return _json((await store.revoke_key(request.path_params["key_id"], actor=ACTOR)).public())


async def rotate_key(request: Request, store: AccessStore) -> Response:
    key, secret = await store.rotate_key(request.path_params["key_id"], actor=ACTOR)
    return _json({"key": key.public(), "secret": secret})


async def create_team(request: Request, store: AccessStore) -> Response:
    data = await _body(request)
    team = await store.create_team(_name(data), actor=ACTOR, **data)
    return _json(team.model_dump(mode="json"), 201)


async def list_teams(request: Request, store: AccessStore) -> Response:
    return _json({"data": [t.model_dump(mode="json") for t in await store.list_teams()]})


async def get_team(request: Request, store: AccessStore) -> Response:
    return _json((await store.get_team(request.path_params["team_id"])).model_dump(mode="json"))


async def patch_team(request: Request, store: AccessStore) -> Response:
    team = await store.update_team(request.path_params["team_id"], await _body(request), actor=ACTOR)
    return _json(team.model_dump(mode="json"))


async def delete_team(request: Request, store: AccessStore) -> Response:
    team = await store.delete_team(request.path_params["team_id"], actor=ACTOR)
    return _json({"id": team.id, "deleted": True})


async def audit(request: Request, store: AccessStore) -> Response:
    raw = request.query_params.get("limit", "100")
    if not raw.isdigit() or not 1 <= int(raw) <= 1000:
        raise InvalidRequest("limit must be an integer from 1 to 1000", param="limit")
    events = await store.audit_events(int(raw))
    return _json({"data": [e.model_dump(mode="json") for e in events]})


def _epoch(request: Request, name: str) -> float | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return float(raw)
    except ValueError:
        raise InvalidRequest(f"{name} must be epoch seconds (a number), got {raw!r}", param=name) from None


async def spend(request: Request, store: AccessStore) -> Response:
    """``GET /admin/spend?group_by=key|team|model|deployment&since=&until=`` (epoch seconds):
    the spend ledger from the transcript (:func:`gateway.ledger.spend_report`)."""
    import asyncio

    from gateway.ledger import GROUP_COLUMNS, spend_report, transcript_location

    group_by = request.query_params.get("group_by", "key")
    if group_by not in GROUP_COLUMNS:
        raise InvalidRequest(
            f"group_by must be one of {', '.join(GROUP_COLUMNS)}, got {group_by!r}", param="group_by"
        )
    location = transcript_location(request.app.state.gateway.config)
    since, until = _epoch(request, "since"), _epoch(request, "until")
    rows = await asyncio.to_thread(spend_report, location, group_by, since, until)  # type: ignore[arg-type]
    return _json({"group_by": group_by, "since": since, "until": until, "data": rows})


async def _keys(request: Request, store: AccessStore) -> Response:
    return await (create_key if request.method == "POST" else list_keys)(request, store)


async def _key(request: Request, store: AccessStore) -> Response:
    handler = {"GET": get_key, "PATCH": patch_key, "DELETE": revoke_key}[request.method]
    return await handler(request, store)


async def _teams(request: Request, store: AccessStore) -> Response:
    return await (create_team if request.method == "POST" else list_teams)(request, store)


async def _team(request: Request, store: AccessStore) -> Response:
    handler = {"GET": get_team, "PATCH": patch_team, "DELETE": delete_team}[request.method]
    return await handler(request, store)


ROUTES: list[BaseRoute] = [
    Route("/admin/keys", _admin(_keys), methods=["GET", "POST"]),
    Route("/admin/keys/{key_id}", _admin(_key), methods=["GET", "PATCH", "DELETE"]),
    Route("/admin/keys/{key_id}/rotate", _admin(rotate_key), methods=["POST"]),
    Route("/admin/teams", _admin(_teams), methods=["GET", "POST"]),
    Route("/admin/teams/{team_id}", _admin(_team), methods=["GET", "PATCH", "DELETE"]),
    Route("/admin/audit", _admin(audit), methods=["GET"]),
    Route("/admin/spend", _admin(spend), methods=["GET"]),
]
"""The admin routes, for :func:`gateway.server.create_app`."""
