"""Who may see a session (``gateway.sessions.owners``), on both store backends: the owner is
recorded when the row is made and never changes (the database refuses), a session of another
owner is not found exactly as an absent one, lists are per owner, and a stored response or a
thread of another key cannot be read, continued or deleted."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.errors import ResponseNotFound, ThreadNotFound
from gateway.schema import AssistantMessage, TextPart, UserMessage
from gateway.sessions import responses, threads
from gateway.sessions.model import MessagePayload, Owner, ThreadPayload
from gateway.sessions.owners import ADMIN_CALLER, ANONYMOUS_CALLER, Caller, claim, fork_owner, visible
from gateway.sessions.store import SessionNotFound, SqlSessionStore

ALICE = Caller(Owner(key_id="key-a", team_id="team-1"))
BOB = Caller(Owner(key_id="key-b", team_id="team-1"))  # the same team: still another key


def _exec(store: SqlSessionStore, sql: str, params: tuple[Any, ...] = ()) -> None:
    def go(cur: Any) -> None:
        cur.execute(store._sql(sql), params)

    store._tx(go)


async def _answered(store: SqlSessionStore, sid: str) -> None:
    await store.append(sid, "message", MessagePayload(message=UserMessage(content=[TextPart(text="q")])))
    await store.append(sid, "message", MessagePayload(message=AssistantMessage(content=[TextPart(text="a")])))


async def test_a_claimed_session_is_its_callers_and_absent_for_every_other(store: SqlSessionStore) -> None:
    info = await claim(store, "s-alice", ALICE)
    assert (info.owner_key, info.owner_team) == ("key-a", "team-1")
    assert (await claim(store, "s-alice", ALICE)).owner_key == "key-a"  # again: the same session
    for other in (BOB, ANONYMOUS_CALLER):
        with pytest.raises(SessionNotFound) as theirs:
            await visible(store, "s-alice", other)
        with pytest.raises(SessionNotFound) as absent:
            await visible(store, "s-nobody", other)
        assert theirs.value.message.replace("s-alice", "X") == absent.value.message.replace("s-nobody", "X")
        with pytest.raises(SessionNotFound):
            await claim(store, "s-alice", other)
    assert (await visible(store, "s-alice", ADMIN_CALLER)).id == "s-alice"


async def test_the_owner_of_a_session_never_changes(store: SqlSessionStore) -> None:
    await claim(store, "s", ALICE)
    with pytest.raises(Exception, match="owner of a session"):
        _exec(store, "UPDATE sessions SET owner_key = ? WHERE id = ?", ("key-b", "s"))
    with pytest.raises(Exception, match="owner of a session"):
        _exec(store, "UPDATE sessions SET owner_team = NULL WHERE id = ?", ("s",))
    await store.append("s", "message", MessagePayload(message=UserMessage(content=[TextPart(text="x")])))
    assert (await store.get_session("s")).owner_key == "key-a"  # the leaf still moves


async def test_lists_hold_one_owners_sessions(store: SqlSessionStore) -> None:
    await claim(store, "a1", ALICE)
    await claim(store, "a2", ALICE)
    await claim(store, "b1", BOB)
    await claim(store, "anon", ANONYMOUS_CALLER)
    assert {s.id for s in await store.list_sessions(key_id="key-a")} == {"a1", "a2"}
    assert {s.id for s in await store.list_sessions(key_id=None)} == {"anon"}
    assert {s.id for s in await store.list_sessions(team_id="team-1")} == {"a1", "a2", "b1"}
    assert {s.id for s in await store.list_sessions()} == {"a1", "a2", "b1", "anon"}


async def test_a_fork_belongs_to_who_made_it_and_the_admins_to_the_sources_owner(
    store: SqlSessionStore,
) -> None:
    source = await claim(store, "src", ALICE)
    assert fork_owner(ALICE, source) == ALICE.owner
    assert fork_owner(ADMIN_CALLER, source) == Owner(key_id="key-a", team_id="team-1")


async def test_a_stored_response_of_another_key_is_not_found_anywhere(store: SqlSessionStore) -> None:
    rid = responses.new_response_id()
    await responses.open_response(store, rid, "m", None, ALICE)
    await _answered(store, rid)
    assert (await responses.load(store, rid, ALICE)).answer.text == "a"
    for attempt in (
        lambda: responses.load(store, rid, BOB),
        lambda: responses.load(store, rid),  # anonymous
        lambda: responses.open_response(store, responses.new_response_id(), "m", rid, BOB),
        lambda: responses.delete(store, rid, BOB),
    ):
        with pytest.raises(ResponseNotFound):
            await attempt()
    nxt = responses.new_response_id()
    await responses.open_response(store, nxt, "m", rid, ALICE)  # its owner continues it
    assert (await store.get_session(nxt)).owner_key == "key-a"
    assert (await responses.load(store, rid, ADMIN_CALLER)).id == rid


async def test_a_thread_of_another_key_cannot_be_continued(store: SqlSessionStore) -> None:
    mid = threads.new_message_id()
    await threads.create(store, mid, "m", ThreadPayload(), ALICE)
    await _answered(store, mid)
    with pytest.raises(ThreadNotFound):
        await threads.load(store, mid, BOB)
    previous = await threads.load(store, mid, ALICE)
    nxt = threads.new_message_id()
    await threads.continue_from(store, nxt, "m", previous, ALICE)
    assert (await store.get_session(nxt)).owner_key == "key-a"
