"""``GET /ui/turns/{request_id}``: one turn as the transcript holds it: what was asked and
answered (internal schema, readable and as JSON), the guards' outcome and findings (repairs,
dropped fields, withheld tool calls), the routing decision and its reason, every upstream
attempt, tokens and cost; its tool-loop steps' rows, or, for a step, the turn it belongs to.

The stored request holds only what was new in the turn (the history before it is in earlier
rows and in the session log: :func:`gateway.layers.record.turn_part`); the page says how many
earlier messages were left out.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.console.messages import conversation
from gateway.console.turn_query import one, parent_id, steps
from gateway.console.web import NotFound, render, state

HISTORY_OMITTED_KEY = "turnstile.history_omitted"
"""Metadata key of a stored request: how many earlier messages were left out (the record layer's
``HISTORY_OMITTED_KEY``)."""


def loads(text: str | None) -> Any:
    """A stored JSON column as a value (None when empty; the text itself when it is not JSON)."""
    if not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def split_attempts(attempts: Any) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(routing decision, upstream attempts)`` of a row's ``attempts`` list: the decision is
    the entry of ``kind: route`` (:mod:`gateway.layers.route`), the attempts the others."""
    if not isinstance(attempts, list):
        return None, []
    route = next((a for a in attempts if isinstance(a, dict) and a.get("kind") == "route"), None)
    return route, [a for a in attempts if isinstance(a, dict) and a is not route]


async def turn_page(request: Request) -> Response:
    """``GET /ui/turns/{request_id}``."""
    rid = request.path_params["request_id"]
    st = state(request)
    row = await one(st.reader, rid)
    if row is None:
        raise NotFound(f"no turn {rid!r} in the transcript", param="request_id")
    req, resp = loads(row.get("request")), loads(row.get("response"))
    route, attempts = split_attempts(loads(row.get("attempts")))
    parent = parent_id(rid)
    metadata = req.get("metadata") if isinstance(req, dict) else None
    offered = req.get("tools") if isinstance(req, dict) else None
    tools: list[Any] = offered if isinstance(offered, list) else []
    stored = loads(row.get("withheld"))
    withheld: list[Any] = stored if isinstance(stored, list) else []
    return render(
        request,
        "turn.html",
        title=f"Turn {rid}",
        section="turns",
        row=row,
        messages=conversation(req, resp),
        omitted=metadata.get(HISTORY_OMITTED_KEY, 0) if isinstance(metadata, dict) else 0,
        tools=[t.get("name") for t in tools if isinstance(t, dict)],
        route=route,
        attempts=attempts,
        repairs=loads(row.get("repairs")) or [],
        withheld=[w for w in withheld if isinstance(w, dict)],
        steps=await steps(st.reader, rid) if parent is None else [],
        parent=parent,
        request_json=row.get("request"),
        response_json=row.get("response"),
    )
