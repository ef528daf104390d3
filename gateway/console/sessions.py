"""``GET /ui/sessions`` (the sessions, newest first, a page of :data:`PAGE_SIZE` at a time) and
``GET /ui/sessions/{id}``: one session's tree (:mod:`gateway.console.session_tree`): its own
entries with branches, compaction entries and labels, the current path and leaf marked, where
it was forked from and the sessions forked from it, and the transcript's turns bound to it.

Read from the session store the gateway runs with (SQLite, or PostgreSQL by ``sessions.url``);
nothing here writes to it.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gateway.console import session_tree
from gateway.console.turn_query import Cursor, TurnFilter, page
from gateway.console.web import NotFound, render, secure_headers, state
from gateway.errors import InvalidRequest
from gateway.sessions.store import MAX_LIST_OFFSET, SessionNotFound, check_session_id

PAGE_SIZE = 50
"""Sessions per page of the list."""

TURNS_SHOWN = 50
"""The newest turns of a session listed on its page."""


def _store(request: Request):  # type: ignore[no-untyped-def]
    store = getattr(request.app.state.gateway, "sessions", None)
    if store is None:
        raise NotFound("the session store is not open")
    return store


async def sessions_page(request: Request) -> Response:
    """``GET /ui/sessions?offset=N`` (``?id=<session>`` goes to that session's page)."""
    wanted = (request.query_params.get("id") or "").strip()
    if wanted:
        check_session_id(wanted, "id")
        return secure_headers(RedirectResponse(f"/ui/sessions/{wanted}", status_code=303))
    raw = request.query_params.get("offset", "0")
    if not raw.isdigit() or int(raw) > MAX_LIST_OFFSET:
        raise InvalidRequest(f"offset: an integer from 0 to {MAX_LIST_OFFSET}", param="offset")
    offset = int(raw)
    sessions = await _store(request).list_sessions(PAGE_SIZE + 1, offset)
    return render(
        request,
        "sessions.html",
        title="Sessions",
        section="sessions",
        sessions=sessions[:PAGE_SIZE],
        offset=offset,
        more=len(sessions) > PAGE_SIZE,
        page_size=PAGE_SIZE,
    )


async def session_page(request: Request) -> Response:
    """``GET /ui/sessions/{session_id}``."""
    sid = request.path_params["session_id"]
    store = _store(request)
    try:
        info = await store.get_session(sid)
    except SessionNotFound as err:
        raise NotFound(f"no session {sid!r}", param="session") from err
    entries = await store.entries(sid)
    path = await store.path(sid) if info.leaf_id else []
    forked = await store.forks(sid) if hasattr(store, "forks") else []
    at: dict[str, list[str]] = {}
    for f in forked:
        if f.forked_from_entry:
            at.setdefault(f.forked_from_entry, []).append(f.id)
    roots, cut = session_tree.build(entries, {e.id for e in path}, info.leaf_id, at)
    inherited = [e for e in path if e.session_id != sid]
    turns, more = await page(state(request).reader, TurnFilter(session=sid), None, TURNS_SHOWN)
    return render(
        request,
        "session.html",
        title=f"Session {sid}",
        section="sessions",
        info=info,
        roots=roots,
        cut=cut,
        max_entries=session_tree.MAX_ENTRIES,
        entry_count=len(entries),
        inherited=len(inherited),
        forks=forked,
        turns=turns,
        more_turns=isinstance(more, Cursor),
    )
