"""HTTP routes of the session store (OpenAI-style error bodies).

Every route sees only the caller's sessions (:mod:`gateway.sessions.owners`: those its virtual
key created; an anonymous caller's, those anonymous callers created; the admin key, all): a
session of another owner answers exactly as an absent one (404).

* ``GET  /v1/sessions?limit=&offset=``            — the caller's sessions, newest first (limit
  1..1000); the admin key sees all of them, or one owner's with ``key_id=`` / ``team_id=``
* ``GET  /v1/sessions/{id}``                       — the session, its path (root→leaf) and all
  its own entries (``?leaf=<entry>`` reads another branch)
* ``POST /v1/sessions/{id}/fork``                  — body ``{"entry_id"?, "session_id"?, "title"?}``
* ``POST /v1/sessions/{id}/entries/{entry}/label`` — body ``{"label": str | null}``; the entry
  must be on the session's tree (404 naming it otherwise)
* ``POST /v1/sessions/{id}/compact``               — body ``{"deployment"?}``: compact for that
  deployment's window (default: the compaction deployment's own window); it calls a model, so
  it is held to the caller's budgets and rate limits and its cost is charged to its key
  (:mod:`gateway.sessions.compact_api`)
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.errors import InvalidRequest, TurnstileError
from gateway.sessions.owners import Caller, fork_owner, request_caller, visible
from gateway.sessions.reserved import check_client_session_id
from gateway.sessions.store import ANY_OWNER, MAX_LIST_LIMIT, MAX_LIST_OFFSET, SessionStore


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def _error(err: TurnstileError) -> Response:
    return _json(
        {
            "error": {
                "message": err.message,
                "type": err.kind,
                "param": getattr(err, "param", None),
                "code": None,
            }
        },
        err.status,
    )


def _caller(request: Request) -> Caller:
    """Who asks (left in the request's state by the key check)."""
    return request_caller(request.scope.get("state"))


def _store(request: Request) -> SessionStore:
    store = getattr(request.app.state.gateway, "sessions", None)
    if store is None:
        raise TurnstileError("sessions are not enabled in this gateway")
    return store


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise InvalidRequest(f"body is not JSON: {err}", param="body") from err
    if not isinstance(data, dict):
        raise InvalidRequest("body must be a JSON object", param="body")
    return data


def _int(request: Request, name: str, default: int, low: int, high: int) -> int:
    """Query parameter ``name`` as an int in ``[low, high]`` (ASCII digits only), else
    :class:`InvalidRequest` naming it."""
    value = request.query_params.get(name)
    if value is None:
        return default
    if not (value.isascii() and value.isdigit()) or len(value) > 12 or not low <= int(value) <= high:
        raise InvalidRequest(f"{name} must be an integer from {low} to {high}", param=name)
    return int(value)


def _opt_str(body: dict[str, Any], name: str) -> str | None:
    """Body field ``name``: a string or absent/null, else :class:`InvalidRequest` naming it."""
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidRequest(f"{name} must be a string or null, not {type(value).__name__}", param=name)
    return value


async def list_sessions(request: Request) -> Response:
    """The caller's sessions, newest first (``limit`` 1..1000, default 50; ``offset`` >= 0);
    for the admin key every session, or one owner's (``key_id``, ``team_id``)."""
    try:
        limit = _int(request, "limit", 50, 1, MAX_LIST_LIMIT)
        offset = _int(request, "offset", 0, 0, MAX_LIST_OFFSET)
        caller = _caller(request)
        key_id: str | None = ANY_OWNER
        team_id: str | None = ANY_OWNER
        if caller.admin:
            key_id = request.query_params.get("key_id", ANY_OWNER)
            team_id = request.query_params.get("team_id", ANY_OWNER)
        else:
            for name in ("key_id", "team_id"):
                if name in request.query_params:
                    raise InvalidRequest(
                        f"{name}: only the admin key lists other owners' sessions", param=name
                    )
            key_id = caller.key_id
        items = await _store(request).list_sessions(limit, offset, key_id=key_id, team_id=team_id)
        return _json({"object": "list", "data": [s.public() for s in items]})
    except TurnstileError as err:
        return _error(err)


async def get_session(request: Request) -> Response:
    """One session: row, path from the root to the leaf (or ``?leaf=``), and its own entries."""
    sid = request.path_params["session_id"]
    try:
        store = _store(request)
        info = await visible(store, sid, _caller(request))
        path = await store.path(sid, request.query_params.get("leaf"))
        own = await store.entries(sid)
        return _json(
            {**info.public(), "path": [e.public() for e in path], "entries": [e.public() for e in own]}
        )
    except TurnstileError as err:
        return _error(err)


async def fork_session(request: Request) -> Response:
    """Fork from an entry (default: the leaf) into a new session."""
    sid = request.path_params["session_id"]
    try:
        body = await _body(request)
        entry_id, new_sid, title = (_opt_str(body, k) for k in ("entry_id", "session_id", "title"))
        if new_sid is not None:
            check_client_session_id(new_sid, "session_id")
        store, caller = _store(request), _caller(request)
        source = await visible(store, sid, caller)
        owner = fork_owner(caller, source)
        info = await store.fork(sid, entry_id, new_session_id=new_sid, title=title, owner=owner)
        return _json(info.public(), 201)
    except TurnstileError as err:
        return _error(err)


async def label_entry(request: Request) -> Response:
    """Label an entry (appends a ``label`` entry)."""
    sid, eid = request.path_params["session_id"], request.path_params["entry_id"]
    try:
        body = await _body(request)
        label = body.get("label")
        if label is not None and not isinstance(label, str):
            raise InvalidRequest("label must be a string or null", param="label")
        store = _store(request)
        await visible(store, sid, _caller(request))
        entry = await store.label(sid, eid, label)
        return _json(entry.public(), 201)
    except TurnstileError as err:
        return _error(err)


async def compact_session(request: Request) -> Response:
    """Compact now (reason ``request``) for a deployment's window, as the caller whose session
    it is: held to its limits, charged to its key (:mod:`gateway.sessions.compact_api`)."""
    from gateway.sessions import compact_api

    sid = request.path_params["session_id"]
    try:
        body = await _body(request)
        return _json(await compact_api.compact(request, _store(request), sid, body))
    except TurnstileError as err:
        response = _error(err)
        for name, value in (getattr(err, "headers", None) or {}).items():  # retry-after, x-ratelimit-*
            response.headers[name] = value
        return response


ROUTES = [
    Route("/v1/sessions", list_sessions, methods=["GET"]),
    Route("/v1/sessions/{session_id}", get_session, methods=["GET"]),
    Route("/v1/sessions/{session_id}/fork", fork_session, methods=["POST"]),
    Route("/v1/sessions/{session_id}/entries/{entry_id}/label", label_entry, methods=["POST"]),
    Route("/v1/sessions/{session_id}/compact", compact_session, methods=["POST"]),
]
