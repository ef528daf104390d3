"""Limits layer: a virtual key's and its team's budgets and rate limits, once per turn.

Below the guards (a request they refuse costs no budget and counts no request; the alias's
deployments are known, ``turn.candidates``) and above the session and the tool loop (one
admission however many model steps the turn takes). For a turn whose caller holds a key
(``turn.principal``) with limits:

* **admit** (:meth:`gateway.limits.backend.Limits.admit`): the turn's worst-case cost — its
  input estimate (a session-bound turn: the deployment's context window, which its rebuilt
  history fits) plus its output budget, at the dearest price among the deployments it may be
  routed to (:func:`gateway.limits.cost.worst_case_usd`) — is reserved on every hard budget of
  the key and the team, one request counted in their requests/min, one concurrent slot taken;
  or the turn is refused with nothing taken: :class:`gateway.errors.BudgetExceeded` (429,
  ``insufficient_quota``, when the budget resets), :class:`gateway.errors.RateLimitExceeded`
  (429, ``retry-after`` and the ``x-ratelimit-*`` headers) or
  :class:`gateway.errors.LimitsUnavailable` (503, Redis unreachable and ``redis.fail: closed``).
  An unpriced turn (a deployment without a price) under a hard budget is refused: its cost
  cannot be bounded.
* **settle** when the turn ends: the reservation is replaced by the answer's cost (summed over
  the tool loop's steps), its tokens go to tokens/min, the slot is freed; a turn that failed
  before an answer releases its reservation instead; a stream cut short is charged its
  reservation (what it cost is not known).

Counters are in process, or in Redis with ``redis.url`` (shared by every instance), seeded from
the spend ledger (:mod:`gateway.ledger`). A caller without a key, or a key without limits,
passes through at the cost of one attribute test. Deployment quotas (routing around a
provider's own limits) are not applied here yet.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import structlog

from gateway.errors import BudgetExceeded, InvalidRequest, LimitExceeded, TurnstileError
from gateway.limits.cost import worst_case_usd
from gateway.limits.model import Scope
from gateway.schema import Request, Response
from gateway.turn import Batches, Gateway, Service, Turn

log = structlog.get_logger("turnstile.limits")

DEFAULT_OUTPUT_BUDGET = 4096
"""Output tokens assumed for a turn that names no limit, on a deployment that names none."""
SESSION_WINDOW = 200_000
"""Input tokens a session-bound turn may send to a deployment whose ``context_window`` is not
configured (its history is rebuilt below this layer, to fit the window)."""


def scopes_of(turn: Turn) -> list[Scope]:
    """The limited scopes of ``turn``'s caller: its key, then its team (empty without a key)."""
    p = turn.principal
    if p is None:
        return []
    out = [Scope.of("key", p.key_id, p.key_budgets, p.key_rate_limits)]
    if p.team_id:
        out.append(Scope.of("team", p.team_id, p.team_budgets, p.team_rate_limits))
    return [s for s in out if s.limited]


def worst_case(turn: Turn, request: Request) -> float | None:
    """USD the turn can cost at most on the dearest of its candidate deployments (None when one
    of them has no price)."""
    from gateway.providers.catalog import count_tokens

    candidates = turn.candidates or []
    if not candidates:
        return None
    worst = 0.0
    input_tokens = count_tokens(request, candidates[0].model, wait=False, bound=True)  # never blocks the loop
    for dep in candidates:
        budget = request.max_output_tokens or dep.max_output_tokens or DEFAULT_OUTPUT_BUDGET
        sent = input_tokens
        if turn.session_id:
            # The session's history is added below (its view fits the deployment's window):
            # only the window bounds what goes up.
            sent = max(sent, (dep.context_window or SESSION_WINDOW) - budget)
        cost = worst_case_usd(sent, budget, dep.price)
        if cost is None:
            return None
        worst = max(worst, cost)
    return worst


def _spent(resp: Response | None) -> tuple[float | None, int]:
    if resp is None:
        return None, 0
    u = resp.usage
    tokens = (u.input_tokens or 0) + (u.cache_read_tokens or 0) + (u.cache_write_tokens or 0)
    return u.cost_usd, tokens + (u.output_tokens or 0)


class LimitsLayer:
    """Admits a keyed turn against its key's and team's limits, settles it when it ends."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner

    async def _admit(self, turn: Turn, request: Request, scopes: list[Scope]) -> Any:
        cost = worst_case(turn, request)
        if cost is None:
            hard = [f"{s.name} {b.period}" for s in scopes for b in s.budgets if b.hard]
            if hard:
                raise InvalidRequest(
                    f"model {request.model!r} has a deployment without a price, so the turn's cost "
                    f"cannot be held to the hard budget of {', '.join(hard)}",
                    param="model",
                )
            cost = 0.0
        try:
            reservation = await self.gw.limits.admit(scopes, cost)
        except LimitExceeded as err:
            limit = "budget" if isinstance(err, BudgetExceeded) else str(getattr(err, "dimension", "rate"))
            self.gw.metrics.limit_rejected(limit, str(err.scope).partition(":")[0])
            log.info("limit_refused", request_id=turn.request_id, scope=err.scope, limit=limit)
            raise
        for alert in reservation.alerts:
            self.gw.metrics.limit_rejected("soft_budget", alert.scope.partition(":")[0])
            log.warning(
                "soft_budget_exceeded",
                request_id=turn.request_id,
                scope=alert.scope,
                period=alert.period,
                limit_usd=alert.limit_usd,
                spent_usd=alert.spent_usd,
            )
        if reservation.headers:
            turn.limit_headers = reservation.headers
        return reservation

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
            await self.gw.limits.release(reservation)
            raise
        cost, tokens = _spent(response)
        await self.gw.limits.settle(reservation, cost, tokens)
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
            await self.gw.limits.release(reservation)
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
            if outcome is not None and outcome.response is None and isinstance(outcome.error, TurnstileError):
                await self.gw.limits.release(reservation)
            else:
                cost, tokens = _spent(outcome.response if outcome is not None else None)
                await self.gw.limits.settle(reservation, cost, tokens)
