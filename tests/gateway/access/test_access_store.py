"""The access store on both backends: keys made, found by hash, changed, revoked and rotated;
teams bounding keys; every change audited; the audit append-only; migrations recorded.

PostgreSQL is the local server at ``TURNSTILE_TEST_POSTGRES_URL`` (default
``postgresql://127.0.0.1:5432/test``, trust auth), a fresh schema per test; unreachable, its
cases skip with the reason, unless ``TURNSTILE_REQUIRE_SERVICES=1``, where they fail.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.access.keygen import digest
from gateway.access.migrations import MIGRATIONS
from gateway.access.model import Budget, RateLimits
from gateway.access.open import access_store
from gateway.access.postgres import PostgresAccessStore
from gateway.access.sqlite import SqliteAccessStore
from gateway.access.store import AccessConflict, AccessNotFound, SqlAccessStore
from gateway.errors import ConfigError, InvalidRequest
from gateway.sessions.migrations import ALLOWED_STATEMENT, FORBIDDEN_STATEMENT

PG_URL = os.environ.get("TURNSTILE_TEST_POSTGRES_URL", "postgresql://127.0.0.1:5432/test")


def _postgres_or_skip() -> None:
    try:
        import psycopg

        psycopg.connect(PG_URL, connect_timeout=3).close()
    except Exception as err:
        reason = f"PostgreSQL at {PG_URL} is unreachable ({type(err).__name__}: {err})"
        if os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1":
            pytest.fail(reason + "; TURNSTILE_REQUIRE_SERVICES=1 requires it")
        pytest.skip(reason)


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlAccessStore]:
    """An opened, empty access store of each backend."""
    schema = None
    s: SqlAccessStore
    if request.param == "sqlite":
        s = SqliteAccessStore(tmp_path / "t.db")
    else:
        _postgres_or_skip()
        schema = f"a_{uuid.uuid4().hex[:12]}"
        s = PostgresAccessStore(PG_URL, schema=schema)
    await s.open()
    try:
        yield s
    finally:
        await s.close()
        if schema:
            import psycopg

            with psycopg.connect(PG_URL, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_a_new_key_is_stored_only_as_its_hash_and_prefix_and_found_by_its_hash(
    store: SqlAccessStore,
) -> None:
    key, secret = await store.create_key(
        "alice",
        actor="test",
        models=["gpt-4o"],
        mcp=["time", "fx.echo"],
        budgets=[{"period": "month", "usd": 10}],
        rate_limits={"rpm": 60},
        metadata={"owner": "a@example.com"},
    )
    assert secret.startswith("tsk-") and len(secret) >= 4 + 43
    assert key.hash == digest(secret) and secret not in key.model_dump_json()
    assert key.prefix == secret[:12] and key.id.startswith("key-")
    assert key.budgets == [Budget(period="month", usd=10, hard=True)]
    assert key.rate_limits == RateLimits(rpm=60)
    found = await store.lookup(digest(secret))
    assert found is not None and found[0] == key and found[1] is None
    assert await store.lookup(digest(secret + "x")) is None
    assert [k.id for k in await store.list_keys()] == [key.id]
    assert "hash" not in key.public()


async def test_a_key_change_revocation_and_rotation_are_stored_and_audited(store: SqlAccessStore) -> None:
    key, secret = await store.create_key("bob", actor="test")
    changed = await store.update_key(key.id, {"models": ["m1"], "enabled": False}, actor="admin")
    assert changed.models == ["m1"] and not changed.enabled
    rotated, new_secret = await store.rotate_key(key.id, actor="admin")
    assert new_secret != secret and rotated.id == key.id and rotated.models == ["m1"]
    assert await store.lookup(digest(secret)) is None
    assert (await store.lookup(digest(new_secret))) is not None
    revoked = await store.revoke_key(key.id, actor="admin")
    assert revoked.revoked_at is not None
    assert (await store.revoke_key(key.id, actor="admin")).revoked_at == revoked.revoked_at  # once
    with pytest.raises(AccessConflict):
        await store.update_key(key.id, {"name": "x"}, actor="admin")
    with pytest.raises(AccessConflict):
        await store.rotate_key(key.id, actor="admin")
    events = await store.audit_events()
    assert [e.action for e in events] == ["key.revoked", "key.rotated", "key.changed", "key.created"]
    assert events[2].detail["models"] == {"from": [], "to": ["m1"]} and events[2].actor == "admin"
    assert all(new_secret not in e.model_dump_json() and secret not in e.model_dump_json() for e in events)


async def test_bad_fields_are_refused_naming_them(store: SqlAccessStore) -> None:
    with pytest.raises(InvalidRequest, match="budgets"):
        await store.create_key("c", actor="t", budgets=[{"period": "year", "usd": 1}])
    with pytest.raises(InvalidRequest, match="one budget per period"):
        await store.create_key(
            "c", actor="t", budgets=[{"period": "day", "usd": 1}, {"period": "day", "usd": 2}]
        )
    with pytest.raises(InvalidRequest, match="colour"):
        await store.create_key("c", actor="t", colour="red")
    key, _ = await store.create_key("c", actor="t")
    with pytest.raises(InvalidRequest, match="hash"):
        await store.update_key(key.id, {"hash": "0" * 64}, actor="t")
    with pytest.raises(AccessNotFound):
        await store.get_key("key-nope")
    with pytest.raises(AccessNotFound):
        await store.create_key("d", actor="t", team_id="no-such-team")


async def test_a_team_bounds_its_keys_and_is_deleted_only_without_live_keys(store: SqlAccessStore) -> None:
    team = await store.create_team("eng", actor="t", models=["a", "b"], budgets=[{"period": "day", "usd": 5}])
    with pytest.raises(AccessConflict, match="eng"):
        await store.create_team("eng", actor="t")
    key, secret = await store.create_key("k", actor="t", team_id="eng")  # by name
    assert key.team_id == team.id
    found = await store.lookup(digest(secret))
    assert found is not None and found[1] is not None and found[1].id == team.id
    assert [k.id for k in await store.list_keys(team.id)] == [key.id]
    renamed = await store.update_team(team.id, {"name": "platform", "rate_limits": {"tpm": 1000}}, actor="t")
    assert renamed.name == "platform" and renamed.rate_limits.tpm == 1000
    assert (await store.get_team("platform")).id == team.id
    with pytest.raises(AccessConflict, match="live key"):
        await store.delete_team(team.id, actor="t")
    await store.revoke_key(key.id, actor="t")
    await store.delete_team(team.id, actor="t")
    assert await store.list_teams() == []
    with pytest.raises(AccessNotFound):
        await store.get_team(team.id)
    found = await store.lookup(digest(secret))
    assert found is not None and found[1] is not None  # the revoked key still names its (deleted) team
    await store.create_team("platform", actor="t")  # the name is free again


async def test_the_audit_is_append_only_in_the_database(tmp_path: Path) -> None:
    store = SqliteAccessStore(tmp_path / "t.db")
    await store.open()
    await store.create_team("t", actor="x")
    await store.close()
    conn = sqlite3.connect(tmp_path / "t.db")
    for stmt in ("UPDATE access_audit SET actor = 'y'", "DELETE FROM access_audit"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute(stmt)
    conn.close()


async def test_migrations_add_only_are_recorded_and_a_rewritten_one_refuses_to_open(tmp_path: Path) -> None:
    import re

    for dialect in ("sqlite", "postgres"):
        for m in MIGRATIONS[dialect]:
            for stmt in m.statements:
                assert re.match(ALLOWED_STATEMENT, stmt, re.I) and not re.search(
                    FORBIDDEN_STATEMENT, stmt, re.I
                )
    path = tmp_path / "t.db"
    store = access_store(str(path))
    await store.open()
    await store.close()
    await store.open()  # applied once: opening again changes nothing
    await store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM access_migrations").fetchall() == [(1,)]
    conn.execute("UPDATE access_migrations SET checksum = 'x'")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError, match="rewritten"):
        await access_store(str(path)).open()


async def test_the_access_tables_share_a_file_with_the_sessions_and_the_transcript(tmp_path: Path) -> None:
    from gateway.sessions.open import open_store
    from gateway.transcript import connect

    path = tmp_path / "t.db"
    connect(path).close()
    sessions = await open_store(str(path))
    access = access_store(str(path))
    await access.open()
    await sessions.create_session("s1")
    await access.create_team("t", actor="x")
    await sessions.close()
    await access.close()
    tables = {
        r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='table'")
    }
    assert {"turns", "sessions", "schema_migrations", "access_keys", "access_teams", "access_audit"} <= tables
