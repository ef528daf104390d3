"""Session store behaviour, the same tests on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import re
import sqlite3
from typing import Any

import orjson
import pytest

from gateway.errors import ConfigError, InvalidRequest
from gateway.schema import AssistantMessage, Request, TextPart, UserMessage
from gateway.sessions import migrations
from gateway.sessions.model import MessagePayload, encode_payload, validate_payload
from gateway.sessions.open import open_store, parse_store_url
from gateway.sessions.postgres import PostgresSessionStore
from gateway.sessions.sqlite import SqliteSessionStore
from gateway.sessions.store import SessionNotFound, SqlSessionStore, StoreMissing


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


# ---------------------------------------------------------------------------- concurrent turns


def second_instance(store: SqlSessionStore) -> SqlSessionStore:
    """Another store object (own connection) on the same database: a second gateway."""
    if isinstance(store, SqliteSessionStore):
        return SqliteSessionStore(store.file)
    assert isinstance(store, PostgresSessionStore)
    return PostgresSessionStore(store.url, schema=store.schema)


async def test_an_append_whose_leaf_moved_becomes_a_branch_and_keeps_the_leaf(store: SqlSessionStore) -> None:
    root = await store.append("s", "message", user("q0"))
    # two turns read the leaf `root`; the first moves it, the second loses the compare-and-set
    (q1,), moved1 = await store.append_at(
        "s", [("message", user("q1"))], parent_id=root.id, expect_leaf=root.id
    )
    (q2,), moved2 = await store.append_at(
        "s", [("message", user("q2"))], parent_id=root.id, expect_leaf=root.id
    )
    assert (moved1, moved2) == (True, False)
    assert (await store.get_session("s")).leaf_id == q1.id
    # the losing turn's answer chains to its own question, not to the session leaf
    (a2,), moved = await store.append_at(
        "s", [("message", assistant("a2"))], parent_id=q2.id, expect_leaf=q2.id
    )
    assert a2.parent_id == q2.id and not moved
    assert texts(await store.path("s", a2.id)) == ["q0", "q2", "a2"]
    (_a1,), moved = await store.append_at(
        "s", [("message", assistant("a1"))], parent_id=q1.id, expect_leaf=q1.id
    )
    assert moved and texts(await store.path("s")) == ["q0", "q1", "a1"]


async def test_leaf_compare_and_set_on_an_empty_session_expects_no_leaf(store: SqlSessionStore) -> None:
    (a,), moved_a = await store.append_at("s", [("message", user("a"))], parent_id=None, expect_leaf=None)
    (_b,), moved_b = await store.append_at("s", [("message", user("b"))], parent_id=None, expect_leaf=None)
    assert moved_a and not moved_b and (await store.get_session("s")).leaf_id == a.id


async def test_concurrent_turns_from_two_instances_keep_each_question_with_its_answer(
    store: SqlSessionStore,
) -> None:
    from gateway.schema import Response, Usage
    from gateway.sessions.turns import record_request, record_response

    other = second_instance(store)
    await other.open()
    try:
        stores = [store, other]

        async def turn(i: int) -> None:
            s = stores[i % 2]
            req = Request(model="m", messages=[UserMessage(content=[TextPart(text=f"q{i}")])])
            recorded = await record_request(s, "shared", req)
            resp = Response(
                id=f"r{i}",
                model="m",
                message=AssistantMessage(content=[TextPart(text=f"a{i}")]),
                stop_reason="stop",
                usage=Usage(),
            )
            await record_response(s, "shared", resp, recorded)

        await asyncio.gather(*(turn(i) for i in range(20)))
    finally:
        await other.close()
    own = {e.id: e for e in await store.entries("shared")}
    answers = [e for e in own.values() if isinstance(e.message(), AssistantMessage)]
    assert len(own) == 40 and len(answers) == 20
    assert len({e.parent_id for e in own.values()}) < 40  # the turns did interleave (branches)
    for a in answers:
        question = own[a.parent_id or ""]
        assert texts([question]) == ["q" + texts([a])[0][1:]]
    # the session's main line is a chain of whole turns: every answer on it follows its question
    path = await store.path("shared")
    for prev, cur in itertools.pairwise(path):
        assert cur.parent_id == prev.id
        if isinstance(cur.message(), AssistantMessage):
            assert texts([prev]) == ["q" + texts([cur])[0][1:]]


async def test_only_one_of_many_racing_compare_and_sets_wins_across_instances(store: SqlSessionStore) -> None:
    root = await store.append("race", "message", user("root"))
    other = second_instance(store)
    await other.open()
    try:
        results = await asyncio.gather(
            *(
                (store, other)[i % 2].append_at(
                    "race", [("message", user(f"r{i}"))], parent_id=root.id, expect_leaf=root.id
                )
                for i in range(16)
            )
        )
    finally:
        await other.close()
    winners = [entries[0].id for entries, moved in results if moved]
    assert len(winners) == 1
    assert (await store.get_session("race")).leaf_id == winners[0]


# ---------------------------------------------------------------------------- append-only, harder


def _exec(store: SqlSessionStore, sql: str, params: tuple[Any, ...] = ()) -> None:
    def go(cur: Any) -> None:
        cur.execute(store._sql(sql), params)

    store._tx(go)


_COPY = (
    "INSERT OR REPLACE INTO session_entries(seq, id, session_id, parent_id, type, created_at, payload) "
    "SELECT seq, id, session_id, parent_id, type, created_at, '{\"tampered\": true}' "
    "FROM session_entries WHERE id = ?"
)


@pytest.mark.parametrize(
    "sql",
    [
        _COPY,
        _COPY.replace("seq, id", "id", 1).replace("SELECT seq, id", "SELECT id"),
        _COPY.replace("INSERT OR REPLACE", "REPLACE", 1),
        "INSERT INTO session_entries(id, session_id, parent_id, type, created_at, payload) "
        "SELECT id, session_id, parent_id, type, created_at, '{}' FROM session_entries WHERE id = ? "
        "ON CONFLICT (id) DO UPDATE SET payload = excluded.payload",
    ],
)
async def test_sqlite_replace_of_an_entry_fails_even_without_recursive_triggers(
    tmp_path: Any, sql: str
) -> None:
    s = SqliteSessionStore(tmp_path / "s.db")
    await s.open()
    try:
        a = await s.append("s", "message", user("original"))
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            _exec(s, sql, (a.id,))
    finally:
        await s.close()
    raw = sqlite3.connect(tmp_path / "s.db", isolation_level=None)  # a foreign connection: no pragmas
    try:
        assert raw.execute("PRAGMA recursive_triggers").fetchone() == (0,)
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            raw.execute(sql, (a.id,))
        rows = raw.execute("SELECT seq, payload FROM session_entries WHERE id = ?", (a.id,)).fetchall()
    finally:
        raw.close()
    assert rows == [(a.seq, orjson.dumps(a.payload, option=orjson.OPT_SORT_KEYS).decode())]


async def test_postgres_upsert_over_an_entry_fails(pg_store: SqlSessionStore) -> None:
    a = await pg_store.append("s", "message", user("original"))
    with pytest.raises(Exception, match="append-only"):
        _exec(
            pg_store,
            "INSERT INTO session_entries(id, session_id, parent_id, type, created_at, payload) "
            "SELECT id, session_id, parent_id, type, created_at, '{}' FROM session_entries WHERE id = ? "
            "ON CONFLICT (id) DO UPDATE SET payload = excluded.payload",
            (a.id,),
        )
    assert (await pg_store.get_entry(a.id)).payload == a.payload


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM sessions",
        "UPDATE sessions SET title = 'renamed'",
        "UPDATE sessions SET created_at = 0",
        "UPDATE sessions SET forked_from_session = 'elsewhere'",
        "UPDATE sessions SET id = 'other'",
        "UPDATE sessions SET leaf_id = 'no-such-entry'",
    ],
)
async def test_a_session_row_changes_only_its_leaf(store: SqlSessionStore, sql: str) -> None:
    a = await store.append("s", "message", user("q"))
    b = await store.append("s", "message", assistant("a"))
    with pytest.raises(Exception, match="only their leaf pointer changes"):
        _exec(store, sql)
    info = await store.get_session("s")
    assert info.id == "s" and info.leaf_id == b.id and info.title is None
    _exec(store, "UPDATE sessions SET leaf_id = ? WHERE id = ?", (a.id, "s"))  # the one mutable value
    assert (await store.get_session("s")).leaf_id == a.id


async def test_sqlite_replace_of_a_session_row_fails(tmp_path: Any) -> None:
    s = SqliteSessionStore(tmp_path / "s.db")
    await s.open()
    try:
        await s.create_session("s", title="kept")
        with pytest.raises(sqlite3.DatabaseError, match="only their leaf pointer changes"):
            _exec(s, "INSERT OR REPLACE INTO sessions (id, created_at, title) VALUES ('s', 0, 'replaced')")
        assert (await s.get_session("s")).title == "kept"
        await s.create_session("s")  # creating an existing session is still a no-op
    finally:
        await s.close()


async def test_truncate_of_sessions_fails_on_postgres(pg_store: SqlSessionStore) -> None:
    await pg_store.create_session("s")
    with pytest.raises(Exception, match="only their leaf pointer changes"):
        _exec(pg_store, "TRUNCATE sessions CASCADE")


async def test_a_store_at_migration_1_is_upgraded_on_open(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = migrations.MIGRATIONS["sqlite"]
    monkeypatch.setitem(migrations.MIGRATIONS, "sqlite", full[:1])
    old = SqliteSessionStore(tmp_path / "s.db")
    await old.open()
    # rows as the code of migration 1 wrote them (today's code writes the owner columns)
    payload = encode_payload(validate_payload("message", user("before")))
    _exec(old, "INSERT INTO sessions (id, created_at, leaf_id) VALUES ('s', 1.0, NULL)")
    _exec(
        old,
        "INSERT INTO session_entries (id, session_id, parent_id, type, created_at, payload) "
        "VALUES ('e1', 's', NULL, 'message', 1.0, ?)",
        (payload,),
    )
    _exec(old, "UPDATE sessions SET leaf_id = 'e1' WHERE id = 's'")
    await old.close()
    monkeypatch.setitem(migrations.MIGRATIONS, "sqlite", full)
    new = SqliteSessionStore(tmp_path / "s.db")
    await new.open()
    try:
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            _exec(new, _COPY, ("e1",))
        assert texts(await new.path("s")) == ["before"]
        info = await new.get_session("s")
        assert (info.owner_key, info.owner_team) == (None, None)  # made before owners: anonymous
    finally:
        await new.close()


# ---------------------------------------------------------------------------- ids, labels, ranges


@pytest.mark.parametrize("bad", ["a/b", "x" * 201, "", "..", "with space", "naïve", "a\nb"])
async def test_unaddressable_session_ids_are_refused_before_anything_is_created(
    store: SqlSessionStore, bad: str
) -> None:
    with pytest.raises(InvalidRequest, match="A-Z, a-z, 0-9"):
        await store.create_session(bad)
    with pytest.raises(InvalidRequest, match="A-Z, a-z, 0-9"):
        await store.append(bad, "message", user("x"))
    await store.append("src", "message", user("x"))
    with pytest.raises(InvalidRequest, match="A-Z, a-z, 0-9"):
        await store.fork("src", new_session_id=bad)
    assert [s.id for s in await store.list_sessions()] == ["src"]


async def test_good_session_ids_are_accepted(store: SqlSessionStore) -> None:
    for sid in ("a", "x" * 200, "user-1.conv_2:3"):
        await store.append(sid, "message", user("x"))
        assert (await store.get_session(sid)).entry_count == 1


async def test_a_label_cannot_point_at_another_sessions_entry(store: SqlSessionStore) -> None:
    theirs = await store.append("b", "message", user("theirs"))
    mine = await store.append("a", "message", user("mine"))
    with pytest.raises(SessionNotFound, match=theirs.id) as err:
        await store.label("a", theirs.id, "stolen")
    assert err.value.param == "entry"
    assert [e.id for e in await store.entries("a")] == [mine.id]
    # a fork's source entries before the fork point are on the fork's tree
    fork = await store.fork("b", theirs.id, new_session_id="f")
    assert (await store.label(fork.id, theirs.id, "ok")).payload["target_id"] == theirs.id


@pytest.mark.parametrize(("limit", "offset"), [(0, 0), (1001, 0), (10**23, 0), (5, -1)])
async def test_list_sessions_refuses_out_of_range_paging(
    store: SqlSessionStore, limit: int, offset: int
) -> None:
    with pytest.raises(InvalidRequest, match="must be an integer from"):
        await store.list_sessions(limit, offset)


# ---------------------------------------------------------------------------- URLs, read-only


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///tmp/x.db", ("sqlite", "/tmp/x.db")),
        ("sqlite:////tmp/x.db", ("sqlite", "/tmp/x.db")),
        ("sqlite://", ("sqlite", ":memory:")),
        ("sqlite://:memory:", ("sqlite", ":memory:")),
        ("data/sessions.db", ("sqlite", "data/sessions.db")),
        ("postgresql://127.0.0.1:5432/test", ("postgres", "postgresql://127.0.0.1:5432/test")),
        ("postgres://h/db", ("postgres", "postgres://h/db")),
    ],
)
def test_store_urls(url: str, expected: tuple[str, str]) -> None:
    assert parse_store_url(url) == expected


@pytest.mark.parametrize("url", ["mysql://x", "redis://127.0.0.1", "sqlite://host/x.db", " "])
def test_unsupported_store_urls_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        parse_store_url(url)


async def test_a_readonly_open_creates_no_file_and_no_tables(tmp_path: Any) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(StoreMissing, match=r"no sessions at .*missing\.db yet"):
        await open_store(f"sqlite://{missing}", readonly=True)
    assert not missing.exists()
    other = tmp_path / "other.db"
    sqlite3.connect(other).close()
    with pytest.raises(StoreMissing):
        await open_store(str(other), readonly=True)
    with sqlite3.connect(other) as raw:
        assert raw.execute("SELECT name FROM sqlite_master").fetchall() == []
    writer = await open_store(str(tmp_path / "s.db"))
    await writer.append("s", "message", user("x"))
    reader = await open_store(f"sqlite://{tmp_path / 's.db'}", readonly=True)
    try:
        assert [s.id for s in await reader.list_sessions()] == ["s"]
        assert texts(await reader.path("s")) == ["x"]
    finally:
        await reader.close()
        await writer.close()
