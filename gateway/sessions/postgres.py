"""PostgreSQL backend of the session store (for several gateway instances sharing sessions).

Uses psycopg 3 (sync connection in a worker thread, like the SQLite backend). Appends lock the
session row (``SELECT ... FOR UPDATE``) so concurrent appends from several instances chain
correctly. Migrations run under a transaction-scoped advisory lock.
"""

from __future__ import annotations

from typing import Any

from gateway.sessions.store import SqlSessionStore

_MIGRATION_LOCK = 0x7475726E  # "turn"


class PostgresSessionStore(SqlSessionStore):
    """Session store in the PostgreSQL database at ``url`` (``postgresql://host:port/db``).

    ``schema``, when given, is created if missing and used as the ``search_path`` (tests use a
    fresh schema each).
    """

    dialect = "postgres"
    placeholder = "%s"
    null_safe_eq = "IS NOT DISTINCT FROM"

    def __init__(self, url: str, *, schema: str | None = None, readonly: bool = False) -> None:
        super().__init__(url, readonly=readonly)
        self.schema = schema

    def _connect(self) -> Any:
        import psycopg

        from gateway.errors import TurnstileError

        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
        except psycopg.OperationalError as err:
            raise TurnstileError(f"cannot connect to the session store {self.url}: {err}") from err
        if self.schema:
            if not self.readonly:
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(f'SET search_path TO "{self.schema}"')
        if self.readonly:
            conn.execute("SET default_transaction_read_only = on")
        return conn

    def _begin(self, cur: Any) -> None:
        cur.execute("BEGIN")

    def _has_table(self, cur: Any, name: str) -> bool:
        rows = self._q(cur, "SELECT to_regclass(?) IS NOT NULL", (name,))
        return bool(rows[0][0])

    def _lock_session(self, cur: Any, session_id: str) -> None:
        cur.execute("SELECT id FROM sessions WHERE id = %s FOR UPDATE", (session_id,))
        cur.fetchall()

    def _migrate(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        super()._migrate(cur)
