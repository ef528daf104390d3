"""Window layer: a session-bound turn sends the session's context rebuilt for the target's
context window (``turn.session.view``: the path to the turn's leaf, compacted when it does
not fit and a compaction deployment is configured), not the client's copy of the history.
When the target still refuses the request as too long for its window (a whole answer), the
session is compacted harder and the request retried once on the same deployment. An unbound
turn passes through.
"""

from __future__ import annotations

from gateway.errors import UpstreamError
from gateway.schema import Request, Response
from gateway.turn import Batches, Gateway, Service, Turn


class WindowLayer:
    """Rebuilds a bound turn's context for ``turn.deployment``."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.inner = inner

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer to the rebuilt request (retried once after a context overflow)."""
        session, dep = turn.session, turn.deployment
        if session is None or dep is None:
            return await self.inner.complete(turn, request)
        request = await session.view(request, dep)
        try:
            return await self.inner.complete(turn, request)
        except UpstreamError as err:
            retry = await session.after_overflow(request, dep, err)
            if retry is None:
                raise
            turn.note_failed_attempt(dep, err)
        return await self.inner.complete(turn, retry)

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream of the rebuilt request."""
        session, dep = turn.session, turn.deployment
        if session is not None and dep is not None:
            request = await session.view(request, dep)
        return await self.inner.stream(turn, request)
