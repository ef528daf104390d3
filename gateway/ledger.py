"""The spend ledger: what each key, team, model and deployment spent, read from the transcript
(one source of truth: every turn's row holds its cost, tokens, outcome, key and team).

A turn's own row holds its whole cost (a tool loop's answer carries the usage summed over its
steps); the rows of its steps (``<request id>.step<n>``) repeat those costs piece by piece and
are left out of every sum here.

The transcript is the SQLite file ``server.db_path`` or, with a PostgreSQL ``storage.url``, that
database (:mod:`gateway.transcript_pg`); reads run in a thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any, Literal

from gateway.config import GatewayConfig
from gateway.transcript_pg import is_postgres_url

GroupBy = Literal["key", "team", "model", "deployment"]
GROUP_COLUMNS: dict[str, str] = {
    "key": "key_id",
    "team": "team_id",
    "model": "requested_model",
    "deployment": "deployment",
}
_NOT_A_STEP = "request_id NOT LIKE '%.step%'"


def transcript_location(config: GatewayConfig) -> str:
    """Where the transcript is: a PostgreSQL ``storage.url`` (several instances, one ledger),
    else the SQLite file ``server.db_path``."""
    url = config.storage.url
    return url if url and is_postgres_url(url) else str(config.server.db_path)


def _query(location: str, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    if is_postgres_url(location):
        import psycopg
        from psycopg.rows import dict_row

        with psycopg.connect(location, connect_timeout=10, row_factory=dict_row) as pg:
            return list(pg.execute(sql.replace("%", "%%").replace("?", "%s").encode(), params).fetchall())
    if not Path(location).is_file():
        return []
    conn = sqlite3.connect(f"file:{Path(location).resolve()}?mode=ro", uri=True, timeout=30.0)
    try:
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        except sqlite3.OperationalError as err:  # a file made before the key columns
            if "no such" in str(err):
                return []
            raise
    finally:
        conn.close()


def spend_of(location: str, scope: str, start_s: float, reset_s: float | None) -> float:
    """USD spent by ``scope`` (``key:<id>``, ``team:<id>`` or ``deployment:<name>``) in the
    window ``[start_s, reset_s)`` (epoch seconds; ``reset_s`` None: no end). Raises
    ``ValueError`` for another scope kind; ``sqlite3.Error`` / ``psycopg.Error`` from the store."""
    kind, _, ident = scope.partition(":")
    column = {"key": "key_id", "team": "team_id", "deployment": "deployment"}.get(kind)
    if column is None or not ident:
        raise ValueError(f"unknown spend scope {scope!r}")
    sql = f"SELECT COALESCE(SUM(cost_usd), 0) AS usd FROM turns WHERE {column} = ? AND ts >= ?"
    sql += f" AND {_NOT_A_STEP}"
    params: list[Any] = [ident, start_s]
    if reset_s is not None:
        sql += " AND ts < ?"
        params.append(reset_s)
    rows = _query(location, sql, params)
    return float(rows[0]["usd"] or 0.0) if rows else 0.0


def ledger_spend(location: str) -> Any:
    """The limits' spend source over the transcript at ``location``
    (:data:`gateway.limits.backend.SpendSource`)."""

    async def spend(scope: str, period: str, start_s: float, reset_s: float | None) -> float:
        return await asyncio.to_thread(spend_of, location, scope, start_s, reset_s)

    return spend


def spend_report(
    location: str, group_by: GroupBy, since_s: float | None = None, until_s: float | None = None
) -> list[dict[str, Any]]:
    """Spend grouped by ``group_by``, dearest first: ``{group, turns, errors, input_tokens,
    output_tokens, cache_read_tokens, cache_write_tokens, cost_usd}`` per group (``group``
    None for turns without one, e.g. anonymous callers), over ``[since_s, until_s)`` epoch
    seconds. Raises ``KeyError`` for an unknown ``group_by``."""
    column = GROUP_COLUMNS[group_by]
    where = [_NOT_A_STEP]
    params: list[Any] = []
    if since_s is not None:
        where.append("ts >= ?")
        params.append(since_s)
    if until_s is not None:
        where.append("ts < ?")
        params.append(until_s)
    sql = (
        f"SELECT {column} AS grp, COUNT(*) AS turns, "
        "SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END) AS errors, "
        "COALESCE(SUM(input_tokens), 0) AS input_tokens, COALESCE(SUM(output_tokens), 0) AS output_tokens, "
        "COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens, "
        "COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens, "
        "COALESCE(SUM(cost_usd), 0) AS cost_usd "
        f"FROM turns WHERE {' AND '.join(where)} GROUP BY {column} ORDER BY cost_usd DESC, turns DESC"
    )
    out = []
    for r in _query(location, sql, params):
        out.append(
            {
                "group": r["grp"],
                "turns": int(r["turns"]),
                "errors": int(r["errors"] or 0),
                "input_tokens": int(r["input_tokens"]),
                "output_tokens": int(r["output_tokens"]),
                "cache_read_tokens": int(r["cache_read_tokens"]),
                "cache_write_tokens": int(r["cache_write_tokens"]),
                "cost_usd": round(float(r["cost_usd"]), 9),
            }
        )
    return out
