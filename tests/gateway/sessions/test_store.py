"""Session store behaviour, the same tests on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gateway.errors import ConfigError, InvalidRequest
from gateway.schema import AssistantMessage, TextPart, UserMessage
from gateway.sessions import migrations
from gateway.sessions.model import MessagePayload
from gateway.sessions.store import SessionNotFound, SqlSessionStore


def user(text: str) -> MessagePayload:
    return MessagePayload(message=UserMessage(content=[TextPart(text=text)]))


def assistant(text: str) -> MessagePayload:
    return MessagePayload(message=AssistantMessage(content=[TextPart(text=text)]))


def texts(entries: list[Any]) -> list[str]:
    return [e.message().content[0].text for e in entries if e.type == "message"]


async def test_append_chains_entries_and_moves_the_leaf(store: SqlSessionStore) -> None:
    a = await store.append("s1", "message", user("hi"))
    b = await store.append("s1", "message", assistant("hello"))
    assert a.parent_id is None and b.parent_id == a.id
    info = await store.get_session("s1")
    assert info.leaf_id == b.id and info.entry_count == 2
    path = await store.path("s1")
    assert [e.id for e in path] == [a.id, b.id]
    assert texts(path) == ["hi", "hello"]
    assert isinstance(path[1].message(), AssistantMessage)


async def test_append_many_is_one_chain(store: SqlSessionStore) -> None:
    out = await store.append_many(
        "s", [("message", user("1")), ("message", assistant("2")), ("message", user("3"))]
    )
    assert [e.parent_id for e in out] == [None, out[0].id, out[1].id]
    assert (await store.get_session("s")).leaf_id == out[2].id


async def test_branching_in_place_keeps_both_branches(store: SqlSessionStore) -> None:
    a = await store.append("s", "message", user("q"))
    b1 = await store.append("s", "message", assistant("first answer"))
    b2 = await store.append("s", "message", assistant("second answer"), parent_id=a.id)
    assert b2.parent_id == a.id
    assert texts(await store.path("s")) == ["q", "second answer"]
    assert texts(await store.path("s", b1.id)) == ["q", "first answer"]
    await store.set_leaf("s", b1.id)
    assert texts(await store.path("s")) == ["q", "first answer"]
    assert len(await store.entries("s")) == 3


async def test_fork_shares_history_without_copying_and_diverges(store: SqlSessionStore) -> None:
    a = await store.append("src", "message", user("one"))
    b = await store.append("src", "message", assistant("two"))
    await store.append("src", "message", user("three"))
    fork = await store.fork("src", b.id, new_session_id="forked")
    assert fork.forked_from_session == "src" and fork.forked_from_entry == b.id and fork.leaf_id == b.id
    assert fork.entry_count == 0
    await store.append("forked", "message", user("other three"))
    assert texts(await store.path("forked")) == ["one", "two", "other three"]
    assert texts(await store.path("src")) == ["one", "two", "three"]
    # a fork of the fork reaches back through both
    deeper = await store.fork("forked", a.id)
    assert texts(await store.path(deeper.id)) == ["one"]


async def test_label_appends_an_entry_naming_its_target(store: SqlSessionStore) -> None:
    a = await store.append("s", "message", user("x"))
    lab = await store.label("s", a.id, "checkpoint")
    assert lab.type == "label" and lab.payload == {"target_id": a.id, "label": "checkpoint"}
    assert lab.parent_id == a.id


async def test_unknown_ids_are_not_found_and_foreign_entries_refused(store: SqlSessionStore) -> None:
    with pytest.raises(SessionNotFound):
        await store.get_session("nope")
    with pytest.raises(SessionNotFound):
        await store.append("nope", "message", user("x"), create=False)
    with pytest.raises(SessionNotFound):
        await store.label("s", "no-such-entry", "x")
    other = await store.append("other", "message", user("x"))
    await store.append("s", "message", user("y"))
    with pytest.raises(InvalidRequest):
        await store.append("s", "message", user("z"), parent_id=other.id)
    with pytest.raises(InvalidRequest):
        await store.fork("s", other.id)


async def test_bad_payload_is_refused_before_writing(store: SqlSessionStore) -> None:
    with pytest.raises(ValueError):
        await store.append("s", "nonsense", {"x": 1})
    with pytest.raises(ValueError):
        await store.append("s", "compaction", {"tokens_before": 3})  # no summary
    with pytest.raises(SessionNotFound):
        await store.get_session("s")


async def test_list_sessions_newest_first(store: SqlSessionStore) -> None:
    for sid in ("a", "b", "c"):
        await store.append(sid, "message", user(sid))
    listed = [s.id for s in await store.list_sessions()]
    assert set(listed) == {"a", "b", "c"}
    assert len(await store.list_sessions(limit=2)) == 2


def _raw(store: SqlSessionStore, sql: str) -> None:
    def go(cur: Any) -> None:
        cur.execute(sql)

    store._tx(go)


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE session_entries SET payload = '{}'",
        "UPDATE session_entries SET parent_id = NULL",
        "DELETE FROM session_entries",
    ],
)
async def test_sql_update_or_delete_of_an_entry_fails_in_the_database(
    store: SqlSessionStore, sql: str
) -> None:
    await store.append("s", "message", user("audit me"))
    await store.append("s", "message", assistant("ok"))
    with pytest.raises(Exception, match="append-only"):
        _raw(store, sql)
    assert texts(await store.path("s")) == ["audit me", "ok"]


async def test_truncate_fails_on_postgres(pg_store: SqlSessionStore) -> None:
    await pg_store.append("s", "message", user("x"))
    with pytest.raises(Exception, match="append-only"):
        _raw(pg_store, "TRUNCATE session_entries")


async def test_reopening_applies_no_migration_twice(store: SqlSessionStore) -> None:
    await store.append("s", "message", user("persisted"))
    store._tx(store._migrate)  # idempotent
    assert texts(await store.path("s")) == ["persisted"]


async def test_a_rewritten_migration_is_refused(
    store: SqlSessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = migrations.MIGRATIONS[store.dialect][0]
    changed = migrations.Migration(first.version, first.name, (*first.statements[:-1], "SELECT 1"))
    monkeypatch.setitem(migrations.MIGRATIONS, store.dialect, (changed,))
    with pytest.raises(ConfigError, match="rewritten"):
        store._tx(store._migrate)


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_migrations_only_add(dialect: str) -> None:
    versions = [m.version for m in migrations.MIGRATIONS[dialect]]
    assert versions == list(range(1, len(versions) + 1))
    for m in migrations.MIGRATIONS[dialect]:
        for stmt in m.statements:
            assert re.match(migrations.ALLOWED_STATEMENT, stmt, re.I), stmt
            assert not re.search(migrations.FORBIDDEN_STATEMENT, stmt, re.I | re.M), stmt
