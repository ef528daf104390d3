"""Anthropic message threads are sessions (invariant 5: append-only, forks are branches), as
stored OpenAI Responses are (:mod:`gateway.sessions.responses`).

The answer ``M`` of a threaded turn (``msg_`` + 32 hex characters, the ``id`` the client
continues from) is the session whose id is ``M``:

* ``thread: {"type": "create"}`` opens a new session ``M`` whose first entry is a ``thread``
  entry (:class:`gateway.sessions.model.ThreadPayload`: the system prompt, tools and MCP
  servers of the create, which a continuation leaves out);
* ``thread: {"type": "continue", "previous_message_id": P}`` opens ``M`` as a fork of session
  ``P`` at its leaf (:meth:`gateway.sessions.store.SessionStore.fork`): the history is ``P``'s
  chain, nothing of ``P`` is copied or changed, and two continuations of one ``P`` are two
  branches (the Anthropic API refuses the second with ``thread_already_continued``; the log
  keeps both);
* the turn is then bound to ``M`` like any session-bound turn: the session layer appends the
  client's new messages, the window layer rebuilds the context from the chain for the routed
  deployment's window, the session layer appends the answer, so ``M``'s leaf is its answer.

``P`` that is no thread's answer (unknown, another kind of session, or a turn that stored no
answer of its own) raises :class:`gateway.errors.ThreadNotFound`, on which the Anthropic SDK
replays the whole conversation under a new thread, and so does a ``P`` of another owner
(:mod:`gateway.sessions.owners`: a thread belongs to the caller that created it). The session's
``title`` is the model the client asked for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gateway.errors import ThreadNotFound
from gateway.schema import AssistantMessage, Message
from gateway.sessions.model import SessionInfo, ThreadPayload
from gateway.sessions.owners import ANONYMOUS_CALLER, Caller, fork_owner, may_see
from gateway.sessions.store import SessionNotFound, SessionStore

PREFIX = "msg_"


def new_message_id() -> str:
    """A fresh thread answer id: ``msg_`` + 32 hex characters (a valid session id)."""
    return PREFIX + os.urandom(16).hex()


def _not_found(message_id: str) -> ThreadNotFound:
    return ThreadNotFound(
        f"thread.previous_message_id: no message thread holds {message_id!r} (never created on "
        "this gateway, or its turn stored no answer); replay the conversation with thread.type create",
        param="thread.previous_message_id",
    )


@dataclass(frozen=True)
class StoredThread:
    """A thread turn read back: its answer id, what the thread keeps from its create
    (``settings``) and the conversation up to its answer (``history``, oldest first)."""

    id: str
    settings: ThreadPayload
    history: list[Message]
    info: SessionInfo


async def load(store: SessionStore, message_id: str, caller: Caller = ANONYMOUS_CALLER) -> StoredThread:
    """The thread turn answered as ``message_id``, as ``caller`` may see it. Raises
    :class:`ThreadNotFound` for an id that is not a thread answer's, never stored, whose turn
    stored no answer, or of another owner (the same answer for each)."""
    if not message_id.startswith(PREFIX):
        raise _not_found(message_id)
    try:
        info = await store.get_session(message_id)
        if not may_see(caller, info):
            raise _not_found(message_id)
        own = await store.entries(message_id)
        path = await store.path(message_id)
    except SessionNotFound:
        raise _not_found(message_id) from None
    settings = next((t for e in reversed(path) if (t := e.thread()) is not None), None)
    last = next((e for e in reversed(path) if e.type == "message"), None)
    if settings is None or last is None or last.id not in {e.id for e in own}:
        raise _not_found(message_id)  # not a thread, or its turn stored no answer of its own
    history = [m for e in path if (m := e.message()) is not None]
    if not isinstance(history[-1], AssistantMessage):
        raise _not_found(message_id)
    return StoredThread(id=message_id, settings=settings, history=history, info=info)


async def create(
    store: SessionStore,
    message_id: str,
    model: str,
    settings: ThreadPayload,
    caller: Caller = ANONYMOUS_CALLER,
) -> None:
    """Open the session of a new thread's first answer ``message_id``, owned by ``caller``:
    its ``thread`` entry holds ``settings``."""
    await store.create_session(message_id, title=model, owner=caller.owner)
    await store.append(message_id, "thread", settings)


async def continue_from(
    store: SessionStore,
    message_id: str,
    model: str,
    previous: StoredThread,
    caller: Caller = ANONYMOUS_CALLER,
) -> None:
    """Open the session of answer ``message_id`` as a fork of ``previous`` at its leaf, owned
    by ``caller``."""
    owner = fork_owner(caller, previous.info)
    await store.fork(previous.id, new_session_id=message_id, title=model, owner=owner)
