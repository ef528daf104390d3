"""Session layer: a turn bound to a session (``turn.session_id``, read by the server from
``x-turnstile-session``, ``metadata.turnstile_session`` or a ``session:<id>`` user) records
what the client sent before the turn runs and the answer after it.

It binds the turn (:class:`gateway.sessions.turns.SessionBinding`, kept on ``turn.session``):
the client's new messages are appended and the turn leaf read once. Below it, the tool loop
appends its steps through that handle and the window layer rebuilds the context for each
target from it. An unbound turn passes through untouched.
"""

from __future__ import annotations

from gateway.schema import Request, Response
from gateway.sessions.turns import SessionBinding
from gateway.turn import Batches, Gateway, Service, SessionHandle, Turn


class SessionLayer:
    """Binds a session's turn before, appends its answer after."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer, appended to the bound session."""
        if not turn.session_id or self.gw.sessions is None:
            return await self.inner.complete(turn, request)
        session = turn.session = await SessionBinding.open(self.gw, turn.session_id, turn.request_id, request)
        response = await self.inner.complete(turn, request)
        await session.finish(response)
        return response

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream; its answer (as delivered) is appended when it ends."""
        if not turn.session_id or self.gw.sessions is None:
            return await self.inner.stream(turn, request)
        session = turn.session = await SessionBinding.open(self.gw, turn.session_id, turn.request_id, request)
        return _appended(turn, session, await self.inner.stream(turn, request))


async def _appended(turn: Turn, session: SessionHandle, batches: Batches) -> Batches:
    try:
        async for batch in batches:
            yield batch
    finally:
        await session.finish(turn.outcome.response if turn.outcome is not None else None)
