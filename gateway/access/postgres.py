"""PostgreSQL backend of the access store (keys shared by several gateway instances).

psycopg 3, a sync connection used from a worker thread (as the session store's backend);
migrations run under a transaction-scoped advisory lock, so instances starting together
migrate once.
"""

from __future__ import annotations

from typing import Any

from gateway.access.store import SqlAccessStore
from gateway.errors import TurnstileError

_MIGRATION_LOCK = 0x6B657973  # "keys"


class PostgresAccessStore(SqlAccessStore):
    """Access store in the PostgreSQL database at ``url`` (``postgresql://host:port/db``).
    ``schema``, when given, is created if missing and used as the ``search_path`` (tests)."""

    dialect = "postgres"
    placeholder = "%s"

    def __init__(self, url: str, *, schema: str | None = None) -> None:
        super().__init__(url)
        self.schema = schema

    def _connect(self) -> Any:
        import psycopg

        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
        except psycopg.OperationalError as err:
            raise TurnstileError(f"cannot connect to the access store {self.url}: {err}") from err
        if self.schema:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(f'SET search_path TO "{self.schema}"')
        return conn

    def _begin(self, cur: Any) -> None:
        cur.execute("BEGIN")

    def _lock_migrations(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
