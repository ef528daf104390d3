"""The one interface of the limit counters, which the limits layer calls once per turn, and
the spend source both backends are seeded from.

A turn's life, for a backend ``lim`` (in-process :class:`gateway.limits.memory.MemoryLimits`
or shared :class:`gateway.limits.redis_backend.RedisLimits`):

```python
res = await lim.admit(scopes, cost_usd)        # raises BudgetExceeded / RateLimitExceeded /
                                                #        LimitsUnavailable (fail closed)
try:
    answer = await inner(...)
except BaseException:
    await lim.release(res)                      # nothing spent: the reservation is given back
    raise
await lim.settle(res, cost_usd=answer_cost, tokens=input + output)
```

``scopes`` are the turn's key, team and chosen deployment (:class:`gateway.limits.model.Scope`;
unlimited ones are skipped); ``cost_usd`` is the worst case
(:func:`gateway.limits.cost.worst_case_usd`). Admission is all-or-nothing over every scope:
budgets (spend + reservations + cost <= limit for every hard budget), requests/min, tokens/min
and concurrent turns. ``settle`` and ``release`` are idempotent per reservation and never raise
for a counter problem (a turn that ran is not failed afterwards).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from gateway.limits.decisions import Reservation
from gateway.limits.model import Scope
from gateway.limits.periods import Period

SpendSource = Callable[[str, Period, float, "float | None"], Awaitable[float]]
"""``await spend(scope_name, period, start_s, reset_s) -> usd``: what ``scope_name``
(``key:<id>``…) spent in the window ``[start_s, reset_s)`` (epoch seconds; ``reset_s`` None for
``total``), from the spend ledger. Called when a counter for a window is first needed: at
start (in-process), or when its Redis key is missing (expired, evicted, Redis restarted)."""

Clock = Callable[[], float]
"""Epoch seconds now (``time.time``; tests inject their own)."""


def ms_now(clock: Clock) -> float:
    """``clock()`` truncated to the millisecond: both backends decide on the same instant
    (Redis scripts take integer milliseconds)."""
    return math.floor(clock() * 1000) / 1000


async def no_spend(scope: str, period: Period, start_s: float, reset_s: float | None) -> float:
    """The spend source of a gateway without a ledger: nothing spent before this process."""
    return 0.0


class Limits(Protocol):
    """The limit counters of every scope (see the module docstring for the turn's protocol)."""

    async def admit(self, scopes: Sequence[Scope], cost_usd: float) -> Reservation:
        """Reserve ``cost_usd`` on every budget of ``scopes``, count one request, take one
        concurrent slot per limited scope — or refuse the turn with nothing taken. ``scopes``
        have distinct names (a scope listed twice is counted twice).

        Raises :class:`gateway.errors.BudgetExceeded` (a hard budget),
        :class:`gateway.errors.RateLimitExceeded` (rpm, tpm, concurrent) or
        :class:`gateway.errors.LimitsUnavailable` (shared counters unreachable, fail closed)."""
        ...

    async def settle(self, reservation: Reservation, cost_usd: float | None, tokens: int) -> None:
        """The turn ended having cost ``cost_usd`` (None: unknown, the reservation is charged)
        and used ``tokens`` (input + output, added to tokens/min now): the reservation is
        replaced by the actual spend and the concurrent slots freed. Idempotent."""
        ...

    async def release(self, reservation: Reservation) -> None:
        """The turn failed before spending anything: the reservation and slots are given back
        (its request stays counted in requests/min). Idempotent."""
        ...

    async def would_admit(self, scope: Scope) -> bool:
        """Whether ``scope``'s rate limits (rpm, tpm, concurrent) would admit a turn now,
        without taking anything: the router's capacity check for a deployment."""
        ...

    async def aclose(self) -> None:
        """Release connections (the in-process backend has none)."""
        ...
