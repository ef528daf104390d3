"""``GET /ui/access``: teams and virtual keys (read-only): their state, allow lists, rate limits
and budgets with what was spent in each budget's current period (from the transcript, as the
limits layer seeds its counters: :mod:`gateway.ledger`).

A key is shown by its id, name and visible prefix (``tsk-`` and 8 characters): the store never
holds the secret, and this page never shows the stored hash. Keys and teams are made and
changed with ``turnstile keys|teams`` or the admin API, not here.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.console.overview_query import NOT_A_STEP
from gateway.console.transcript_reader import TranscriptReader
from gateway.console.web import render, state
from gateway.limits.periods import period_window


async def period_spend(
    reader: TranscriptReader, column: str, starts: dict[str, float]
) -> dict[tuple[str, str], float]:
    """``(period, key or team id) -> USD`` spent since each period's start in ``starts``
    (period -> epoch seconds), grouped by ``column`` (``key_id`` or ``team_id``)."""
    out: dict[tuple[str, str], float] = {}
    for period, since in starts.items():
        rows = await reader.rows(
            f"SELECT t.{column} AS owner, COALESCE(SUM(t.cost_usd), 0) AS usd FROM turns t "
            f"WHERE t.ts >= ? AND t.{column} IS NOT NULL AND {NOT_A_STEP} GROUP BY t.{column}",
            [since],
        )
        for r in rows:
            out[(period, r["owner"])] = float(r["usd"])
    return out


def budget_rows(
    owner: Any, spent: dict[tuple[str, str], float], resets: dict[str, float | None]
) -> list[dict[str, Any]]:
    """Each budget of ``owner`` (a key or a team) with what was spent in its period (USD), the
    share of it, and when the period resets (epoch seconds; None: never)."""
    out = []
    for b in owner.budgets:
        used = spent.get((b.period, owner.id), 0.0)
        out.append(
            {
                "period": b.period,
                "usd": b.usd,
                "hard": b.hard,
                "spent": used,
                "share": used / b.usd if b.usd else None,
                "resets": resets.get(b.period),
            }
        )
    return out


async def keys_page(request: Request) -> Response:
    """``GET /ui/access``."""
    st = state(request)
    store = getattr(request.app.state, "access", None)
    keys = await store.list_keys() if store is not None else []
    teams = await store.list_teams() if store is not None else []
    tz = st.config.limits.timezone
    now = datetime.now(UTC)
    periods = {b.period for o in (*keys, *teams) for b in o.budgets}
    windows = {p: period_window(now, p, tz) for p in periods}  # type: ignore[arg-type]
    starts = {p: w[0].timestamp() for p, w in windows.items()}
    resets = {p: (w[1].timestamp() if w[1] is not None else None) for p, w in windows.items()}
    key_spend = await period_spend(st.reader, "key_id", starts) if starts else {}
    team_spend = await period_spend(st.reader, "team_id", starts) if starts else {}
    team_names = {t.id: t.name for t in teams}
    wall = time.time()
    return render(
        request,
        "keys.html",
        title="Keys and teams",
        section="access",
        teams=[{"team": t, "budgets": budget_rows(t, team_spend, resets)} for t in teams],
        keys=[
            {
                "key": k,
                "team": team_names.get(k.team_id or "", k.team_id),
                "state": "revoked"
                if k.revoked_at
                else "expired"
                if k.expires_at is not None and k.expires_at <= wall
                else "disabled"
                if not k.enabled
                else "active",
                "budgets": budget_rows(k, key_spend, resets),
            }
            for k in keys
        ],
        auth=request.app.state.gateway.identity is not None,
        timezone=tz,
    )
