"""``GET /ui/audit``: the confirmation and audit log.

* **Tool calls** (the MCP audit, :mod:`mcp_servers.store`): every trust decision on a
  ``tools/call`` — run, asked and approved or declined, refused, arguments refused — with what
  it would do (``action``: "will run ..."), the tier and why, and the client; and every change
  to a server's tools (registered, pending review, accepted). Filtered by ``server``, ``tool``
  and ``outcome``, a page of :data:`PAGE_SIZE` at a time (``?before=<seq>``).
* **Access** (the access store's audit, :mod:`gateway.access`): keys and teams made, changed,
  revoked, rotated and deleted, and refused callers; the newest :data:`ACCESS_SHOWN`.

Nothing here approves or declines anything: a confirmation is answered by the MCP client that
was asked, and this page only shows what was decided.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.console.turn_query import MAX_VALUE_CHARS
from gateway.console.web import render
from gateway.errors import InvalidRequest

PAGE_SIZE = 50
"""Tool-call audit rows per page."""

ACCESS_SHOWN = 200
"""Access audit events shown (the newest)."""

OUTCOMES = (
    "allowed",
    "approved",
    "declined (decline)",
    "declined (cancel)",
    "refused",
    "invalid_arguments",
    "needs_approval_no_confirmer",
    "needs_approval_no_elicitation",
    "registered",
    "added_pending_review",
    "changed_pending_review",
    "accepted",
)
"""Outcomes the MCP audit writes (offered as the filter's suggestions)."""


def _text(request: Request, name: str) -> str | None:
    value = (request.query_params.get(name) or "").strip()
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidRequest(f"{name}: at most {MAX_VALUE_CHARS} characters", param=name)
    return value or None


async def audit_page(request: Request) -> Response:
    """``GET /ui/audit``."""
    filters = {name: _text(request, name) for name in ("server", "tool", "outcome")}
    raw = request.query_params.get("before")
    if raw is not None and not raw.isdigit():
        raise InvalidRequest("before: a row number of this log", param="before")
    before = int(raw) if raw else None
    mcp = getattr(request.app.state, "mcp", None)
    rows: list[dict[str, Any]] = []
    if mcp is not None:
        rows = await asyncio.to_thread(mcp.registry.store.audit_page, PAGE_SIZE + 1, before, **filters)
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    access = getattr(request.app.state, "access", None)
    events = await access.audit_events(ACCESS_SHOWN) if access is not None else []
    return render(
        request,
        "audit.html",
        title="Audit",
        section="audit",
        rows=rows,
        filters={k: v for k, v in filters.items() if v is not None},
        next_before=rows[-1]["seq"] if more and rows else None,
        first_page=before is None,
        outcomes=OUTCOMES,
        events=events,
    )
