"""A keyed caller's model calls held to its limits: the turn's admission and a budget hold for
every model call after it.

The limits layer admits a turn once (:class:`Admitter`): its first model call's worst case
reserved on the key's and team's hard budgets, one request counted, one concurrent slot taken.
A turn can make more model calls than that one — every step of the server-side tool loop after
the first, every summary call of ``POST /v1/sessions/{id}/compact`` — and each of them is held
here before it goes upstream (:class:`StepHolds`): its own worst case reserved on every budget
of the key and team (no request counted, no slot: those are the turn's), settled with its
priced cost when it ends, released when it fails without an answer. A call whose worst case
does not fit is refused (:class:`gateway.errors.BudgetExceeded`) before it is sent, so a hard
budget is never exceeded by a turn's later calls either, under any concurrency (every
admission is the backend's atomic check-and-reserve).

The turn's own reservation is settled last, with the turn's cost less what its holds settled
(:attr:`StepHolds.settled_usd`), so the counters charge exactly the turn's cost, as its
transcript row does.

Every admission is reported alike (:meth:`Admitter.admit`): a refusal is counted in
``turnstile_limit_rejections_total`` and audited (``limit.refused``), a soft budget passed is
logged and counted, an admission without the shared counters (``redis.fail: open``) or refused
for their absence is counted in ``turnstile_limit_counters_unreachable_total``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import structlog

from gateway.config import Deployment
from gateway.errors import BudgetBusy, BudgetExceeded, LimitExceeded, LimitsUnavailable
from gateway.limits.backend import Limits
from gateway.limits.cost import worst_case_usd
from gateway.limits.decisions import Reservation
from gateway.limits.estimate import input_token_bound
from gateway.limits.model import Scope
from gateway.schema import Request

log = structlog.get_logger("turnstile.limits")

DEFAULT_OUTPUT_BUDGET = 4096
"""Output tokens assumed for a call that names no limit, on a deployment that names none."""


def worst_case(
    candidates: Sequence[Deployment], request: Request, *, session_bound: bool, exact: bool = False
) -> float | None:
    """USD one model call of ``request`` can cost at most on the dearest of ``candidates``
    (the deployments it may be routed to): its input tokens plus its output budget
    (``max_output_tokens``, else the deployment's, else :data:`DEFAULT_OUTPUT_BUDGET`). The
    input tokens are the cheap upper bound of :func:`gateway.limits.estimate.input_token_bound`
    (no tokenizer run), or with ``exact`` (or for a request holding an image) the count of
    :func:`gateway.providers.catalog.count_tokens` (an upper bound while the tokenizer loads).
    ``session_bound``: the call carries a session's history rebuilt below (the window layer),
    unknown here — the estimate is then of the client's request only, and
    :class:`ContextHold` holds the rest once the history is rebuilt. None when there is no
    candidate or one has no price."""
    if not candidates:
        return None
    input_tokens = None if exact else input_token_bound(request)
    if input_tokens is None:
        from gateway.providers.catalog import count_tokens

        input_tokens = count_tokens(request, candidates[0].model, wait=False, bound=True)  # never blocks
    worst = 0.0
    for dep in candidates:
        budget = request.max_output_tokens or dep.max_output_tokens or DEFAULT_OUTPUT_BUDGET
        cost = worst_case_usd(input_tokens, budget, dep.price)
        if cost is None:
            return None
        worst = max(worst, cost)
    return worst


def principal_scopes(principal: Any) -> list[Scope]:
    """The limited scopes of a caller (a :class:`gateway.access.model.Principal`, or None for
    an anonymous one): its key, then its team; empty without a key or limits."""
    if principal is None:
        return []
    hit = _SCOPES.get(id(principal))
    if hit is not None and hit[0] is principal:  # the identity hands out one principal a key
        return hit[1]
    p = principal
    out = [Scope.of("key", p.key_id, p.key_budgets, p.key_rate_limits)]
    if p.team_id:
        out.append(Scope.of("team", p.team_id, p.team_budgets, p.team_rate_limits))
    scopes = [s for s in out if s.limited]
    if len(_SCOPES) >= 4096:
        _SCOPES.clear()
    _SCOPES[id(principal)] = (principal, scopes)  # held: its id is not reused while cached
    return scopes


_SCOPES: dict[int, tuple[Any, list[Scope]]] = {}
"""The scopes of recent principals (immutable, as their scopes are), by ``id``."""


def limit_name(err: LimitExceeded) -> str:
    """What refused: ``budget``, ``reserved`` (a budget full only of turns in flight:
    :class:`gateway.errors.BudgetBusy`), or the rate dimension (``requests``, ``tokens``,
    ``concurrent``)."""
    if isinstance(err, BudgetBusy):
        return "reserved"
    return "budget" if isinstance(err, BudgetExceeded) else str(getattr(err, "dimension", "rate"))


class Admitter:
    """Admits one keyed caller's model calls on ``limits`` and reports each admission (see
    the module docstring): to ``metrics`` (:class:`gateway.metrics.Metrics`), the log and, for
    refusals, ``identity``'s audit (:meth:`gateway.access.identity.Identity.limit_refused`;
    None: not audited). ``principal`` is the caller, ``request_id`` its turn's."""

    def __init__(self, limits: Limits, metrics: Any, identity: Any, principal: Any, request_id: str) -> None:
        self.limits = limits
        self.metrics = metrics
        self.identity = identity
        self.principal = principal
        self.request_id = request_id
        self.last_cost_usd = 0.0
        """USD the last :meth:`admit` reserved (its ``cost_usd``, or its ``recount``'s)."""

    async def admit(
        self, scopes: Sequence[Scope], cost_usd: float, recount: Callable[[], float] | None = None
    ) -> Reservation:
        """:meth:`gateway.limits.backend.Limits.admit`, reported. Raises what it raises.

        ``recount``: ``cost_usd`` is a cheap upper bound (:func:`worst_case`), and this gives
        the tighter one (the input counted exactly): asked only when a budget refuses
        ``cost_usd`` (nothing was taken then), and admitted with it when it is lower, so a
        turn the exact count admits is never refused for the cheap bound."""
        self.last_cost_usd = cost_usd
        try:
            try:
                reservation = await self.limits.admit(scopes, cost_usd)
            except BudgetExceeded:
                tighter = recount() if recount is not None else cost_usd
                if tighter >= cost_usd:
                    raise
                self.last_cost_usd = tighter
                reservation = await self.limits.admit(scopes, tighter)
        except LimitExceeded as err:
            limit = limit_name(err)
            self.metrics.limit_rejected(limit, err.scope.partition(":")[0])
            log.info("limit_refused", request_id=self.request_id, scope=err.scope, limit=limit)
            if self.identity is not None and self.principal is not None:
                await self.identity.limit_refused(
                    self.principal, err, limit=limit, request_id=self.request_id
                )
            raise
        except LimitsUnavailable:
            self.metrics.limit_counters_unreachable("refused")
            raise
        if reservation.degraded:
            self.metrics.limit_counters_unreachable("admitted")
            log.warning("limits_unchecked", request_id=self.request_id, scopes=[s.name for s in scopes])
        for alert in reservation.alerts:
            self.metrics.limit_rejected("soft_budget", alert.scope.partition(":")[0])
            log.warning(
                "soft_budget_exceeded",
                request_id=self.request_id,
                scope=alert.scope,
                period=alert.period,
                limit_usd=alert.limit_usd,
                spent_usd=alert.spent_usd,
            )
        return reservation


class StepHolds:
    """Budget holds for a turn's model calls after its admission (see the module docstring).

    ``scopes``: the turn's limited scopes (their budgets are held; their rate limits are the
    turn's, not repeated); ``candidates``: the deployments a call may go to;
    ``session_bound``: the calls carry a session's rebuilt history (worst case: the window).
    ``settled_usd``: USD the holds charged so far."""

    def __init__(
        self,
        admitter: Admitter,
        scopes: Sequence[Scope],
        candidates: Sequence[Deployment],
        *,
        session_bound: bool,
        context: ContextHold | None = None,
    ) -> None:
        self.admitter = admitter
        self.scopes = budget_scopes(scopes)
        self.candidates = list(candidates)
        self.session_bound = session_bound
        self.context = context
        self.settled_usd = 0.0

    async def hold(self, request: Request) -> Reservation | None:
        """Reserve the worst case of one call of ``request`` on every budget (None: no budget
        to hold). Raises :class:`gateway.errors.BudgetExceeded` when a hard budget cannot take
        it, :class:`gateway.errors.LimitsUnavailable` (fail closed)."""
        if not self.scopes:
            return None
        cost = worst_case(self.candidates, request, session_bound=self.session_bound)
        # None: an unpriced deployment, admitted only where no budget is hard (the turn's
        # admission refused it otherwise); nothing to reserve then
        if cost is None:
            held = await self.hold_usd(0.0)
        else:
            held = await self.admitter.admit(self.scopes, cost, self._recount(request, cost))
        if self.context is not None:  # the window layer tops this step up
            self.context.rebase(self.admitter.last_cost_usd if cost is not None else 0.0)
        return held

    def _recount(self, request: Request, bound: float) -> Callable[[], float]:
        def exact() -> float:
            cost = worst_case(self.candidates, request, session_bound=self.session_bound, exact=True)
            return bound if cost is None else cost

        return exact

    async def hold_usd(self, cost_usd: float) -> Reservation | None:
        """Reserve ``cost_usd`` (a call's worst case, USD) on every budget; as :meth:`hold`."""
        if not self.scopes:
            return None
        return await self.admitter.admit(self.scopes, cost_usd)

    async def settle(self, hold: Reservation | None, cost_usd: float | None) -> None:
        """The call ended having cost ``cost_usd`` (None: nothing priced, charged as 0, as its
        transcript row counts it)."""
        if hold is None:
            return
        charged = max(cost_usd or 0.0, 0.0)
        await self.admitter.limits.settle(hold, charged, 0)
        self.settled_usd += charged
        if self.context is not None:
            await self.context.release()

    async def release(self, hold: Reservation | None) -> None:
        """The call failed without an answer: its hold is given back."""
        if hold is not None:
            await self.admitter.limits.release(hold)
        if self.context is not None:
            await self.context.release()


def budget_scopes(scopes: Sequence[Scope]) -> list[Scope]:
    """``scopes`` with their budgets only (their rate limits are the turn's, not repeated)."""
    return [Scope(s.kind, s.id, s.budgets, None) for s in scopes if s.budgets]


class ContextHold:
    """A session-bound call's input, held once it is known.

    The limits layer sits above the session: it reserves the worst case of what the client sent
    (its new messages and the output budget, ``base_usd``), not the history the window layer
    rebuilds below for each deployment tried. :meth:`fit` is called with that rebuilt request
    before it goes upstream, and holds on every budget the part of its worst case the base does
    not cover (refused with :class:`gateway.errors.BudgetExceeded` when it does not fit): a
    turn holds what its call may really cost, not a whole context window, and a hard budget is
    still never exceeded. What :meth:`fit` held is given back by :meth:`release` after the
    call's own reservation was settled with its cost (first settle, then release: the counters
    never hold less than the cost)."""

    def __init__(self, admitter: Admitter, scopes: Sequence[Scope], base_usd: float) -> None:
        self.admitter = admitter
        self.scopes = budget_scopes(scopes)
        self.base_usd = base_usd
        self.extra: list[Reservation] = []
        self.extra_usd = 0.0

    def rebase(self, base_usd: float) -> None:
        """The current call's own reservation now holds ``base_usd`` (a tool-loop step's)."""
        self.base_usd = base_usd

    async def fit(self, request: Request, dep: Deployment) -> None:
        """Hold what the rebuilt ``request`` may cost on ``dep`` beyond what is held already.
        Raises :class:`gateway.errors.BudgetExceeded`, :class:`gateway.errors.LimitsUnavailable`
        (fail closed)."""
        if not self.scopes:
            return
        cost = worst_case([dep], request, session_bound=False)
        if cost is None:  # unpriced: admitted only where no budget is hard
            return
        need = cost - self.base_usd - self.extra_usd
        if need <= 0:
            return

        counted = [cost]  # the call's worst case, with the input counted exactly once recounted

        def recount() -> float:  # asked when the cheap bound does not fit
            exact = worst_case([dep], request, session_bound=False, exact=True)
            if exact is not None and exact < counted[0]:
                counted[0] = exact
            return max(counted[0] - self.base_usd - self.extra_usd, 0.0)

        try:
            self.extra.append(await self.admitter.admit(self.scopes, need, recount))
            need = self.admitter.last_cost_usd
        except BudgetBusy as busy:
            cost = counted[0]
            if busy.spent_usd + cost <= busy.limit_usd:
                raise  # others' turns in flight hold the room: worth a retry
            # only this call's own reservation was in the way: the budget is spent for it
            raise BudgetExceeded(
                busy.message.replace("budget busy", "budget exceeded", 1).split("; retry after")[0]
                + f"; with its session history this call may cost up to ${cost:.6g}",
                scope=busy.scope,
                period=busy.period,
                limit_usd=busy.limit_usd,
                reset_at=busy.reset_at,
                retry_after_s=None,
                headers={"x-should-retry": "false"},
            ) from None
        self.extra_usd += need

    async def release(self) -> None:
        """Give back what :meth:`fit` held (never raises for a counter problem)."""
        extra, self.extra, self.extra_usd = self.extra, [], 0.0
        for hold in extra:
            await self.admitter.limits.release(hold)
