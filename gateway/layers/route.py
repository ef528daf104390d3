"""Route layer: which deployment serves the turn, and what happens when one fails.

The decision is made once per turn, at its first visit (:func:`gateway.route_step.route`:
features, fit, policy, stickiness; kept in ``turn.route`` and ``turn.order``; the tool loop's
later steps reuse it). Then ONE fallback loop, for whole answers and streams alike, tries the
deployments in order: before each attempt :func:`~gateway.route_step.may_attempt` (retry
budget, windows after a context overflow), then the layer below for that deployment
(``turn.deployment``), then :func:`~gateway.route_step.succeeded` or
:func:`~gateway.route_step.failed` (health, cooldown, whether the next may be tried). A stream
counts as answered at its first batch; nothing is retried after that. Cascade (whole answers
only): an answer that fails its tier's validation goes on to the next tier, and the wasted
attempts are paid for too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from gateway import accounting, route_step
from gateway.config import Deployment
from gateway.errors import UpstreamError
from gateway.schema import Request, Response
from gateway.turn import Batches, Gateway, Service, Turn

T = TypeVar("T")

LARGE_REQUEST_MESSAGES = 2_000
"""Conversations longer than this (messages) are routed in a worker thread (feature
extraction reads the whole conversation)."""

NO_DEPLOYMENT = "no deployment could be tried for this turn (retry budget exhausted)"


class RouteLayer:
    """Decides the order of the turn's deployments and falls back along it."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner
        route_step.engine(gw)

    async def _order(self, turn: Turn, request: Request) -> list[Deployment]:
        order = turn.order
        if order is None:
            candidates = turn.candidates or self.gw.table.candidates(turn.request.model)
            if len(request.messages) > LARGE_REQUEST_MESSAGES:
                order = await asyncio.to_thread(route_step.route, self.gw, turn, request, candidates)
            else:
                order = route_step.route(self.gw, turn, request, candidates)
            turn.order = order
        return order

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The first answer along the order (cascade: the first that passes validation)."""
        order = await self._order(turn, request)
        if turn.route is not None and turn.route.get("cascade"):
            return await self._cascade(turn, request, order)
        return await self._fallback(turn, request, order, self.inner.complete)

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The first stream along the order that yields its first batch."""
        return await self._fallback(turn, request, await self._order(turn, request), self.inner.stream)

    async def _fallback(
        self,
        turn: Turn,
        request: Request,
        order: list[Deployment],
        attempt: Callable[[Turn, Request], Awaitable[T]],
        start: int = 0,
    ) -> T:
        """The answer of the first deployment of ``order[start:]`` that gives one; raises the
        last retryable failure when none did, the first other failure at once, and a 503
        when the retry budget let none be tried."""
        gw = self.gw
        last: UpstreamError | None = None
        for n in range(start, len(order)):
            dep = order[n]
            if not route_step.may_attempt(gw, turn, dep, n):
                continue
            turn.deployment = dep
            t0 = time.perf_counter()
            try:
                answer = await attempt(turn, request)
            except UpstreamError as err:
                turn.note_failed_attempt(dep, err)
                if not route_step.failed(gw, turn, dep, err):
                    raise
                last = err
                continue
            route_step.succeeded(gw, dep, (time.perf_counter() - t0) * 1000)
            turn.tried = n
            return answer
        raise last if last is not None else UpstreamError(NO_DEPLOYMENT, status=503)

    async def _cascade(self, turn: Turn, request: Request, order: list[Deployment]) -> Response:
        """:meth:`_fallback`, then each answer that must escalate
        (:func:`~gateway.route_step.escalation`) goes on along the order; the last one is
        returned when every tier was tried, with the usage of all of them."""
        rejected: Response | None = None
        start = 0
        while True:
            try:
                resp = await self._fallback(turn, request, order, self.inner.complete, start)
            except UpstreamError:
                if rejected is None:
                    raise
                return rejected
            if rejected is not None:  # the cascade's wasted attempts are paid for too
                resp = resp.model_copy(update={"usage": accounting.merge_usage(rejected.usage, resp.usage)})
            n = turn.tried
            if route_step.escalation(turn, request, resp, n, len(order)) is None:
                return resp
            rejected, start = resp, n + 1
