"""The transcript in PostgreSQL: the ``turns`` table of :mod:`gateway.transcript` in a shared
database, so several gateway instances write one transcript (the spend ledger, ``turnstile
logs``, the console read it whichever instance served the turn).

Chosen by a ``postgresql://`` (or ``postgres://``) transcript location; the writer
(:class:`gateway.transcript.TranscriptWriter`) is the same — group commit, back-pressure, one
transaction per batch — only the statements and the connection differ. Blocking psycopg calls
run on the writer's store thread, never on the event loop.
"""

from __future__ import annotations

from typing import Any

PG_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS turns (
    request_id      TEXT PRIMARY KEY,
    ts              DOUBLE PRECISION NOT NULL,
    client_dialect  TEXT NOT NULL,
    requested_model TEXT,
    deployment      TEXT,
    api             TEXT,
    stream          BIGINT NOT NULL,
    status          BIGINT NOT NULL,
    stop            TEXT,
    input_tokens    BIGINT,
    output_tokens   BIGINT,
    cache_read_tokens  BIGINT,
    cache_write_tokens BIGINT,
    reasoning_tokens   BIGINT,
    usage_estimated BIGINT,
    cost_usd        DOUBLE PRECISION,
    latency_ms      DOUBLE PRECISION,
    guard_outcome   TEXT,
    repairs         TEXT,
    withheld        TEXT,
    attempts        TEXT,
    error           TEXT,
    request         TEXT,
    response        TEXT,
    key_id          TEXT,
    team_id         TEXT,
    session_id      TEXT
);
CREATE INDEX IF NOT EXISTS turns_ts ON turns (ts);
"""


SCHEMA_LOCK = 0x7475726E73  # "turns": the advisory lock held while the table is created or migrated


def is_postgres_url(location: object) -> bool:
    """True when a transcript location names PostgreSQL (``postgresql://`` / ``postgres://``)."""
    return isinstance(location, str) and location.lower().startswith(("postgresql://", "postgres://"))


class PostgresTranscript:
    """One psycopg connection holding the ``turns`` table (created when missing; the
    ``added_columns`` — ``(name, SQL type)``, :data:`gateway.transcript.ADDED_COLUMNS` — added to
    a table made before them, then the ``indexes``, :data:`gateway.transcript.ADDED_INDEXES`).

    ``write`` runs a batch's statements in one transaction; a unique-key clash raises
    :attr:`duplicate` (``psycopg.errors.UniqueViolation``), a value the column cannot hold
    raises one of :attr:`unwritable` (``psycopg.DataError``)."""

    marks = "%s"

    def __init__(
        self, url: str, added_columns: tuple[tuple[str, str], ...] = (), indexes: tuple[str, ...] = ()
    ) -> None:
        import psycopg

        self.duplicate: tuple[type[BaseException], ...] = (psycopg.errors.UniqueViolation,)
        self.unwritable: tuple[type[BaseException], ...] = (
            psycopg.errors.UniqueViolation,
            psycopg.DataError,
            OverflowError,
        )
        self.conn = psycopg.connect(url, connect_timeout=10)
        with self.conn.transaction():
            # Instances starting together on a fresh database: CREATE TABLE IF NOT EXISTS is not
            # safe under concurrency (a duplicate pg_type row), so one creates at a time.
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            self.conn.execute(PG_SCHEMA_SQL)
            for name, kind in added_columns:  # a transcript made before them gets them
                self.conn.execute(f"ALTER TABLE turns ADD COLUMN IF NOT EXISTS {name} {kind}".encode())
            for sql in indexes:
                self.conn.execute(sql.encode())

    def write(self, statements: list[tuple[str, list[Any]]]) -> None:
        """Run ``statements`` in one transaction (rolled back when one fails)."""
        with self.conn.transaction():
            for sql, params in statements:
                self.conn.execute(sql.encode(), params)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def recent(url: str, limit: int = 20) -> list[dict[str, Any]]:
    """The ``limit`` most recent turns (newest first) as dicts of the ``turns`` columns.
    Raises ``psycopg.Error`` when the database is unreachable or holds no transcript."""
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(url, connect_timeout=10, row_factory=dict_row) as conn:
        return list(conn.execute("SELECT * FROM turns ORDER BY ts DESC LIMIT %s", (limit,)).fetchall())
