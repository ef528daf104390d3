"""HTTP routes of the session store (OpenAI-style error bodies).

* ``GET  /v1/sessions?limit=&offset=``            — sessions, newest first (limit 1..1000)
* ``GET  /v1/sessions/{id}``                       — the session, its path (root→leaf) and all
  its own entries (``?leaf=<entry>`` reads another branch)
* ``POST /v1/sessions/{id}/fork``                  — body ``{"entry_id"?, "session_id"?, "title"?}``
* ``POST /v1/sessions/{id}/entries/{entry}/label`` — body ``{"label": str | null}``; the entry
  must be on the session's tree (404 naming it otherwise)
* ``POST /v1/sessions/{id}/compact``               — body ``{"deployment"?}``: compact for that
  deployment's window (default: the compaction deployment's own window)
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.errors import InvalidRequest, TurnstileError
from gateway.sessions.reserved import check_client_session_id
from gateway.sessions.store import MAX_LIST_LIMIT, MAX_LIST_OFFSET, SessionStore


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
    """Sessions, newest first (``limit`` 1..1000, default 50; ``offset`` >= 0)."""
    try:
        limit = _int(request, "limit", 50, 1, MAX_LIST_LIMIT)
        offset = _int(request, "offset", 0, 0, MAX_LIST_OFFSET)
        items = await _store(request).list_sessions(limit, offset)
        return _json({"object": "list", "data": [s.public() for s in items]})
    except TurnstileError as err:
        return _error(err)


async def get_session(request: Request) -> Response:
    """One session: row, path from the root to the leaf (or ``?leaf=``), and its own entries."""
    sid = request.path_params["session_id"]
    try:
        store = _store(request)
        info = await store.get_session(sid)
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
        info = await _store(request).fork(sid, entry_id, new_session_id=new_sid, title=title)
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
        entry = await _store(request).label(sid, eid, label)
        return _json(entry.public(), 201)
    except TurnstileError as err:
        return _error(err)


async def compact_session(request: Request) -> Response:
    """Compact now (reason ``request``) for a deployment's window."""
    from gateway.context import budget_for
    from gateway.schema import Request as TurnRequest
    from gateway.sessions.turns import compactor_for, window_of

    sid = request.path_params["session_id"]
    gw = request.app.state.gateway
    try:
        body = await _body(request)
        store = _store(request)
        await store.get_session(sid)
        compactor = compactor_for(gw, sid)
        if compactor is None:
            raise InvalidRequest(
                "no sessions.compaction_deployment is configured and enabled", param="deployment"
            )
        name = _opt_str(body, "deployment") or gw.config.sessions.compaction_deployment
        dep = gw.table.deployments.get(name)
        if dep is None:
            raise InvalidRequest(f"unknown or disabled deployment {name!r}", param="deployment")
        budget = budget_for(
            TurnRequest(model=dep.name, messages=[]),
            window_of(dep) or 128_000,
            reserved_output=dep.max_output_tokens or 4096,
        )
        before = len(await store.entries(sid))
        await compactor(budget, "request")
        own = await store.entries(sid)
        added = own[before:]
        return _json({"compacted": bool(added), "entry": added[-1].public() if added else None})
    except TurnstileError as err:
        return _error(err)


ROUTES = [
    Route("/v1/sessions", list_sessions, methods=["GET"]),
    Route("/v1/sessions/{session_id}", get_session, methods=["GET"]),
    Route("/v1/sessions/{session_id}/fork", fork_session, methods=["POST"]),
    Route("/v1/sessions/{session_id}/entries/{entry_id}/label", label_entry, methods=["POST"]),
    Route("/v1/sessions/{session_id}/compact", compact_session, methods=["POST"]),
]
