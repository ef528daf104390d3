"""``GET /ui/turns``: the request log, newest first, searchable by request id, model,
deployment, outcome, guard outcome, tool name, session, virtual key and team
(:mod:`gateway.console.turn_query`), a page of :data:`~gateway.console.turn_query.PAGE_SIZE`
rows at a time (``?before=<cursor>``).

The form works without script (a plain ``GET``); with htmx, a search or a page link replaces
only the results (``#results``) and puts the search in the address bar (``HX-Push-Url``: the
filters that are set, not the form's empty fields). A virtual key may be given by its id
(``key-...``) or its name.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.console.render import query
from gateway.console.turn_query import GUARD_OUTCOMES, OUTCOMES, Cursor, TurnFilter, page
from gateway.console.web import render, state


async def key_id_of(request: Request, value: str) -> str:
    """The id of the virtual key ``value`` names (its id, or its name when one key has it);
    ``value`` itself when none does."""
    if value.startswith("key-"):
        return value
    store = getattr(request.app.state, "access", None)
    if store is None:
        return value
    named = [k.id for k in await store.list_keys() if k.name == value]
    return named[0] if len(named) == 1 else value


def suggestions(request: Request) -> dict[str, list[str]]:
    """Values the form offers as it is typed in (``<datalist>``): the configured model names,
    the deployments, and the MCP tools' exposed names."""
    gw = request.app.state.gateway
    mcp = getattr(request.app.state, "mcp", None)
    tools = sorted(t.exposed for t in mcp.registry.tools(include_unavailable=True)) if mcp is not None else []
    return {
        "models": sorted({*gw.table.aliases, *gw.table.deployments, *(a.name for a in gw.config.models)}),
        "deployments": sorted(d.name for d in gw.config.deployments),
        "tools": tools,
    }


async def turns_page(request: Request) -> Response:
    """``GET /ui/turns``."""
    st = state(request)
    flt = TurnFilter.parse(request.query_params)
    if flt.key is not None:
        flt = TurnFilter(**{**flt.query(), "key": await key_id_of(request, flt.key)})
    before = Cursor.parse(request.query_params.get("before"))
    started = time.perf_counter()
    rows, next_page = await page(st.reader, flt, before)
    elapsed_ms = (time.perf_counter() - started) * 1000
    context: dict[str, Any] = {
        "rows": rows,
        "flt": flt,
        "filters": flt.query(),
        "next_page": next_page.token() if next_page is not None else None,
        "first_page": before is None,
        "outcomes": list(OUTCOMES),
        "guards": list(GUARD_OUTCOMES),
        "elapsed_ms": elapsed_ms,
        "suggest": suggestions(request),
    }
    headers = None
    if request.headers.get("hx-request") == "true":  # the address bar shows the search, not the empty fields
        headers = {"hx-push-url": query("/ui/turns", flt.query(), before=before.token() if before else None)}
    return render(request, "turns.html", title="Requests", section="turns", headers=headers, **context)
