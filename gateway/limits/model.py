"""What is limited, and for whom: budgets, rate limits and the scopes that carry them.

These are plain frozen dataclasses, independent of where keys and teams are stored. The access
layer's pydantic models (``Budget``: ``period``, ``usd``, ``hard``; ``RateLimits``: ``rpm``,
``tpm``, ``concurrent``) adapt with :meth:`BudgetLimit.of` and :meth:`RateLimit.of`, which read
those attributes from any object.

Money is counted in integer nano-dollars (1 USD = 10**9) inside the counters, so spend and
reservations add exactly and "spend + reservations <= limit" is an exact comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from gateway.limits.periods import PERIODS, Period

NANO = 1_000_000_000
"""Nano-dollars per USD."""

ScopeKind = Literal["key", "team", "deployment"]


def usd_to_nano(usd: float, *, up: bool = False) -> int:
    """``usd`` in integer nano-dollars; ``up`` rounds a fraction of a nano-dollar up (for
    limits a reservation must not undershoot), else to the nearest. Negative values are 0."""
    if usd <= 0:
        return 0
    scaled = usd * NANO
    return math.ceil(scaled - 1e-6) if up else round(scaled)


def nano_to_usd(nano: int) -> float:
    """Integer nano-dollars as USD."""
    return nano / NANO


@dataclass(frozen=True, slots=True)
class BudgetLimit:
    """A spend cap in USD per ``period``. ``hard``: a turn whose worst-case cost would take
    spend + reservations past ``usd`` is refused; soft: it is admitted and an alert reported."""

    period: Period
    usd: float
    hard: bool = True

    def __post_init__(self) -> None:
        if self.period not in PERIODS:
            raise ValueError(f"budget period {self.period!r}: expected one of {', '.join(PERIODS)}")
        if not self.usd >= 0:
            raise ValueError(f"budget usd {self.usd!r}: expected a number >= 0")

    @property
    def nano(self) -> int:
        """The cap in nano-dollars."""
        return usd_to_nano(self.usd)

    @classmethod
    def of(cls, obj: Any) -> BudgetLimit:
        """From any object (or mapping) with ``period``, ``usd`` and ``hard``."""
        get: Any = obj.get if isinstance(obj, dict) else lambda k, d=None: getattr(obj, k, d)
        return cls(period=get("period"), usd=float(get("usd")), hard=bool(get("hard", True)))


@dataclass(frozen=True, slots=True)
class RateLimit:
    """Per-minute and concurrency limits; None: that dimension is not limited.

    * ``rpm``: turns admitted per sliding 60 s window.
    * ``tpm``: tokens (input + output, counted when a turn settles) per sliding 60 s window;
      a turn is admitted while the window's count is below it.
    * ``concurrent``: turns admitted and not yet settled or released.
    """

    rpm: int | None = None
    tpm: int | None = None
    concurrent: int | None = None

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm", "concurrent"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"rate limit {name} {value!r}: expected an integer >= 0 or None")

    @classmethod
    def of(cls, obj: Any) -> RateLimit:
        """From any object (or mapping) with ``rpm``, ``tpm`` and ``concurrent``."""
        get: Any = obj.get if isinstance(obj, dict) else lambda k, d=None: getattr(obj, k, d)
        return cls(rpm=get("rpm"), tpm=get("tpm"), concurrent=get("concurrent"))


@dataclass(frozen=True, slots=True)
class Scope:
    """One holder of limits for a turn: a virtual key, a team or a deployment.

    ``id`` is the key's id, the team's id or the deployment's name; ``budgets`` and ``rates``
    are what it is held to, at most one budget per period (ValueError otherwise). Counters are
    per ``(kind, id)``: :attr:`name`."""

    kind: ScopeKind
    id: str
    budgets: tuple[BudgetLimit, ...] = ()
    rates: RateLimit | None = None

    @classmethod
    def of(cls, kind: ScopeKind, id: str, budgets: Any = (), rates: Any = None) -> Scope:
        """From the access layer's records: ``budgets`` any iterable of objects or mappings
        with ``period``/``usd``/``hard``, ``rates`` one with ``rpm``/``tpm``/``concurrent``
        (None: no rate limits)."""
        return cls(
            kind,
            id,
            tuple(BudgetLimit.of(b) for b in budgets or ()),
            None if rates is None else RateLimit.of(rates),
        )

    def __post_init__(self) -> None:
        periods = [b.period for b in self.budgets]
        if len(set(periods)) != len(periods):
            raise ValueError(f"scope {self.kind}:{self.id}: at most one budget per period (got {periods})")

    @property
    def name(self) -> str:
        """``kind:id``, the scope's counter name (e.g. ``key:k_12``, ``deployment:gpt-4o``)."""
        return f"{self.kind}:{self.id}"

    @property
    def limited(self) -> bool:
        """Whether anything limits this scope (a scope with nothing is skipped)."""
        r = self.rates
        return bool(self.budgets) or (
            r is not None and (r.rpm is not None or r.tpm is not None or r.concurrent is not None)
        )
