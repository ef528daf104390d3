"""Session layer: a turn bound to a session (``turn.session_id``, read by the server from
``x-turnstile-session``, ``metadata.turnstile_session`` or a ``session:<id>`` user) records
what the client sent before the turn runs and the answer after it.

It binds the turn (:class:`gateway.sessions.turns.SessionBinding`, kept on ``turn.session``):
the client's new messages are appended below the session's last finished interaction and the
session leaf read once (the rule, and what concurrent turns see:
:mod:`gateway.sessions.turns`). Below it, the tool loop appends its steps through that handle
and the window layer rebuilds the context for each target from it; the answer moves the
session leaf. An unbound turn passes through untouched.

A tool result the client sent without its call (the guards layer deferred it, the call being
in the session's history) is paired here against the path it attaches below: a result whose
call is not there either is refused with the guards' 400 (``orphan_tool_result``, or
``duplicate_tool_result`` for a call answered already) before anything is stored, and counted
as a guard rejection (``turn.guard_outcome``).

A session the client names belongs to the caller that created it (the access layer above put
the caller's key on ``turn.principal``; :mod:`gateway.sessions.owners`): a new id is created
owned by the caller, an id of another owner's session is refused as not found (404) before
anything is appended. The gateway's own sessions (stored responses, threads) were created and
checked by the server.
"""

from __future__ import annotations

import structlog

from gateway.errors import GuardViolation
from gateway.schema import Request, Response
from gateway.sessions import responses, threads
from gateway.sessions.owners import caller_of, claim
from gateway.sessions.turns import SessionBinding
from gateway.turn import Batches, Gateway, Service, SessionHandle, Turn

log = structlog.get_logger("turnstile.pipeline")

SERVER_MADE = (responses.PREFIX, threads.PREFIX)
"""Prefixes of the session ids the server makes (and checks the owner of) before the chain."""


class SessionLayer:
    """Binds a session's turn before, appends its answer after."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner

    async def _bind(self, turn: Turn, request: Request) -> SessionBinding:
        """The turn's binding, once its session is the caller's. Raises
        :class:`gateway.sessions.store.SessionNotFound` for another owner's session and
        :class:`GuardViolation` for a tool result paired with no call (module doc)."""
        sid = turn.session_id
        assert sid is not None
        if not sid.startswith(SERVER_MADE):
            await claim(self.gw.sessions, sid, caller_of(turn.principal))
        try:
            return await SessionBinding.open(self.gw, sid, turn.request_id, request)
        except GuardViolation as err:
            turn.guard_outcome = "rejected"
            log.warning(
                "guard_rejected",
                request_id=turn.request_id,
                session=sid,
                problems=[p.message for p in err.problems],
            )
            raise

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer, appended to the bound session."""
        if not turn.session_id or self.gw.sessions is None:
            return await self.inner.complete(turn, request)
        session = turn.session = await self._bind(turn, request)
        response = await self.inner.complete(turn, request)
        await session.finish(response)
        return response

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream; its answer (as delivered) is appended when it ends."""
        if not turn.session_id or self.gw.sessions is None:
            return await self.inner.stream(turn, request)
        session = turn.session = await self._bind(turn, request)
        return _appended(turn, session, await self.inner.stream(turn, request))


async def _appended(turn: Turn, session: SessionHandle, batches: Batches) -> Batches:
    try:
        async for batch in batches:
            yield batch
    finally:
        await session.finish(turn.outcome.response if turn.outcome is not None else None)
