"""The session-store fixture, parametrised over SQLite and PostgreSQL.

PostgreSQL is the local server at ``TURNSTILE_TEST_POSTGRES_URL`` (default
``postgresql://127.0.0.1:5432/test``, trust auth); each test gets a fresh schema, dropped
afterwards. When the server is unreachable the PostgreSQL cases skip with the reason, unless
``TURNSTILE_REQUIRE_SERVICES=1``, in which case they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.sessions.postgres import PostgresSessionStore
from gateway.sessions.sqlite import SqliteSessionStore
from gateway.sessions.store import SqlSessionStore

PG_URL = os.environ.get("TURNSTILE_TEST_POSTGRES_URL", "postgresql://127.0.0.1:5432/test")


def postgres_or_skip() -> None:
    """Skip (or fail under TURNSTILE_REQUIRE_SERVICES=1) when PostgreSQL is unreachable."""
    try:
        import psycopg

        psycopg.connect(PG_URL, connect_timeout=3).close()
    except Exception as err:
        reason = f"PostgreSQL at {PG_URL} is unreachable ({type(err).__name__}: {err})"
        if os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1":
            pytest.fail(reason + "; TURNSTILE_REQUIRE_SERVICES=1 requires it")
        pytest.skip(reason)


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def _open(kind: str, tmp_path: Path) -> AsyncIterator[SqlSessionStore]:
    s: SqlSessionStore
    schema = None
    if kind == "sqlite":
        s = SqliteSessionStore(tmp_path / "sessions.db")
    else:
        postgres_or_skip()
        schema = f"t_{uuid.uuid4().hex[:12]}"
        s = PostgresSessionStore(PG_URL, schema=schema)
    await s.open()
    try:
        yield s
    finally:
        await s.close()
        if schema:
            drop_schema(schema)


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlSessionStore]:
    """An opened, empty session store of each backend."""
    async for s in _open(request.param, tmp_path):
        yield s


@pytest.fixture
async def pg_store(tmp_path: Path) -> AsyncIterator[SqlSessionStore]:
    """An opened, empty PostgreSQL session store (for PostgreSQL-only statements)."""
    async for s in _open("postgres", tmp_path):
        yield s
