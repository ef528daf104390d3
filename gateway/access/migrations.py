"""Schema migrations of the access store (keys, teams, audit), per SQL dialect.

Recorded in their own table, ``access_migrations`` (the store may share a database or file
with the session store, whose ``schema_migrations`` counts its own versions), with the same
rules as :mod:`gateway.sessions.migrations`: a released migration is never edited, migrations
only add, and a recorded checksum that differs from the code's refuses to open the store.

The audit table is append-only in the database: triggers raise on UPDATE and DELETE (and
TRUNCATE in PostgreSQL), whoever issues the statement.
"""

from __future__ import annotations

from gateway.sessions.migrations import Migration

AUDIT_MESSAGE = "turnstile: the access audit is append-only"

MIGRATIONS_TABLE = {
    "sqlite": """CREATE TABLE IF NOT EXISTS access_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at REAL NOT NULL)""",
    "postgres": """CREATE TABLE IF NOT EXISTS access_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL,
        applied_at DOUBLE PRECISION NOT NULL)""",
}


def _tables(real: str, seq: str, boolean: str) -> tuple[str, ...]:
    """The tables of migration 1 with the dialect's types: ``real`` (a float), ``seq`` (an
    auto-increment primary key), ``boolean``."""
    limits = (
        "models TEXT NOT NULL, mcp TEXT NOT NULL, budgets TEXT NOT NULL, "
        "rate_limits TEXT NOT NULL, metadata TEXT NOT NULL"
    )
    return (
        f"""CREATE TABLE access_teams (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        {limits},
        created_at {real} NOT NULL,
        updated_at {real} NOT NULL,
        deleted_at {real})""",
        "CREATE UNIQUE INDEX access_teams_name ON access_teams (name) WHERE deleted_at IS NULL",
        f"""CREATE TABLE access_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        prefix TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        team_id TEXT REFERENCES access_teams(id),
        {limits},
        expires_at {real},
        enabled {boolean} NOT NULL,
        created_at {real} NOT NULL,
        updated_at {real} NOT NULL,
        revoked_at {real})""",
        "CREATE INDEX access_keys_team ON access_keys (team_id)",
        f"""CREATE TABLE access_audit (
        seq {seq},
        ts {real} NOT NULL,
        action TEXT NOT NULL,
        actor TEXT NOT NULL,
        target TEXT,
        reason TEXT,
        detail TEXT NOT NULL)""",
        "CREATE INDEX access_audit_ts ON access_audit (ts)",
    )


SQLITE: tuple[Migration, ...] = (
    Migration(
        1,
        "keys, teams and an append-only audit",
        (
            *_tables("REAL", "INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER"),
            f"""CREATE TRIGGER access_audit_no_update BEFORE UPDATE ON access_audit
            BEGIN SELECT RAISE(ABORT, '{AUDIT_MESSAGE}'); END""",
            f"""CREATE TRIGGER access_audit_no_delete BEFORE DELETE ON access_audit
            BEGIN SELECT RAISE(ABORT, '{AUDIT_MESSAGE}'); END""",
        ),
    ),
)

POSTGRES: tuple[Migration, ...] = (
    Migration(
        1,
        "keys, teams and an append-only audit",
        (
            *_tables("DOUBLE PRECISION", "BIGSERIAL PRIMARY KEY", "BOOLEAN"),
            f"""CREATE FUNCTION turnstile_access_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION '{AUDIT_MESSAGE} (% on %)', TG_OP, TG_TABLE_NAME
                    USING ERRCODE = 'restrict_violation';
            END $$""",
            """CREATE TRIGGER access_audit_no_update_delete BEFORE UPDATE OR DELETE ON access_audit
            FOR EACH ROW EXECUTE FUNCTION turnstile_access_audit_append_only()""",
            """CREATE TRIGGER access_audit_no_truncate BEFORE TRUNCATE ON access_audit
            FOR EACH STATEMENT EXECUTE FUNCTION turnstile_access_audit_append_only()""",
        ),
    ),
)

MIGRATIONS: dict[str, tuple[Migration, ...]] = {"sqlite": SQLITE, "postgres": POSTGRES}
