"""Read access to the transcript for the console: one connection, queries in a worker thread.

The transcript is the ``turns`` table of :mod:`gateway.transcript` in the SQLite file
``server.db_path`` (opened read-only: ``mode=ro``; the writer keeps it in WAL mode, so reading
never blocks a write) or, with a PostgreSQL ``storage.url``, that database
(:mod:`gateway.transcript_pg`, autocommit: every query sees the rows committed so far). Queries
are written once with ``?`` markers and :attr:`TranscriptReader.dialect`-specific snippets
(:mod:`gateway.console.turn_query`); a query runs in a worker thread (``asyncio.to_thread``),
never on the event loop, one at a time per reader.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any, Literal

import structlog

from gateway.transcript_pg import is_postgres_url

log = structlog.get_logger("turnstile.console")

Dialect = Literal["sqlite", "postgres"]


class TranscriptReader:
    """Queries over the transcript at ``location`` (a file path or a ``postgresql://`` URL).

    The connection is opened on the first query and kept; a PostgreSQL connection that broke
    is opened again once per query. :meth:`rows` raises ``sqlite3.Error`` / ``psycopg.Error``
    for a query the store refuses."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.dialect: Dialect = "postgres" if is_postgres_url(location) else "sqlite"
        self._conn: Any = None
        self._lock = threading.Lock()

    def _open(self) -> Any:
        if self.dialect == "postgres":
            import psycopg
            from psycopg.rows import dict_row

            return psycopg.connect(self.location, connect_timeout=10, autocommit=True, row_factory=dict_row)
        path = Path(self.location).resolve()
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False, timeout=30.0)
        conn.row_factory = sqlite3.Row
        return conn

    def _sql(self, sql: str) -> str:
        return sql if self.dialect == "sqlite" else sql.replace("%", "%%").replace("?", "%s")

    def _run(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        with self._lock:
            if self.dialect == "sqlite" and not Path(self.location).is_file():
                return []  # no turn was ever recorded here
            for attempt in (1, 2):
                if self._conn is None:
                    self._conn = self._open()
                try:
                    cursor = self._conn.execute(self._sql(sql), params)
                    return [dict(r) for r in cursor.fetchall()]
                except Exception as err:
                    if attempt == 1 and self.dialect == "postgres" and _broken(err):
                        log.warning("console_transcript_reconnect", error=str(err)[:200])
                        self._close_conn()
                        continue
                    raise
        raise AssertionError("unreachable")

    async def rows(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        """The rows of ``sql`` (``?`` markers) with ``params``, as dicts of column name to value."""
        return await asyncio.to_thread(self._run, sql, params)

    def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # closing a broken connection: nothing left to release
                log.debug("console_transcript_close_failed", exc_info=True)

    async def close(self) -> None:
        """Close the connection (the next query opens another)."""

        def close() -> None:
            with self._lock:
                self._close_conn()

        await asyncio.to_thread(close)


def _broken(err: Exception) -> bool:
    """Whether ``err`` says the PostgreSQL connection itself is gone (worth one reconnect)."""
    import psycopg

    return isinstance(err, psycopg.OperationalError | psycopg.InterfaceError)
