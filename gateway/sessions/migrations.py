"""Schema migrations of the session store, per SQL dialect.

Migrations only ever ADD (tables, columns, indexes, triggers): a migration once released is
never edited, and none drops, renames or rewrites anything. Each applied migration is recorded
in ``schema_migrations`` with the SHA-256 of its statements; opening a store whose recorded
checksum differs from the code's raises :class:`~gateway.errors.ConfigError` ("migration N
was rewritten"). ``schema_migrations`` is itself append-only, like the entries.

Append-only entries are enforced in the database: triggers raise on UPDATE and DELETE of
``session_entries`` rows (and on TRUNCATE in PostgreSQL), whoever issues the statement.
Migration 2 closes the replace paths and guards the session rows:

* SQLite: ``INSERT OR REPLACE`` / ``REPLACE`` deletes the conflicting row without firing
  DELETE triggers (unless ``PRAGMA recursive_triggers`` is on, which the store sets but a
  foreign connection may not), so a BEFORE INSERT trigger raises when the id (or rowid)
  already exists, on ``session_entries``, ``sessions`` and ``schema_migrations``. An upsert
  (``ON CONFLICT DO UPDATE``) fires the same trigger first, and the UPDATE trigger anyway.
* PostgreSQL: ``INSERT ... ON CONFLICT DO UPDATE`` fires the BEFORE UPDATE row trigger of
  migration 1, which raises; nothing to add for the entries.
* ``sessions``: DELETE (and TRUNCATE) raise; UPDATE raises unless only ``leaf_id`` changes and
  the new leaf is an existing entry. The leaf pointer is the one mutable value.

Migration 3 adds who owns a session (:mod:`gateway.sessions.owners`): ``owner_key`` and
``owner_team`` (the virtual key and team of the caller that created it; NULL for an anonymous
caller), written when the row is inserted and never changed (a trigger raises on an UPDATE
that changes either), and an index for the list of one owner's sessions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

APPEND_ONLY_MESSAGE = "turnstile: session entries are append-only"
SESSION_ROW_MESSAGE = "turnstile: sessions are never deleted or replaced; only their leaf pointer changes"
OWNER_MESSAGE = "turnstile: the owner of a session is set when it is created and never changed"


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
    Migration(
        2,
        "no replace of entries; session rows change only their leaf",
        (
            f"""CREATE TRIGGER session_entries_no_replace BEFORE INSERT ON session_entries
            WHEN EXISTS (SELECT 1 FROM session_entries WHERE id = NEW.id)
              OR EXISTS (SELECT 1 FROM session_entries WHERE seq = NEW.seq)
            BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END""",
            f"""CREATE TRIGGER sessions_no_replace BEFORE INSERT ON sessions
            WHEN EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id)
              OR EXISTS (SELECT 1 FROM sessions WHERE rowid = NEW.rowid)
            BEGIN SELECT RAISE(ABORT, '{SESSION_ROW_MESSAGE}'); END""",
            f"""CREATE TRIGGER sessions_no_delete BEFORE DELETE ON sessions
            BEGIN SELECT RAISE(ABORT, '{SESSION_ROW_MESSAGE}'); END""",
            f"""CREATE TRIGGER sessions_only_leaf_changes BEFORE UPDATE ON sessions
            WHEN NEW.rowid IS NOT OLD.rowid OR NEW.id IS NOT OLD.id OR NEW.created_at IS NOT OLD.created_at
              OR NEW.forked_from_session IS NOT OLD.forked_from_session
              OR NEW.forked_from_entry IS NOT OLD.forked_from_entry OR NEW.title IS NOT OLD.title
              OR (NEW.leaf_id IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM session_entries WHERE id = NEW.leaf_id))
            BEGIN SELECT RAISE(ABORT, '{SESSION_ROW_MESSAGE}'); END""",
            """CREATE TRIGGER schema_migrations_no_replace BEFORE INSERT ON schema_migrations
            WHEN EXISTS (SELECT 1 FROM schema_migrations WHERE version = NEW.version)
            BEGIN SELECT RAISE(ABORT, 'turnstile: schema_migrations is append-only'); END""",
        ),
    ),
    Migration(
        3,
        "session owners",
        (
            "ALTER TABLE sessions ADD COLUMN owner_key TEXT",
            "ALTER TABLE sessions ADD COLUMN owner_team TEXT",
            "CREATE INDEX sessions_owner ON sessions (owner_key, created_at)",
            f"""CREATE TRIGGER sessions_owner_fixed BEFORE UPDATE ON sessions
            WHEN NEW.owner_key IS NOT OLD.owner_key OR NEW.owner_team IS NOT OLD.owner_team
            BEGIN SELECT RAISE(ABORT, '{OWNER_MESSAGE}'); END""",
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
    Migration(
        2,
        "session rows change only their leaf",
        (
            f"""CREATE FUNCTION turnstile_session_row_guard() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP <> 'UPDATE' THEN
                    RAISE EXCEPTION '{SESSION_ROW_MESSAGE} (% on %)', TG_OP, TG_TABLE_NAME
                        USING ERRCODE = 'restrict_violation';
                END IF;
                IF (NEW.id, NEW.created_at, NEW.forked_from_session, NEW.forked_from_entry, NEW.title)
                      IS DISTINCT FROM
                      (OLD.id, OLD.created_at, OLD.forked_from_session, OLD.forked_from_entry, OLD.title)
                   OR (NEW.leaf_id IS NOT NULL
                       AND NOT EXISTS (SELECT 1 FROM session_entries WHERE id = NEW.leaf_id)) THEN
                    RAISE EXCEPTION '{SESSION_ROW_MESSAGE} (% on %)', TG_OP, TG_TABLE_NAME
                        USING ERRCODE = 'restrict_violation';
                END IF;
                RETURN NEW;
            END $$""",
            """CREATE TRIGGER sessions_only_leaf_changes BEFORE UPDATE OR DELETE ON sessions
            FOR EACH ROW EXECUTE FUNCTION turnstile_session_row_guard()""",
            """CREATE TRIGGER sessions_no_truncate BEFORE TRUNCATE ON sessions
            FOR EACH STATEMENT EXECUTE FUNCTION turnstile_session_row_guard()""",
            """CREATE TRIGGER schema_migrations_no_truncate BEFORE TRUNCATE ON schema_migrations
            FOR EACH STATEMENT EXECUTE FUNCTION turnstile_append_only()""",
        ),
    ),
    Migration(
        3,
        "session owners",
        (
            "ALTER TABLE sessions ADD COLUMN owner_key TEXT",
            "ALTER TABLE sessions ADD COLUMN owner_team TEXT",
            "CREATE INDEX sessions_owner ON sessions (owner_key, created_at)",
            f"""CREATE FUNCTION turnstile_session_owner_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION '{OWNER_MESSAGE} (% on %)', TG_OP, TG_TABLE_NAME
                    USING ERRCODE = 'restrict_violation';
            END $$""",
            """CREATE TRIGGER sessions_owner_fixed BEFORE UPDATE ON sessions FOR EACH ROW
            WHEN (NEW.owner_key IS DISTINCT FROM OLD.owner_key
                  OR NEW.owner_team IS DISTINCT FROM OLD.owner_team)
            EXECUTE FUNCTION turnstile_session_owner_fixed()""",
        ),
    ),
)

MIGRATIONS: dict[str, tuple[Migration, ...]] = {"sqlite": SQLITE, "postgres": POSTGRES}

ALLOWED_STATEMENT = r"^\s*(CREATE\s|ALTER\s+TABLE\s+\w+\s+ADD\s)"
FORBIDDEN_STATEMENT = r"\b(DROP|RENAME|ALTER\s+COLUMN)\b|^\s*(UPDATE|DELETE|TRUNCATE)\b"
"""Regexes every migration statement must / must not match (checked by the tests): migrations
add only."""
