"""Limits layer: a virtual key's and its team's budgets and rate limits, once per turn.

Below the guards (a request they refuse costs no budget and counts no request; the alias's
deployments are known, ``turn.candidates``) and above the session and the tool loop (one
admission however many model steps the turn takes). For a turn whose caller holds a key
(``turn.principal``) with limits:

* **admit** (:class:`gateway.limits.holds.Admitter`): the turn's worst-case cost — its input
  estimate plus its output budget, at the dearest price among the deployments it may be routed
  to (:func:`gateway.limits.holds.worst_case`) — is reserved on every hard budget of the key and
  the team, one request counted in their requests/min, one concurrent slot taken; or the turn
  is refused with nothing taken: :class:`gateway.errors.BudgetExceeded` (429,
  ``insufficient_quota``, when the budget resets), :class:`gateway.errors.RateLimitExceeded`
  (429, ``retry-after`` and the ``x-ratelimit-*`` headers) or
  :class:`gateway.errors.LimitsUnavailable` (503, Redis unreachable and ``redis.fail: closed``).
  Refusals are counted and audited, unchecked admissions counted. An unpriced turn (a
  deployment without a price) under a hard budget is refused: its cost cannot be bounded.
* **a session-bound turn** sends the history the window layer rebuilds below, unknown here: its
  admission reserves the worst case of what the client sent, and ``turn.context_hold``
  (:class:`gateway.limits.holds.ContextHold`) holds the rest once the window layer rebuilt the
  request for a deployment (refused with the budget's 429 when it does not fit), released after
  the turn (or tool-loop step) is settled.
* **model steps of the tool loop**: a turn running the server-side tool loop is admitted
  without a reservation (its request counted, its slot taken) and gets ``turn.step_holds``
  (:class:`gateway.limits.holds.StepHolds`), with which the tool loop layer reserves each
  model step's worst case on the budgets before it goes upstream (refused with
  ``BudgetExceeded`` when it does not fit) and settles it with its cost when it ends. Holding
  one step at a time keeps a loop from holding budget it no longer needs (its earlier steps'
  worst cases); the price: under a tight budget, a concurrent loop can be refused at a later
  step after its earlier steps were spent.
* **settle** when the turn ends, with what it cost as its transcript row records it: the
  answer's cost (summed over the tool loop's steps; a stream cut short: what was delivered,
  priced), or, for a turn that failed after some tool-loop steps answered, those steps'
  (``turn.spent``) — less what the step holds settled already; its tokens go to tokens/min,
  the slot is freed. A turn that failed having spent nothing releases its reservation.

Counters are in process, or in Redis with ``redis.url`` (shared by every instance), seeded from
the spend ledger (:mod:`gateway.ledger`). A caller without a key, or a key without limits,
passes through at the cost of one attribute test. Deployment quotas (routing around a
provider's own limits) are the route layer's (:mod:`gateway.limits.quotas`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from gateway.config import Deployment
from gateway.errors import InvalidRequest
from gateway.limits.holds import Admitter, ContextHold, StepHolds, principal_scopes, worst_case
from gateway.limits.model import Scope
from gateway.schema import Request, Response, Usage
from gateway.turn import Batches, Gateway, Service, Turn


def scopes_of(turn: Turn) -> list[Scope]:
    """The limited scopes of ``turn``'s caller: its key, then its team (empty without a key)."""
    return principal_scopes(turn.principal)


def _recount(
    candidates: list[Deployment], request: Request, session_bound: bool, bound: float
) -> Callable[[], float]:
    """The turn's worst case with its input counted exactly (``bound``: unpriced)."""

    def exact() -> float:
        cost = worst_case(candidates, request, session_bound=session_bound, exact=True)
        return bound if cost is None else cost

    return exact


def _tokens(u: Usage) -> int:
    return (
        (u.input_tokens or 0)
        + (u.cache_read_tokens or 0)
        + (u.cache_write_tokens or 0)
        + (u.output_tokens or 0)
    )


class LimitsLayer:
    """Admits a keyed turn against its key's and team's limits, settles it when it ends."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner

    async def _admit(self, turn: Turn, request: Request, scopes: list[Scope]) -> Any:
        candidates = turn.candidates or []
        session_bound = bool(turn.session_id)
        cost = worst_case(candidates, request, session_bound=session_bound)
        if cost is None:
            hard = [f"{s.name} {b.period}" for s in scopes for b in s.budgets if b.hard]
            if hard:
                raise InvalidRequest(
                    f"model {request.model!r} has a deployment without a price, so the turn's cost "
                    f"cannot be held to the hard budget of {', '.join(hard)}",
                    param="model",
                )
            cost = 0.0
        admitter = Admitter(
            self.gw.limits, self.gw.metrics, self.gw.identity, turn.principal, turn.request_id
        )
        looping = turn.loop_tools is not None and any(s.budgets for s in scopes)
        # a tool loop's steps are each held on the budgets (the first too): the turn's own
        # admission counts the request and takes the slot; nothing is reserved for it
        if looping:
            reservation = await admitter.admit(scopes, 0.0)
        else:
            reservation = await admitter.admit(
                scopes, cost, _recount(candidates, request, session_bound, cost)
            )
        if reservation.headers:
            turn.limit_headers = reservation.headers
        context = None
        if session_bound and any(s.budgets for s in scopes):
            context = turn.context_hold = ContextHold(admitter, scopes, admitter.last_cost_usd)
        if looping:
            turn.step_holds = StepHolds(
                admitter, scopes, candidates, session_bound=session_bound, context=context
            )
        return reservation

    async def _finish(self, turn: Turn, reservation: Any, response: Response | None) -> None:
        """Settle ``reservation`` with what the turn cost as its row records it (see the
        module docstring), or release it when the turn spent nothing."""
        usage = response.usage if response is not None else turn.spent
        context: ContextHold | None = turn.context_hold
        if usage is None:
            await self.gw.limits.release(reservation)
        else:
            holds: StepHolds | None = turn.step_holds
            cost = usage.cost_usd or 0.0
            if holds is not None:
                cost = max(cost - holds.settled_usd, 0.0)
            await self.gw.limits.settle(reservation, cost, _tokens(usage))
        if context is not None:  # after the settle: the counters never hold less than the cost
            await context.release()

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer, admitted and settled (see the module docstring)."""
        if turn.principal is None or self.gw.limits is None:
            return await self.inner.complete(turn, request)
        scopes = scopes_of(turn)
        if not scopes:
            return await self.inner.complete(turn, request)
        reservation = await self._admit(turn, request, scopes)
        try:
            response = await self.inner.complete(turn, request)
        except BaseException:
            await self._finish(turn, reservation, None)
            raise
        await self._finish(turn, reservation, response)
        return response

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream, admitted before it starts, settled once it ends."""
        if turn.principal is None or self.gw.limits is None:
            return await self.inner.stream(turn, request)
        scopes = scopes_of(turn)
        if not scopes:
            return await self.inner.stream(turn, request)
        reservation = await self._admit(turn, request, scopes)
        try:
            batches = await self.inner.stream(turn, request)
        except BaseException:
            await self._finish(turn, reservation, None)
            raise
        return self._settled(turn, reservation, batches)

    async def _settled(self, turn: Turn, reservation: Any, batches: Batches) -> AsyncIterator[Any]:
        try:
            async for batch in batches:
                yield batch
        finally:
            close = getattr(batches, "aclose", None)
            if close is not None:
                await close()  # the producer records how the stream ended (turn.outcome)
            outcome = turn.outcome
            await self._finish(turn, reservation, outcome.response if outcome is not None else None)
