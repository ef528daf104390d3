"""Window layer: a session-bound turn sends the session's context rebuilt for the target's
context window (``turn.session.view``: the path to the turn's leaf, compacted when it does
not fit and a compaction deployment is configured), not the client's copy of the history.
Keys of another wire API that earlier turns left on the logged messages (a Responses item's
``phase``, a Chat message's ``audio``: :class:`gateway.schema.OwnKeys`) do not reach this
deployment: each is named dropped (``history.<key>``) unless the client sent it in this request
or the target layer named it (:func:`note_history_keys`).
When the target still refuses the request as too long for its window (a whole answer), the
session is compacted harder and the request retried once on the same deployment. A keyed turn
under a budget holds the rebuilt request's worst case before it goes upstream
(``turn.context_hold``, :class:`gateway.limits.holds.ContextHold`: the limits layer above
reserved only what the client sent). An unbound turn passes through.
"""

from __future__ import annotations

from gateway.config import Deployment
from gateway.errors import UpstreamError
from gateway.schema import Request, Response
from gateway.sessions.turns import foreign_own_keys, note_foreign_keys
from gateway.thinking_fit import fit_thinking
from gateway.turn import Batches, Gateway, Service, Turn


class WindowLayer:
    """Rebuilds a bound turn's context for ``turn.deployment``."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.inner = inner
        self.policy = gw.config.guards

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer to the rebuilt request (retried once after a context overflow)."""
        session, dep = turn.session, turn.deployment
        if session is None or dep is None:
            return await self.inner.complete(turn, request)
        request = self.fit(turn, await session.view(request, dep), request, dep)
        if turn.context_hold is not None:
            await turn.context_hold.fit(request, dep)
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
            request = self.fit(turn, await session.view(request, dep), request, dep)
            if turn.context_hold is not None:
                await turn.context_hold.fit(request, dep)
        return await self.inner.stream(turn, request)

    def fit(self, turn: Turn, rebuilt: Request, request: Request, dep: Deployment) -> Request:
        """The context ``rebuilt`` from the session log, fit for ``dep``: its history's own keys
        of another wire API named (:func:`note_history_keys`), the thinking policy applied
        (:func:`gateway.thinking_fit.fit_thinking`)."""
        if any(m.own is not None for m in rebuilt.messages):
            note_history_keys(turn, rebuilt, request, dep)
        return fit_thinking(turn, rebuilt, dep, self.policy)


def note_history_keys(turn: Turn, rebuilt: Request, request: Request, dep: Deployment) -> None:
    """Note on ``turn`` each own key of another wire API on the history rebuilt from the
    session log that ``dep`` does not get and that the layers above did not name (the messages
    of ``request``: :func:`gateway.sessions.turns.foreign_own_keys`)."""
    note_foreign_keys(turn, foreign_own_keys(rebuilt.messages, dep.api, request.messages), dep)
