"""Budget periods: the calendar window a spend counter covers, in a configured time zone.

A budget's period is ``day``, ``week`` (ISO weeks: Monday 00:00 to the next Monday 00:00),
``month`` (the 1st 00:00 to the next 1st 00:00) or ``total`` (never resets). Windows are
computed on the local wall clock of an IANA zone (``zoneinfo``) and are DST-correct: a day on
which the clocks change is 23 or 25 hours long, and a local midnight that does not exist (a
zone whose DST gap starts at 00:00) starts at the instant the gap ends.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Literal, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gateway.errors import ConfigError

Period = Literal["day", "week", "month", "total"]
"""How often a budget's spend starts again from zero."""

PERIODS: tuple[Period, ...] = get_args(Period)

TOTAL_START = datetime(1970, 1, 1, tzinfo=UTC)
"""The start of the ``total`` period (it has no reset)."""


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (e.g. ``Europe/Berlin``, ``UTC``).

    Raises :class:`gateway.errors.ConfigError` naming it when the zone is unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ConfigError(f"limits.timezone: unknown IANA time zone {name!r}") from err


def _local_midnight(day: date, tz: ZoneInfo) -> datetime:
    """The first instant of local calendar day ``day`` in ``tz`` (aware, in ``tz``).

    A wall-clock midnight inside a DST gap does not exist; PEP 495 resolves it (fold=0) with
    the offset before the gap, which lands on the instant the gap ends — the day's true start.
    The round trip through a timestamp normalises that to the wall clock after the gap."""
    naive_start = datetime(day.year, day.month, day.day, tzinfo=tz)
    return datetime.fromtimestamp(naive_start.timestamp(), tz)


def period_window(now: datetime, period: Period, tz: ZoneInfo | str) -> tuple[datetime, datetime | None]:
    """The window of ``period`` holding instant ``now``: ``(start, reset_at)``.

    ``now`` must be timezone-aware (any zone); ``tz`` is the zone whose calendar the periods
    follow (a :class:`ZoneInfo` or its IANA name). ``start`` is inclusive and ``reset_at``
    exclusive, both aware datetimes in ``tz``; ``reset_at`` is None for ``total`` (whose
    ``start`` is :data:`TOTAL_START`). Raises ValueError for a naive ``now`` or an unknown
    period, :class:`ConfigError` for an unknown zone name.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("period_window: now must be timezone-aware")
    if period == "total":
        return TOTAL_START, None
    zi = zone(tz) if isinstance(tz, str) else tz
    local = now.astimezone(zi).date()
    if period == "day":
        first, nxt = local, local + timedelta(days=1)
    elif period == "week":
        first = local - timedelta(days=local.weekday())
        nxt = first + timedelta(days=7)
    elif period == "month":
        first = local.replace(day=1)
        nxt = date(first.year + 1, 1, 1) if first.month == 12 else date(first.year, first.month + 1, 1)
    else:
        raise ValueError(f"unknown budget period {period!r} (expected one of {', '.join(PERIODS)})")
    return _local_midnight(first, zi), _local_midnight(nxt, zi)


class WindowCache:
    """:func:`period_window` in epoch seconds, remembered while ``now`` stays inside it.

    ``window(now_s, period) -> (start_s, reset_s | None)``; one dict lookup and two
    comparisons on the hot path, a calendar computation once per period rollover."""

    __slots__ = ("_cache", "tz")

    def __init__(self, tz: ZoneInfo | str) -> None:
        self.tz = zone(tz) if isinstance(tz, str) else tz
        self._cache: dict[Period, tuple[float, float | None]] = {}

    def window(self, now_s: float, period: Period) -> tuple[float, float | None]:
        """``(start, reset_at)`` of ``period`` at epoch second ``now_s``, as epoch seconds."""
        hit = self._cache.get(period)
        if hit is not None and hit[0] <= now_s and (hit[1] is None or now_s < hit[1]):
            return hit
        start, reset = period_window(datetime.fromtimestamp(now_s, UTC), period, self.tz)
        fresh = (start.timestamp(), None if reset is None else reset.timestamp())
        self._cache[period] = fresh
        return fresh
