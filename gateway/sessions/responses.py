"""Stored OpenAI Responses are sessions (invariant 5: append-only, forks are branches).

A stored response ``R`` is the session whose id is ``R`` (``resp_`` + 32 hex characters):

* a response without ``previous_response_id`` opens a new, empty session ``R``;
* a response that names ``previous_response_id = P`` opens ``R`` as a fork of session ``P`` at
  its leaf (:meth:`gateway.sessions.store.SessionStore.fork`): the history is ``P``'s chain,
  nothing of ``P`` is copied or changed, and two responses naming the same ``P`` are two
  branches;
* the turn is then bound to ``R`` like any session-bound turn (the session layer appends the
  client's new input items, the window layer rebuilds the context from the chain for the routed
  deployment's window, the session layer appends the answer), so ``R``'s leaf is its answer;
* ``DELETE`` appends a ``label`` entry ``deleted`` (nothing is ever removed): from then on the
  id answers 404, as a previous response too;
* a response belongs to the caller that created it (:mod:`gateway.sessions.owners`): for any
  other caller it is not found (404), whether read, deleted or named as a previous response.

The session's ``title`` is the model name the client asked for (the Response object's
``model`` when it is read back). Usage and status are not stored: a response read back says
``completed`` with ``usage: null``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gateway.errors import ResponseNotFound
from gateway.schema import AssistantMessage, Message
from gateway.sessions.model import Entry, SessionInfo
from gateway.sessions.owners import ANONYMOUS_CALLER, Caller, fork_owner, may_see
from gateway.sessions.store import SessionNotFound, SessionStore

PREFIX = "resp_"
DELETED = "deleted"


def new_response_id() -> str:
    """A fresh response id: ``resp_`` + 32 hex characters (a valid session id)."""
    return PREFIX + os.urandom(16).hex()


def _not_found(response_id: str) -> ResponseNotFound:
    return ResponseNotFound(
        f"No response found with id {response_id!r} (never stored, stored with store: false, or deleted)",
        param="previous_response_id",
    )


@dataclass(frozen=True)
class StoredResponse:
    """A stored response read back: its session's creation time (Unix s) and title (the
    model asked for), the answer (the last assistant message on its chain), and its own input
    items (``(entry id, message)`` appended by its turn, in order)."""

    id: str
    created_at: float
    model: str
    answer: AssistantMessage
    inputs: list[tuple[str, Message]]
    history: list[Message]
    info: SessionInfo


def _deleted(entries: list[Entry]) -> bool:
    return any(e.type == "label" and e.payload.get("label") == DELETED for e in entries)


async def load(store: SessionStore, response_id: str, caller: Caller = ANONYMOUS_CALLER) -> StoredResponse:
    """The stored response ``response_id`` as ``caller`` may see it. Raises
    :class:`ResponseNotFound` for an id that is not a response's, never stored, deleted, whose
    turn stored no answer, or of another owner (the same answer for each)."""
    if not response_id.startswith(PREFIX):
        raise _not_found(response_id)
    try:
        info = await store.get_session(response_id)
        if not may_see(caller, info):
            raise _not_found(response_id)
        own = await store.entries(response_id)
        path = await store.path(response_id)
    except SessionNotFound:
        raise _not_found(response_id) from None
    if _deleted(own):
        raise _not_found(response_id)
    history = [m for e in path if (m := e.message()) is not None]
    last = next((e for e in reversed(path) if e.type == "message"), None)
    mine = {e.id for e in own}
    answer = history[-1] if history else None
    if last is None or last.id not in mine or not isinstance(answer, AssistantMessage):
        raise _not_found(response_id)  # its turn stored no answer of its own (refused, failed)
    inputs = [(e.id, m) for e in own if e.id != last.id and (m := e.message()) is not None]
    return StoredResponse(
        id=response_id,
        created_at=info.created_at,
        model=info.title or "",
        answer=answer,
        inputs=inputs,
        history=history,
        info=info,
    )


async def open_response(
    store: SessionStore,
    response_id: str,
    model: str,
    previous_id: str | None,
    caller: Caller = ANONYMOUS_CALLER,
) -> list[Message]:
    """Make the session of response ``response_id``, owned by ``caller`` (empty, or a fork of
    ``previous_id`` at its leaf) and return the history it continues (the messages of the
    previous chain, [] for none). Raises :class:`ResponseNotFound` for an unknown or deleted
    ``previous_id``, or one of another owner."""
    if previous_id is None:
        await store.create_session(response_id, title=model, owner=caller.owner)
        return []
    previous = await load(store, previous_id, caller)
    owner = fork_owner(caller, previous.info)
    await store.fork(previous_id, new_session_id=response_id, title=model, owner=owner)
    return previous.history


async def delete(store: SessionStore, response_id: str, caller: Caller = ANONYMOUS_CALLER) -> None:
    """Mark response ``response_id`` deleted (a ``label`` entry on its leaf; nothing is
    removed). Raises :class:`ResponseNotFound` as :func:`load` (``caller`` must see it)."""
    await load(store, response_id, caller)
    info = await store.get_session(response_id)
    if info.leaf_id is None:  # an empty session: a label needs an entry to name
        raise _not_found(response_id)
    await store.label(response_id, info.leaf_id, DELETED)
