"""``GET /ui/deployments``: every configured deployment with its health as this gateway process
sees it (circuit state, cooldown left, failures in a row, latency: the routing health board,
:mod:`routers.health`), its turns, errors and spend of the last 24 hours (the transcript), and
the aliases with their routing policy and tiers.

Health is in-process state: with ``--workers N`` each worker keeps its own board, and the page
shows the board of the worker that answered (its process id is on the page).
"""

from __future__ import annotations

import os
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.console.overview_query import NOT_A_STEP
from gateway.console.transcript_reader import TranscriptReader
from gateway.console.web import render, state

DAY_S = 86_400


def health_rows(gw: Any, recent: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per configured deployment: name, api, model, enabled or why not, circuit state,
    cooldown left (s), failures in a row, failures and successes, latency EWMA (ms), why it is
    skipped now (or None), and ``recent`` (its last-24-hour totals, when it had turns)."""
    board = gw.routing.health if gw.routing is not None else None
    now = board.clock() if board is not None else 0.0
    out = []
    for dep in gw.config.deployments:
        h = board.entries.get(dep.name) if board is not None else None
        out.append(
            {
                "name": dep.name,
                "api": dep.api,
                "model": dep.model,
                "enabled": dep.name in gw.table.deployments,
                "disabled": gw.table.disabled.get(dep.name),
                "state": board.state(dep.name) if board is not None else "closed",
                "cooldown_s": max(0.0, h.cooldown_until - now) if h is not None else 0.0,
                "consecutive_failures": h.consecutive_failures if h is not None else 0,
                "failures": h.failures if h is not None else 0,
                "successes": h.successes if h is not None else 0,
                "ewma_ms": h.ewma_ms if h is not None else None,
                "unavailable": board.unavailable(dep.name) if board is not None else None,
                "recent": recent.get(dep.name),
            }
        )
    return out


async def recent_totals(reader: TranscriptReader, since: float) -> dict[str, dict[str, Any]]:
    """Deployment -> ``{turns, errors, cost, latency_ms}`` of the turns since ``since``."""
    rows = await reader.rows(
        "SELECT t.deployment AS deployment, COUNT(*) AS turns, "
        "SUM(CASE WHEN t.status >= 400 THEN 1 ELSE 0 END) AS errors, COALESCE(SUM(t.cost_usd), 0) AS cost, "
        "AVG(t.latency_ms) AS latency_ms "
        f"FROM turns t WHERE t.ts >= ? AND {NOT_A_STEP} AND t.deployment IS NOT NULL GROUP BY t.deployment",
        [since],
    )
    return {r["deployment"]: r for r in rows}


async def deployments_page(request: Request) -> Response:
    """``GET /ui/deployments``."""
    gw = request.app.state.gateway
    st = state(request)
    recent = await recent_totals(st.reader, time.time() - DAY_S)
    board = gw.routing.health if gw.routing is not None else None
    aliases = [
        {
            "name": a.name,
            "deployments": a.deployments,
            "enabled": gw.table.aliases.get(a.name, []),
            "disabled": gw.table.disabled_aliases.get(a.name),
            "policy": a.routing.policy if a.routing else "ordered",
            "tiers": a.routing.tiers if a.routing else {},
        }
        for a in gw.config.models
    ]
    return render(
        request,
        "deployments.html",
        title="Deployments",
        section="deployments",
        rows=health_rows(gw, recent),
        aliases=aliases,
        retry_tokens=board.budget.tokens if board is not None else None,
        retry_cap=board.budget.cap if board is not None else None,
        pid=os.getpid(),
    )
