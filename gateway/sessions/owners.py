"""Who may see a session: server-side conversation state is isolated between virtual keys.

Every session — one bound with ``x-turnstile-session`` (or metadata / user), a stored OpenAI
response (``resp_…``) and an Anthropic message thread's answer (``msg_…``) — records who
created it (:class:`gateway.sessions.model.Owner`: the caller's virtual key and team, both None
for an anonymous caller) when its row is inserted; the database never lets it change
(migration 3). From then on:

* a caller holding a **virtual key** sees only the sessions its key created (another key of
  the same team does not: a team shares budgets, not conversations). A key keeps its id when
  it is rotated, so its sessions stay its own;
* an **anonymous** caller (``access.auth: optional`` without a key, or ``access.auth: off``,
  where keys are not read) sees only the sessions anonymous callers created — never a key's;
* the **admin key** (``access.admin_key_env``) sees every session on the session and stored
  response endpoints (list, read, fork, label, compact, delete); it is not a virtual key and
  runs no turns. A fork the admin makes keeps its source's owner.

A session the caller may not see is answered exactly as one that does not exist (404 in the
client's dialect, the same message), so its existence is not revealed; except that a
client-chosen session id (``x-turnstile-session``, the fork API's ``session_id``) is one name
space for every caller, so naming another key's id is refused (404) where a free id would have
been created: choose unguessable ids. Sessions stored before owners were recorded have none
(anonymous): only anonymous callers and the admin key reach them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.sessions.model import ANONYMOUS, Owner, SessionInfo
from gateway.sessions.store import SessionNotFound, SessionStore


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks for a session: the :class:`Owner` its sessions get (its key and team, or
    anonymous), and whether it presented the admin key (sees everything)."""

    owner: Owner = ANONYMOUS
    admin: bool = False

    @property
    def key_id(self) -> str | None:
        """The caller's virtual key id (None: anonymous or the admin)."""
        return self.owner.key_id


ANONYMOUS_CALLER = Caller()
"""A caller without a virtual key."""

ADMIN_CALLER = Caller(admin=True)
"""The admin key's caller."""

STATE_PRINCIPAL = "principal"
STATE_ADMIN = "admin"
"""Keys of the request's ``scope["state"]`` where :class:`gateway.access.middleware.KeyCheck`
leaves the caller's principal (or None) and whether it presented the admin key."""


def owner_of(principal: Any) -> Owner:
    """The owner of what ``principal`` (a :class:`gateway.access.model.Principal`, or None for
    an anonymous caller) creates."""
    if principal is None:
        return ANONYMOUS
    return Owner(key_id=principal.key_id, team_id=principal.team_id)


def caller_of(principal: Any, *, admin: bool = False) -> Caller:
    """The :class:`Caller` of ``principal`` (None: anonymous), or the admin."""
    if admin:
        return ADMIN_CALLER
    return ANONYMOUS_CALLER if principal is None else Caller(owner_of(principal))


def request_caller(state: Mapping[str, Any] | None) -> Caller:
    """The caller of a request that is not a turn, from what the key check left in its
    ``scope["state"]`` (anonymous when it left nothing: keys off)."""
    if not state:
        return ANONYMOUS_CALLER
    return caller_of(state.get(STATE_PRINCIPAL), admin=bool(state.get(STATE_ADMIN)))


def may_see(caller: Caller, info: SessionInfo) -> bool:
    """Whether ``caller`` may read, continue, fork, label or compact the session ``info``."""
    return caller.admin or info.owner_key == caller.owner.key_id


def absent(session_id: str) -> SessionNotFound:
    """The 404 of a session that does not exist — also of one the caller may not see."""
    return SessionNotFound(f"no session {session_id!r}", param="session")


async def visible(store: SessionStore, session_id: str, caller: Caller) -> SessionInfo:
    """The session ``session_id`` if ``caller`` may see it. Raises :class:`SessionNotFound`,
    the same for a session that is not there and one of another owner."""
    info = await store.get_session(session_id)
    if not may_see(caller, info):
        raise absent(session_id)
    return info


async def claim(store: SessionStore, session_id: str, caller: Caller) -> SessionInfo:
    """The client-chosen session ``session_id``, created owned by ``caller`` when it does not
    exist yet. Raises :class:`SessionNotFound` when another owner's session holds the id."""
    info = await store.create_session(session_id, owner=caller.owner)
    if not may_see(caller, info):
        raise absent(session_id)
    return info


def fork_owner(caller: Caller, source: SessionInfo) -> Owner:
    """Who owns a fork of ``source`` that ``caller`` makes: the caller, or for the admin the
    source's owner (the key whose conversation it is)."""
    if caller.admin:
        return Owner(key_id=source.owner_key, team_id=source.owner_team)
    return caller.owner
