"""The in-process limit counters: the embedded default (one gateway process).

Every decision runs synchronously between two awaits, so concurrent asyncio tasks see each
admission as atomic without a lock: the only await in :meth:`MemoryLimits.admit` is the spend
source seeding a counter seen for the first time, and it comes before the check-and-reserve.
Hard budgets therefore hold exactly under any number of concurrent turns (spend +
reservations never pass the limit, in integer nano-dollars).

Reservations and concurrent slots carry a deadline (``lease_ttl_s``) as in Redis, so a
reservation that is never settled (a bug, a task that was cancelled without ``release``) stops
holding budget and a slot after it.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.errors import BudgetBusy, LimitExceeded
from gateway.limits.backend import Clock, SpendSource, ms_now, no_spend
from gateway.limits.decisions import (
    Reservation,
    SoftAlert,
    WindowState,
    budget_denial,
    rate_denial,
    rate_headers,
    tighter,
)
from gateway.limits.model import Scope, nano_to_usd, usd_to_nano
from gateway.limits.periods import Period, WindowCache
from gateway.limits.window import SPAN_S, SlidingWindow

BudgetKey = tuple[str, Period, float]
"""(scope name, period, window start in epoch seconds)."""


@dataclass(slots=True)
class _Budget:
    """One scope's spend in one period window (nano-dollars) and the turns holding part of it
    (reservation id -> (amount, deadline), in deadline order)."""

    spent: int
    reserved: int = 0
    holds: dict[str, tuple[int, float]] = field(default_factory=dict)

    def sweep(self, now_s: float) -> None:
        holds = self.holds
        while holds:
            rid = next(iter(holds))
            amount, deadline = holds[rid]
            if deadline > now_s:
                return
            del holds[rid]
            self.reserved -= amount


@dataclass(slots=True)
class _Plan:
    budgets: list[BudgetKey]
    tpm: list[str]
    leases: list[str]


def _sweep_leases(leases: dict[str, float], now_s: float) -> None:
    while leases:
        rid = next(iter(leases))
        if leases[rid] > now_s:
            return
        del leases[rid]


class MemoryLimits:
    """:class:`gateway.limits.backend.Limits` in this process's memory.

    ``timezone``: the IANA zone of budget periods (``limits.timezone``); ``spend``: the seed of
    each budget window's spend (:data:`gateway.limits.backend.SpendSource`); ``clock``: epoch
    seconds; ``lease_ttl_s``: how long an unsettled reservation and its concurrent slots hold.
    """

    def __init__(
        self,
        *,
        timezone: str = "UTC",
        spend: SpendSource = no_spend,
        clock: Clock = time.time,
        lease_ttl_s: float = 960.0,
    ) -> None:
        self.windows = WindowCache(timezone)
        self.spend = spend
        self.clock = clock
        self.lease_ttl_s = lease_ttl_s
        self._budgets: dict[BudgetKey, _Budget] = {}
        self._current: dict[tuple[str, Period], float] = {}
        self._rates: dict[tuple[str, str], SlidingWindow] = {}
        self._leases: dict[str, dict[str, float]] = {}
        self._ids = itertools.count(1)

    # ---------------------------------------------------------------- counters

    def _window(self, name: str, dim: str) -> SlidingWindow:
        w = self._rates.get((name, dim))
        if w is None:
            w = self._rates[(name, dim)] = SlidingWindow()
        return w

    async def _seed(self, key: BudgetKey, reset_s: float | None) -> None:
        """Create the counter of ``key`` from the spend source (the one await of admission)."""
        name, period, start = key
        usd = await self.spend(name, period, start, reset_s)
        if key in self._budgets:  # another task seeded it meanwhile
            return
        self._budgets[key] = _Budget(spent=usd_to_nano(usd))
        old = self._current.get((name, period))
        if old is not None and old < start:
            self._budgets.pop((name, period, old), None)  # a past period: late settles are dropped
        self._current[(name, period)] = start

    # ---------------------------------------------------------------- admission

    async def admit(self, scopes: Sequence[Scope], cost_usd: float) -> Reservation:
        """See :meth:`gateway.limits.backend.Limits.admit`."""
        now = ms_now(self.clock)
        budgets = self._budgets
        for scope in scopes:
            for b in scope.budgets:
                start, reset = self.windows.window(now, b.period)
                key = (scope.name, b.period, start)
                if key not in budgets:
                    await self._seed(key, reset)
        now = ms_now(self.clock)  # the seeding may have awaited; from here on nothing does
        return self._decide(scopes, usd_to_nano(cost_usd, up=True), now)

    def _decide(self, scopes: Sequence[Scope], cost: int, now: float) -> Reservation:
        budgets = self._budgets
        plan = _Plan([], [], [])
        alerts: list[SoftAlert] = []
        budget_den: LimitExceeded | None = None
        rate_den: LimitExceeded | None = None
        req_state: WindowState | None = None
        tok_state: WindowState | None = None
        windows: list[SlidingWindow] = []
        for scope in scopes:
            name = scope.name
            for b in scope.budgets:
                start, reset = self.windows.window(now, b.period)
                key = (name, b.period, start)
                counter = budgets.get(key)
                if counter is None:  # the window rolled over while seeding: start it empty
                    counter = budgets[key] = _Budget(spent=0)
                counter.sweep(now)
                limit = b.nano
                if counter.spent + counter.reserved + cost > limit:
                    if b.hard:
                        if budget_den is None or (  # a budget spent wins over one only busy
                            isinstance(budget_den, BudgetBusy) and counter.spent + cost > limit
                        ):
                            budget_den = budget_denial(
                                scope=name,
                                period=b.period,
                                limit_nano=limit,
                                spent_nano=counter.spent,
                                reserved_nano=counter.reserved,
                                cost_nano=cost,
                                reset_s=reset,
                                now_s=now,
                            )
                        continue
                    alerts.append(
                        SoftAlert(
                            name,
                            b.period,
                            b.usd,
                            nano_to_usd(counter.spent),
                            nano_to_usd(counter.reserved),
                            nano_to_usd(cost),
                        )
                    )
                plan.budgets.append(key)
            r = scope.rates
            if r is None:
                continue
            if r.rpm is not None:
                w = self._window(name, "rpm")
                w.sweep(now)
                retry = w.retry_in(now, 1, r.rpm)
                if retry > 0:
                    rate_den = rate_den or rate_denial(
                        scope=name,
                        dimension="requests",
                        limit=r.rpm,
                        used=w.total,
                        retry_s=retry,
                        state=WindowState(r.rpm, max(r.rpm - w.total, 0), w.reset_in(now)),
                        now_s=now,
                    )
                else:
                    windows.append(w)
                    after = WindowState(r.rpm, r.rpm - w.total - 1, math.floor(now) + SPAN_S - now)
                    req_state = tighter(req_state, after)
            if r.tpm is not None:
                w = self._window(name, "tpm")
                w.sweep(now)
                retry = w.retry_in(now, 1, r.tpm)
                state = WindowState(r.tpm, max(r.tpm - w.total, 0), w.reset_in(now))
                if retry > 0:
                    rate_den = rate_den or rate_denial(
                        scope=name,
                        dimension="tokens",
                        limit=r.tpm,
                        used=w.total,
                        retry_s=retry,
                        state=state,
                        now_s=now,
                    )
                else:
                    plan.tpm.append(name)
                    tok_state = tighter(tok_state, state)
            if r.concurrent is not None:
                leases = self._leases.get(name)
                if leases is None:
                    leases = self._leases[name] = {}
                _sweep_leases(leases, now)
                if len(leases) >= r.concurrent:
                    rate_den = rate_den or rate_denial(
                        scope=name,
                        dimension="concurrent",
                        limit=r.concurrent,
                        used=len(leases),
                        retry_s=1.0 if r.concurrent else float("inf"),
                        state=None,
                        now_s=now,
                    )
                else:
                    plan.leases.append(name)
        if budget_den is not None:
            raise budget_den
        if rate_den is not None:
            raise rate_den
        rid = f"m{next(self._ids)}"
        deadline = now + self.lease_ttl_s
        for key in plan.budgets:
            counter = budgets[key]
            counter.reserved += cost
            counter.holds[rid] = (cost, deadline)
        for w in windows:
            w.add(now, 1)
        for name in plan.leases:
            self._leases[name][rid] = deadline
        return Reservation(
            id=rid,
            cost_nano=cost,
            alerts=tuple(alerts),
            headers=rate_headers(req_state, tok_state, now) if req_state or tok_state else {},
            plan=plan,
        )

    # ---------------------------------------------------------------- end of a turn

    async def settle(self, reservation: Reservation, cost_usd: float | None, tokens: int) -> None:
        """See :meth:`gateway.limits.backend.Limits.settle`."""
        self._finish(
            reservation, reservation.cost_nano if cost_usd is None else usd_to_nano(cost_usd), tokens
        )

    async def release(self, reservation: Reservation) -> None:
        """See :meth:`gateway.limits.backend.Limits.release`."""
        self._finish(reservation, 0, 0)

    def _finish(self, reservation: Reservation, actual: int, tokens: int) -> None:
        plan = reservation.plan
        if reservation.done or not isinstance(plan, _Plan):
            return
        reservation.done = True
        rid = reservation.id
        now = ms_now(self.clock)
        for key in plan.budgets:
            counter = self._budgets.get(key)
            if counter is None:
                continue  # a past window, dropped at rollover
            held = counter.holds.pop(rid, None)
            if held is not None:
                counter.reserved -= held[0]
            counter.spent += actual
        for name in plan.tpm:
            self._window(name, "tpm").add(now, tokens)
        for name in plan.leases:
            self._leases[name].pop(rid, None)

    # ---------------------------------------------------------------- capacity

    async def would_admit(self, scope: Scope) -> bool:
        """See :meth:`gateway.limits.backend.Limits.would_admit`."""
        r = scope.rates
        if r is None:
            return True
        now = ms_now(self.clock)
        name = scope.name
        for dim, limit in (("rpm", r.rpm), ("tpm", r.tpm)):
            if limit is not None:
                w = self._window(name, dim)
                w.sweep(now)
                if w.total + 1 > limit:
                    return False
        if r.concurrent is not None:
            leases = self._leases.get(name, {})
            _sweep_leases(leases, now)
            if len(leases) >= r.concurrent:
                return False
        return True

    def spent_usd(self, scope: str, period: Period) -> tuple[float, float]:
        """``(spent, reserved)`` USD of ``scope``'s current ``period`` window (0 if unseen):
        for tests and the admin surface."""
        start, _ = self.windows.window(self.clock(), period)
        c = self._budgets.get((scope, period, start))
        return (0.0, 0.0) if c is None else (nano_to_usd(c.spent), nano_to_usd(c.reserved))

    async def aclose(self) -> None:
        """Nothing to close."""
