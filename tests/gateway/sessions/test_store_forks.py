"""``SqlSessionStore.forks`` (read-only, for the console's session tree): the sessions forked from
one, oldest first, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from gateway.errors import InvalidRequest
from gateway.sessions.store import SqlSessionStore


async def test_the_forks_of_a_session_are_listed_oldest_first_with_their_fork_points(
    store: SqlSessionStore,
) -> None:
    first = await store.append(
        "src", "message", {"message": {"role": "user", "content": [{"type": "text", "text": "a"}]}}
    )
    await store.fork("src", first.id, new_session_id="f1")
    await store.fork("src", new_session_id="f2")
    await store.fork("f1", new_session_id="f1-child")
    forks = await store.forks("src")
    assert [(f.id, f.forked_from_entry) for f in forks] == [("f1", first.id), ("f2", first.id)]
    assert [f.id for f in await store.forks("f1")] == ["f1-child"]
    assert await store.forks("f2") == [] and await store.forks("nobody") == []
    assert [f.id for f in await store.forks("src", limit=1)] == ["f1"]
    with pytest.raises(InvalidRequest):
        await store.forks("src", limit=0)
