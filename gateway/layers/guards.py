"""Guards layer: the request is checked before anything else runs for it.

In order: the model's deployments are looked up (an unknown or disabled model is refused, 404),
the tool loop's MCP tools are attached (:func:`gateway.mcp_tools.offer`, so validation counts
them as offered), the request is validated (:func:`gateway.validation.validate_request`), the
pairing and ordering guards run (:func:`gateway.invariants.check_request`: a repair is kept in
``turn.repairs``, a rejection raises :class:`GuardViolation`; for a session-bound turn a tool
result whose call is not in the request is left to the session layer, which pairs it against
the session's history: the client need not resend what the session holds), and thinking signatures are
resolved for the model's deployments (:func:`gateway.signers.resolve`), and signed thinking the
client did not send back is restored from the gateway's memory where it is known
(:meth:`gateway.thinking_memory.ThinkingMemory.restore`, repair ``thinking_restored``; with
``redis.url`` what another instance remembered is read first: :mod:`gateway.fleet.memory`). Long conversations
(over :data:`LARGE_REQUEST_MESSAGES` messages) are checked in a worker thread, so one huge
request does not stall every other request on the event loop.
"""

from __future__ import annotations

import asyncio

import structlog

from gateway import invariants, mcp_tools, signers
from gateway.errors import GuardViolation
from gateway.schema import Request, Response
from gateway.turn import Batches, Gateway, Service, Turn
from gateway.validation import validate_request

log = structlog.get_logger("turnstile.pipeline")

LARGE_REQUEST_MESSAGES = 2_000
"""Conversations longer than this (messages) are guarded in a worker thread."""


class GuardLayer:
    """Hands the inner layer the checked (possibly repaired) request."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner
        self.policy = gw.config.guards

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer to the checked request."""
        offered = mcp_tools.offer(self.gw, turn)  # on the event loop: the registry is not shared
        if self.gw.fleet is not None:  # what other instances remembered (one round trip at most)
            await self.gw.fleet.prefetch(offered)
        if len(request.messages) > LARGE_REQUEST_MESSAGES:
            checked = await asyncio.to_thread(self.check, turn, offered)
        else:  # no coroutine for the common case
            checked = self.check(turn, offered)
        return await self.inner.complete(turn, checked)

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream of the checked request."""
        offered = mcp_tools.offer(self.gw, turn)
        if self.gw.fleet is not None:
            await self.gw.fleet.prefetch(offered)
        if len(request.messages) > LARGE_REQUEST_MESSAGES:
            checked = await asyncio.to_thread(self.check, turn, offered)
        else:
            checked = self.check(turn, offered)
        return await self.inner.stream(turn, checked)

    def check(self, turn: Turn, request: Request) -> Request:
        """Deployments, validation, pairing and ordering, signatures, restored thinking over ``request`` (the
        turn's request with the tool loop's MCP tools attached); sets ``turn.candidates``.
        Raises :class:`gateway.errors.NotFound` for an unknown model,
        :class:`gateway.errors.InvalidRequest` for an invalid request and
        :class:`GuardViolation` when the guards reject it."""
        candidates = turn.candidates = self.gw.table.candidates(turn.request.model)
        validate_request(request)
        try:
            if turn.session_id is None:
                outcome = invariants.check_request(request, self.policy)
            else:  # the session layer pairs a result with its history (gateway.sessions.turns)
                bound = self.gw.sessions is not None
                outcome = invariants.check_request(request, self.policy, defer_unmatched_results=bound)
        except GuardViolation as err:
            turn.guard_outcome = "rejected"
            log.warning(
                "guard_rejected", request_id=turn.request_id, problems=[p.message for p in err.problems]
            )
            raise
        if outcome.repairs:
            turn.guard_outcome = "repaired"
            turn.add_repairs(outcome.repairs)
            log.info("guard_repaired", request_id=turn.request_id, repairs=turn.repairs)
        resolved = signers.resolve(outcome.request, candidates, self.gw.signers)
        restored, repairs = self.gw.thinking.restore(resolved)
        if repairs:
            turn.add_repairs(repairs)
            log.info("thinking_restored", request_id=turn.request_id, messages=len(repairs))
        return restored
