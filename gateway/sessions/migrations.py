"""Schema migrations of the session store, per SQL dialect.

Migrations only ever ADD (tables, columns, indexes, triggers): a migration once released is
never edited, and none drops, renames or rewrites anything. Each applied migration is recorded
in ``schema_migrations`` with the SHA-256 of its statements; opening a store whose recorded
checksum differs from the code's raises :class:`~gateway.errors.ConfigError` ("migration N
was rewritten"). ``schema_migrations`` is itself append-only, like the entries.

Append-only entries are enforced in the database: triggers raise on UPDATE and DELETE of
``session_entries`` rows (and on TRUNCATE in PostgreSQL), whoever issues the statement.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

APPEND_ONLY_MESSAGE = "turnstile: session entries are append-only"


@dataclass(frozen=True)
class Migration:
    """One migration: ``version`` (1, 2, ...), a short ``name`` and its SQL statements."""

    version: int
    name: str
    statements: tuple[str, ...]

    @property
    def checksum(self) -> str:
        """SHA-256 hex digest of the statements (joined by a NUL byte)."""
        return hashlib.sha256("\0".join(self.statements).encode()).hexdigest()


MIGRATIONS_TABLE = {
    "sqlite": """CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at REAL NOT NULL)""",
    "postgres": """CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL,
        applied_at DOUBLE PRECISION NOT NULL)""",
}

SQLITE: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions and append-only entries",
        (
            """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            created_at REAL NOT NULL,
            leaf_id TEXT,
            forked_from_session TEXT,
            forked_from_entry TEXT,
            title TEXT)""",
            """CREATE TABLE session_entries (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            parent_id TEXT REFERENCES session_entries(id),
            type TEXT NOT NULL,
            created_at REAL NOT NULL,
            payload TEXT NOT NULL)""",
            "CREATE INDEX session_entries_session ON session_entries (session_id, seq)",
            "CREATE INDEX sessions_created ON sessions (created_at)",
            f"""CREATE TRIGGER session_entries_no_update BEFORE UPDATE ON session_entries
            BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END""",
            f"""CREATE TRIGGER session_entries_no_delete BEFORE DELETE ON session_entries
            BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END""",
            """CREATE TRIGGER schema_migrations_no_update BEFORE UPDATE ON schema_migrations
            BEGIN SELECT RAISE(ABORT, 'turnstile: schema_migrations is append-only'); END""",
            """CREATE TRIGGER schema_migrations_no_delete BEFORE DELETE ON schema_migrations
            BEGIN SELECT RAISE(ABORT, 'turnstile: schema_migrations is append-only'); END""",
        ),
    ),
)

POSTGRES: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions and append-only entries",
        (
            """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            created_at DOUBLE PRECISION NOT NULL,
            leaf_id TEXT,
            forked_from_session TEXT,
            forked_from_entry TEXT,
            title TEXT)""",
            """CREATE TABLE session_entries (
            seq BIGSERIAL PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            parent_id TEXT REFERENCES session_entries(id),
            type TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            payload TEXT NOT NULL)""",
            "CREATE INDEX session_entries_session ON session_entries (session_id, seq)",
            "CREATE INDEX sessions_created ON sessions (created_at)",
            f"""CREATE FUNCTION turnstile_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION '{APPEND_ONLY_MESSAGE} (% on %)', TG_OP, TG_TABLE_NAME
                    USING ERRCODE = 'restrict_violation';
            END $$""",
            """CREATE TRIGGER session_entries_no_update_delete BEFORE UPDATE OR DELETE ON session_entries
            FOR EACH ROW EXECUTE FUNCTION turnstile_append_only()""",
            """CREATE TRIGGER session_entries_no_truncate BEFORE TRUNCATE ON session_entries
            FOR EACH STATEMENT EXECUTE FUNCTION turnstile_append_only()""",
            """CREATE TRIGGER schema_migrations_no_update_delete BEFORE UPDATE OR DELETE ON schema_migrations
            FOR EACH ROW EXECUTE FUNCTION turnstile_append_only()""",
        ),
    ),
)

MIGRATIONS: dict[str, tuple[Migration, ...]] = {"sqlite": SQLITE, "postgres": POSTGRES}

ALLOWED_STATEMENT = r"^\s*(CREATE\s|ALTER\s+TABLE\s+\w+\s+ADD\s)"
FORBIDDEN_STATEMENT = r"\b(DROP|RENAME|ALTER\s+COLUMN)\b|^\s*(UPDATE|DELETE|TRUNCATE)\b"
"""Regexes every migration statement must / must not match (checked by the tests): migrations
add only."""
